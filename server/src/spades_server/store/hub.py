"""The change hub: who hears that an aggregate changed, and who waits for its next change.

The repository hands every aggregate it folded new rows into to the hub (:meth:`ChangeHub.
publish`): the listeners hear of it first (the rating keeper, the challenge flow, the
tournament driver, the turn clock...), then everyone waiting on that aggregate is woken (a
table's feeds). A waiter looks at what it waits for first, then awaits :meth:`ChangeHub.changed`;
anyone with news for the waiters (a stream's result) may :meth:`ChangeHub.poke` them too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Generic, TypeVar

A = TypeVar("A")


class ChangeHub(Generic[A]):
    """The listeners of one repository's aggregates, and each aggregate's waiters."""

    def __init__(self) -> None:
        #: Called with an aggregate each time new rows were folded into it.
        self.listeners: list[Callable[[A], None]] = []
        self._waiters: dict[str, list[asyncio.Future[None]]] = {}

    def publish(self, aggregate_id: str, aggregate: A) -> None:
        """The aggregate changed: tell the listeners, then wake its waiters."""
        for listener in self.listeners:
            listener(aggregate)
        self.poke(aggregate_id)

    def poke(self, aggregate_id: str) -> None:
        """Wake everyone waiting on the aggregate (it changed, or a stream has news)."""
        waiters = self._waiters.pop(aggregate_id, None)
        if waiters is not None:
            for waiter in waiters:
                if not waiter.done():  # (a waiter cancelled meanwhile)
                    waiter.set_result(None)

    def wake_all(self) -> None:
        """Wake every waiter (on shutdown)."""
        for aggregate_id in list(self._waiters):
            self.poke(aggregate_id)

    def changed(self, aggregate_id: str) -> asyncio.Future[None]:
        """A future done at the aggregate's next :meth:`poke` (its next change, or a stream's
        news). One future per waiter, so cancelling one waiter cancels no other."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiters = self._waiters.get(aggregate_id)
        if waiters is None:
            self._waiters[aggregate_id] = [waiter]
        else:
            waiters.append(waiter)
        return waiter

    def drop(self, aggregate_id: str) -> None:
        """Forget the aggregate's waiters (it left the cache: nothing waits on it)."""
        self._waiters.pop(aggregate_id, None)
