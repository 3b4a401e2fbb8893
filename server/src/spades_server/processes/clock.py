"""The turn clock: when a turn's time runs out, append the timeout and the automatic action.

A deadline is never kept only in memory: it follows from the log. A turn starts at the time
of the event that made it (the latest event, or the one before an ExtensionClaimed), and lasts
the table's ``turn_millis``, plus ``extension_millis`` once the seat has claimed its extension.
So after a restart, or on any replica, the same deadline comes out. Firing appends with the
expected version of the table the deadline was computed for, so a timeout happens exactly
once however many processes race to make it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import heapq
import weakref

import grpc
import structlog

from spades import protocol
from spades.engine import Phase
from spades.v1 import play_pb2
from spades_server.domain import errors
from spades_server.domain.decisions import decide_timeout
from spades_server.domain.tables import Table, timestamp
from spades_server.ops.clocks import SYSTEM_CLOCK, Clock, sleep_unless
from spades_server.ops.tasks import stop_tasks
from spades_server.store.table_store import TableStore

log = structlog.get_logger(__name__)
#: Seconds before a timeout the log could not write is tried again.
RETRY_AFTER = 1.0


#: (version, deadline) of each table's turn at that version, by the id of the table object
#: its store holds: the clock, the turn every stream shows and each seat's prompt ask for it at
#: every version. A table the store lets go takes its entry with it (:func:`weakref.finalize`).
_DEADLINES: dict[int, tuple[int, float | None]] = {}


def deadline_of(table: Table) -> float | None:
    """When the current turn's time runs out (unix seconds), or None when no one is to act."""
    key = id(table)
    memo = _DEADLINES.get(key)
    if memo is not None and memo[0] == table.version:
        return memo[1]
    if memo is None:
        weakref.finalize(table, _DEADLINES.pop, key, None)
    deadline = _deadline(table)
    _DEADLINES[key] = (table.version, deadline)
    return deadline


def _deadline(table: Table) -> float | None:
    state = table.state
    entries = table.entries
    if state.turn is None or state.phase is Phase.ENDED or not entries:
        return None
    clock = state.rules.clock
    allowed = clock.turn_millis / 1000
    started = entries[-1]
    if state.extension_claimed and len(entries) >= 2:
        started = entries[-2]
        allowed += clock.extension_millis / 1000
    # The stored time, at the precision a stream's prompt shows it (whole nanoseconds).
    time = started.message.time
    return (time.seconds * 1_000_000_000 + time.nanos) / 1e9 + allowed


def turn_of(table: Table) -> play_pb2.Turn | None:
    """Whose turn it is at the table's latest sequence and when its time runs out, as every
    viewer may know it (the deadline follows from the log); None when no one is to act."""
    deadline = deadline_of(table)
    turn = table.state.turn
    if deadline is None or turn is None:
        return None
    return play_pb2.Turn(seat=protocol.seat_to_proto(turn), deadline=timestamp(deadline))


class TurnClock:
    """Keeps every active table's deadline and fires the ones that pass."""

    def __init__(self, store: TableStore, clock: Clock = SYSTEM_CLOCK) -> None:
        self._store = store
        self._clock = clock
        self._heap: list[tuple[float, str, int]] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        store.listeners.append(self.schedule)

    def schedule(self, table: Table) -> None:
        """Note the table's current deadline (a table that moved on makes older entries stale)."""
        deadline = deadline_of(table)
        if deadline is None:
            return
        heapq.heappush(self._heap, (deadline, table.table_id, table.version))
        if self._heap[0][2] == table.version and self._heap[0][1] == table.table_id:
            self._wake.set()

    async def start(self, active_table_ids: list[str]) -> None:
        """Load the tables in play (deadlines come from their logs) and start firing."""
        for table_id in active_table_ids:
            with contextlib.suppress(errors.RequestError):
                self.schedule(await self._store.load(table_id))
        self._task = asyncio.create_task(self._run(), name="turn-clock")

    async def stop(self) -> None:
        await stop_tasks(self._task)

    async def _run(self) -> None:
        while True:
            self._wake.clear()
            if not self._heap:
                await self._wake.wait()
                continue
            deadline, table_id, version = self._heap[0]
            delay = deadline - self._clock.now()
            if delay > 0:
                await sleep_unless(self._clock, self._wake, delay)
                continue
            heapq.heappop(self._heap)
            cached = self._store.cached_version(table_id)
            if cached != version and cached != -1:
                continue  # the table moved on; its newer deadline is in the heap
            # (-1: evicted from the cache while idle; the decision loads it and checks)
            try:
                _, stored = await self._store.execute(
                    table_id, functools.partial(decide_timeout, version=version)
                )
            except errors.RequestError as error:
                log.warning("timeout not applied", table_id=table_id, reason=error.reason)
                if error.code is grpc.StatusCode.UNAVAILABLE:  # the log cannot write: retry
                    heapq.heappush(self._heap, (self._clock.now() + RETRY_AFTER, table_id, version))
                continue
            if stored:
                log.info("turn timed out", table_id=table_id, sequence=stored[0].sequence)
