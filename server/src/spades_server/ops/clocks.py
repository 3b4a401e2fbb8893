"""The one clock the server reads time through: the turn clock, the sweepers, sessions, limits.

Every process that waits for a deadline (the turn clock, unclaimed seats, absent players, the
challenge sweeper, the tournament driver, the house's fill delays, the lobby's checkpoints, the
presence heartbeat, a stream's write watchdog) and every use case that compares a time (a
challenge's expiry, a session's, the sign-in rate) asks a :class:`Clock` passed in at wiring
(``app/server.py``), :data:`SYSTEM_CLOCK` unless a test gives its own
(``tests/support/time.py``), which stands still until the test advances it: a test of a
30-second timeout moves the clock 30 s instead of waiting for them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Protocol


class Timer(Protocol):
    """A callback set to run later (``asyncio.TimerHandle`` is one)."""

    def cancel(self) -> None:
        """Do not run the callback (nothing, once it ran)."""
        ...


class Clock(Protocol):
    """Wall time, monotonic time and sleeping, as the server sees them."""

    def now(self) -> float:
        """The wall-clock time in unix seconds (what the log records, what deadlines are in)."""
        ...

    def monotonic(self) -> float:
        """Seconds from an arbitrary origin that never go back (for delays and rates)."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Return once ``seconds`` have passed on this clock."""
        ...

    def call_later(self, seconds: float, callback: Callable[[], object]) -> Timer:
        """Run ``callback`` on the event loop once ``seconds`` have passed on this clock: a
        timer without a task, for a watch kept on every stream (``api/interceptors``)."""
        ...


class SystemClock:
    """The machine's clock: ``time.time``, ``time.monotonic`` and ``asyncio.sleep``."""

    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    def call_later(self, seconds: float, callback: Callable[[], object]) -> Timer:
        return asyncio.get_running_loop().call_later(seconds, callback)


#: The clock a server runs with unless it is given another.
SYSTEM_CLOCK: Clock = SystemClock()


async def sleep_unless(clock: Clock, event: asyncio.Event, seconds: float) -> None:
    """Return when ``event`` is set or ``seconds`` have passed on ``clock``, whichever is first.

    (Two tasks raced with ``asyncio.wait``, not ``wait_for``: on 3.11 ``wait_for`` can lose a
    cancellation that lands as the wait ends, and a process's ``stop()`` would wait forever.)
    """
    if event.is_set():
        return
    current = asyncio.current_task()
    name = current.get_name() if current is not None else None  # the sleep is the caller's
    waiters = [
        asyncio.create_task(event.wait(), name=name),
        asyncio.create_task(clock.sleep(seconds), name=name),
    ]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
        # Wait for them to end without awaiting them one by one under a suppressed
        # CancelledError: that also swallowed a cancellation of this task landing meanwhile
        # (the turn clock's stop() then waited forever); asyncio.wait raises only this task's.
        await asyncio.wait(waiters)
