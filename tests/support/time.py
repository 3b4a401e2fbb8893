"""Time under the tests' control: a clock the test moves by hand, and waiting on a state.

A server (``new_server(..., clock=clock)``) or an SDK client (``SpadesClient(...,
sleep=clock.sleep)``) given a :class:`ManualClock` reads every time from it and sleeps on it:
the turn clock, the sweepers (unclaimed seats, absent players, challenge expiry, tournaments),
the house's fill delays, sessions, rate limits, the lobby's checkpoints, the presence
heartbeat, each stream's write watchdog (a :meth:`ManualClock.call_later` timer), the log's
event times, its retries and its polls. Nothing it waits for happens until the test calls
:meth:`ManualClock.advance`, so a test of a 30-second timeout moves the clock 30 s instead of
waiting them, and a test that "nothing happens for 30 s" advances 30 s and waits until the
process that would act has gone round and slept again (:meth:`ManualClock.sleeping`): it
looked, and did nothing.

The only real waits of the tests live here (and in the other ``tests/support`` modules): a
state polled (:func:`wait_for_state`), a sleeper awaited, both bounded so that a broken test
fails instead of hanging. ``tests/structure/test_no_bare_sleeps.py`` keeps it so.
"""

from __future__ import annotations

import asyncio
import heapq
import inspect
import itertools
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar, overload

from spades.client.client import Channel

T = TypeVar("T")

#: Seconds of real time a wait here allows before it fails the test.
WAIT_LIMIT = 30.0
#: Seconds of real time between two looks at a polled state.
POLL_INTERVAL = 0.005

#: The names of the server's tasks that sleep on its clock, for :meth:`ManualClock.sleeping`.
TURN_CLOCK = "turn-clock"
UNCLAIMED_SEATS = "unclaimed-seats"
ABSENT_PLAYERS = "absent-players"
CHALLENGE_SWEEPER = "challenge-sweeper"
TOURNAMENT_DRIVER = "tournament-driver"
#: The PostgreSQL log's order tracker, between two periodic re-reads, and its listener before
#: it reconnects (both on ``EventLog.sleep``).
ORDER_TRACKER = "eventlog-track"
LOG_LISTENER = "eventlog-listen"


