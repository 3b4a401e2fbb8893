"""The repository's cache of aggregates: least recently used first, bounded, with pins.

An aggregate a stream has open or a command is running on is *pinned* (or busy): it is never
evicted, so every stream and command of one aggregate shares one object. Past the bound
(``size``; None: unbounded) the least recently used of the others leave; one that left is
loaded again from the log exactly as the first time, so the cache changes no answer, only how
much memory history costs.

>>> cache = AggregateCache[str](size=1)
>>> cache.keep("a", "A"); cache.keep("b", "B")
>>> cache.evict(busy=lambda aggregate_id: False), list(cache)
(['a'], ['b'])
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import TypeVar

A = TypeVar("A")


class AggregateCache(OrderedDict[str, A]):
    """Aggregates by id, the least recently used first (a read that finds one calls
    ``move_to_end``), with the ids streams hold pinned."""

    def __init__(self, size: int | None = None) -> None:
        super().__init__()
        #: How many aggregates are kept besides the pinned and busy ones (None: all).
        self.size = size
        #: How many holders (streams) pin each aggregate.
        self._pins: dict[str, int] = {}

    def keep(self, aggregate_id: str, aggregate: A) -> None:
        """Cache the aggregate as the most recently used (evicting is :meth:`evict`'s)."""
        self[aggregate_id] = aggregate
        self.move_to_end(aggregate_id)

    def over(self) -> bool:
        """Whether more aggregates are cached than the bound allows."""
        return self.size is not None and len(self) > self.size

    def evict(self, busy: Callable[[str], bool]) -> list[str]:
        """Drop the least recently used aggregates that are neither pinned nor ``busy`` until
        the cache is within its bound; the ids dropped."""
        evicted: list[str] = []
        if not self.over():
            return evicted
        for aggregate_id in list(self):
            if not self.over():
                break
            if aggregate_id in self._pins or busy(aggregate_id):
                continue
            del self[aggregate_id]
            evicted.append(aggregate_id)
        return evicted

    def pin(self, aggregate_id: str) -> None:
        self._pins[aggregate_id] = self._pins.get(aggregate_id, 0) + 1

    def unpin(self, aggregate_id: str) -> bool:
        """Let one holder go; whether it was the last."""
        left = self._pins.pop(aggregate_id) - 1
        if left > 0:
            self._pins[aggregate_id] = left
            return False
        return True

    def pinned(self, aggregate_id: str) -> bool:
        return aggregate_id in self._pins
