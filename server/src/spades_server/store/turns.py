"""An aggregate's turn: its commands one at a time, in the order they came.

The repository (:mod:`~spades_server.store.repository`) holds an aggregate's turn from deciding
a command until its rows are settled. A turn no command holds is taken at once, with no
coroutine (every action of a table takes one); a busy one is awaited. Each hold has a number,
so it is let go once: by whichever comes first of the command's end (its caller cancelled
mid-append) and the log's commit callback that settled its rows, which lets the next command
decide on them before the first command's caller runs again. Public for its tests.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque


class Turn:
    """One aggregate's commands, one at a time, in the order they came: taken at once when no
    command holds it (no coroutine, the common case), else awaited. Each hold has its number,
    so a hold is let go once: by the command's end or by the commit that settled its rows,
    whichever comes first (a caller cancelled mid-append lets go before its rows settle)."""

    __slots__ = ("_waiters", "busy", "hold")

    def __init__(self) -> None:
        self.busy = False
        #: The number of the current (or last) hold.
        self.hold = 0
        self._waiters: deque[asyncio.Future[int]] = deque()

    def take_now(self) -> int | None:
        """Take the turn if no command holds it: the hold's number; else None."""
        if self.busy:
            return None
        self.busy = True
        self.hold += 1
        return self.hold

    async def take(self) -> int:
        """Wait for the turn (handed over by :meth:`release`): the hold's number."""
        waiter: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            return await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release(waiter.result())  # handed the turn, then cancelled: hand it on
            else:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)
            raise

    def release(self, hold: int) -> None:
        """Let hold number ``hold`` go (nothing if it was let go already): the turn goes to
        the next command still waiting, or is free."""
        if not self.busy or hold != self.hold:
            return
        self.hold += 1
        waiters = self._waiters
        while waiters:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(self.hold)  # still busy: it is that command's now
                return
        self.busy = False

    def in_use(self) -> bool:
        """Whether a command holds the turn or waits for it."""
        return self.busy or bool(self._waiters)