class ManualClock:
    """A :class:`spades_server.ops.clocks.Clock` that stands still until :meth:`advance` moves
    it. Its wall time starts at the machine's (tokens and logs stay plausible), its monotonic
    time at 0; a sleep returns when the clock has been moved past its end.

    >>> clock = ManualClock(start=1_000.0)
    >>> clock.advance(30)
    >>> clock.now(), clock.monotonic()
    (1030.0, 30.0)
    """

    def __init__(self, start: float | None = None) -> None:
        self._wall = time.time() if start is None else start
        self._monotonic = 0.0
        #: (end on the monotonic clock, order of arrival, the sleeper's future, its task's name)
        self._sleepers: list[tuple[float, int, asyncio.Future[None], str]] = []
        self._arrivals = itertools.count()
        self._slept: asyncio.Event | None = None
        #: (end on the monotonic clock, order of arrival, the timer) of call_later's timers
        self._timers: list[tuple[float, int, _ManualTimer]] = []

    def now(self) -> float:
        return self._wall

    def monotonic(self) -> float:
        return self._monotonic

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)  # a real sleep(0) yields; so does this one
            return
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        wake: asyncio.Future[None] = loop.create_future()
        name = task.get_name() if task is not None else ""
        heapq.heappush(
            self._sleepers, (self._monotonic + seconds, next(self._arrivals), wake, name)
        )
        if self._slept is not None:
            self._slept.set()
        try:
            await wake
        finally:
            if not wake.done():
                wake.cancel()  # cancelled: no longer a sleeper (see sleepers_named)

    def advance(self, seconds: float) -> None:
        """Move the clock ``seconds`` on and wake every sleep that ends by then (they run at
        the event loop's next turns; wait on what they do, or on :meth:`sleeping`)."""
        assert seconds >= 0, "a clock does not go back"
        self._wall += seconds
        self._monotonic += seconds
        while self._sleepers and self._sleepers[0][0] <= self._monotonic:
            _, _, wake, _ = heapq.heappop(self._sleepers)
            if not wake.done():
                wake.set_result(None)
        while self._timers and self._timers[0][0] <= self._monotonic:
            _, _, timer = heapq.heappop(self._timers)
            timer.due()

    def call_later(self, seconds: float, callback: Callable[[], object]) -> _ManualTimer:
        """Run ``callback`` on the event loop once the clock was moved ``seconds`` on."""
        timer = _ManualTimer(asyncio.get_running_loop(), callback)
        heapq.heappush(self._timers, (self._monotonic + seconds, next(self._arrivals), timer))
        return timer

    def timers(self) -> int:
        """How many call_later timers wait for the clock (not cancelled)."""
        return sum(1 for _, _, timer in self._timers if not (timer.cancelled or timer.fired))

    def sleepers_named(self, name: str | None = None) -> int:
        """How many sleeps are waiting for the clock (of tasks named ``name``, if given)."""
        return sum(
            1
            for _, _, wake, task_name in self._sleepers
            if not wake.done() and (name is None or task_name == name)
        )

    async def sleeping(self, name: str | None = None, count: int = 1) -> None:
        """Return once ``count`` sleeps (of tasks named ``name``, e.g. :data:`UNCLAIMED_SEATS`)
        wait for the clock: after :meth:`advance`, the processes it woke have done their round
        and sleep again. Fails after :data:`WAIT_LIMIT` real seconds."""
        if self._slept is None:
            self._slept = asyncio.Event()
        try:
            async with asyncio.timeout(WAIT_LIMIT):
                while self.sleepers_named(name) < count:
                    self._slept.clear()
                    await self._slept.wait()
        except TimeoutError:
            raise AssertionError(
                f"{self.sleepers_named(name)} of {count} sleeps of {name or 'any task'} "
                f"waited for the clock within {WAIT_LIMIT} s"
            ) from None

    async def pass_time(self, seconds: float, name: str, count: int = 1) -> None:
        """Advance ``seconds`` and return once ``count`` tasks named ``name`` slept again:
        whatever they do at that time, they have done."""
        await self.sleeping(name, count)
        self.advance(seconds)
        await self.sleeping(name, count)


class _ManualTimer:
    """A :meth:`ManualClock.call_later` timer: its callback runs at the event loop's next turn
    once the clock reaches its end, unless cancelled first."""

    def __init__(self, loop: asyncio.AbstractEventLoop, callback: Callable[[], object]) -> None:
        self._loop = loop
        self._callback = callback
        self.cancelled = False
        self.fired = False

    def cancel(self) -> None:
        self.cancelled = True

    def due(self) -> None:
        self.fired = True
        self._loop.call_soon(self._run)

    def _run(self) -> None:
        if not self.cancelled:  # (cancelled between its end and this turn, as asyncio's)
            self._callback()


@overload
async def wait_for_state(
    check: Callable[[], Awaitable[T]], what: str, timeout: float = WAIT_LIMIT
) -> T: ...


@overload
async def wait_for_state(check: Callable[[], T], what: str, timeout: float = WAIT_LIMIT) -> T: ...


async def wait_for_state(
    check: Callable[[], T | Awaitable[T]], what: str, timeout: float = WAIT_LIMIT
) -> T:
    """Look at ``check()`` (a function or a coroutine function) until it returns something true,
    and return that; fails the test, saying ``what`` it waited for, after ``timeout`` real
    seconds."""
    try:
        async with asyncio.timeout(timeout):
            while True:
                value = check()
                if inspect.isawaitable(value):
                    value = await value
                if value:
                    return value
                await asyncio.sleep(POLL_INTERVAL)
    except TimeoutError:
        raise AssertionError(f"not within {timeout} s: {what}") from None


def connected(client: Channel) -> Callable[[], Awaitable[bool]]:
    """A check for :func:`wait_for_state`: whether ``client``'s channel reaches its server now
    (a channel that failed to connect tries again on gRPC's own back-off, in real time)."""

    async def check() -> bool:
        return await client.connection_problem() is None

    return check
