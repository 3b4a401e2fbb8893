"""Unclaimed seats: a seat taken at a waiting table whose holder never opened a stream is freed.

A join whose reply was lost (the client crashed, or gave up before a retry) leaves a seat held by
a token nobody uses, and the table never fills. So a seat taken at a table that waits for
players is freed again (``SeatLeft``, in the log like a player's own leave) when its holder has
opened no Play or Seat stream for ``timeout`` seconds (``--unclaimed-seat-timeout``) since its
``SeatTaken``. The deadline follows from the log (the SeatTaken's stored time), like the turn
clock's, so a restart computes the same one. The release is appended through
:meth:`TableStore.execute` with the expected version, and its decision
(:func:`~spades_server.domain.decisions.decide_release`) returns nothing once the seat changed
hands or the match started: it happens once, however many sweeps race for it.

Whether a holder opened a stream is kept in the log, as a write-once claim of the table
(``table_events.stream_claim_key``) that the server serving the stream writes before it sends
anything: so every replica on a shared log, and this server after a restart, knows it, and
checks it before it frees a seat. (One race is left: a stream opened on one replica in the
instant another reads the claim at the deadline; the player's stream then sees its seat left.)
"""

from __future__ import annotations

import asyncio
import contextlib

import structlog

from spades.engine import events as ev
from spades.engine import seat_name
from spades_server.domain import errors, table_events
from spades_server.domain.decisions import decide_release
from spades_server.domain.tables import Table
from spades_server.eventlog.base import LogUnavailable
from spades_server.ops.clocks import SYSTEM_CLOCK, Clock
from spades_server.ops.tasks import stop_tasks
from spades_server.store.table_store import TableStore

log = structlog.get_logger(__name__)


class UnclaimedSeats:
    """Frees the seats of waiting tables whose holders never opened a stream."""

    def __init__(
        self, store: TableStore, *, timeout: float = 300.0, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self._store = store
        self._clock = clock
        self.timeout = timeout
        #: (table, seat) -> (deadline in unix seconds, the holder's token digest).
        self._deadlines: dict[tuple[str, int], tuple[float, bytes]] = {}
        #: Table -> (seat, holder digest) of every holder that opened a stream here.
        self._claimed: dict[str, set[tuple[int, bytes]]] = {}
        self._sweeper: asyncio.Task[None] | None = None
        self._running = False
        store.listeners.append(self._on_change)

    @property
    def active(self) -> bool:
        """Whether this server releases seats."""
        return self.timeout > 0

    async def start(self, waiting_table_ids: list[str]) -> None:
        """Load the waiting tables (their deadlines come from their logs) and start sweeping."""
        if not self.active:
            return
        self._running = True
        for table_id in waiting_table_ids:
            with contextlib.suppress(errors.RequestError):
                self._on_change(await self._store.load(table_id))
        self._sweeper = asyncio.create_task(self._sweep(), name="unclaimed-seats")
        log.info("unclaimed seats are freed", after_seconds=self.timeout)

    async def stop(self) -> None:
        self._running = False
        await stop_tasks(self._sweeper)

    async def stream_opened(self, table_id: str, seat: int, holder: bytes) -> None:
        """The seat's own player (token digest ``holder``) opened a stream on this server, at a
        table not started: say so in the log (once), for every replica and the next start."""
        if self.timeout <= 0:
            return
        self._claimed.setdefault(table_id, set()).add((seat, holder))
        self._deadlines.pop((table_id, seat), None)
        try:
            await self._store.log.claim(table_id, table_events.stream_claim_key(seat, holder), b"")
        except LogUnavailable as error:  # the stream works; at worst its seat may be freed
            log.warning("stream's claim not written", table_id=table_id, reason=str(error))

    def _on_change(self, table: Table) -> None:
        if not self._running:
            return
        table_id = table.table_id
        if table.started:
            if self._claimed.pop(table_id, None) is not None or self._deadlines:
                for seat in range(len(table.state.players)):
                    self._deadlines.pop((table_id, seat), None)
            return
        taken_at = _seats_taken_at(table)
        claimed = self._claimed.get(table_id, set())
        for seat in range(len(table.state.players)):
            key = (table_id, seat)
            holder = table.seat_token_digests.get(seat)
            if holder is None or (seat, holder) in claimed:
                self._deadlines.pop(key, None)
                continue
            known = self._deadlines.get(key)
            if known is None or known[1] != holder:
                taken = taken_at.get(seat, self._clock.now())
                self._deadlines[key] = (taken + self.timeout, holder)

    async def _sweep(self) -> None:
        interval = min(1.0, max(0.02, self.timeout / 5))
        while True:
            await self._clock.sleep(interval)
            now = self._clock.now()
            for key, (deadline, holder) in list(self._deadlines.items()):
                if deadline > now:
                    continue
                del self._deadlines[key]
                table_id, seat = key
                if (seat, holder) in self._claimed.get(table_id, ()):
                    continue
                if await self._opened_elsewhere(table_id, seat, holder):
                    self._claimed.setdefault(table_id, set()).add((seat, holder))
                    continue
                await self._release(table_id, seat, holder)

    async def _opened_elsewhere(self, table_id: str, seat: int, holder: bytes) -> bool:
        """Whether the log says the holder opened a stream (on another replica, or before a
        restart); when the log cannot answer, the seat is kept (freed at a later sweep)."""
        try:
            key = table_events.stream_claim_key(seat, holder)
            return await self._store.log.read_claim(table_id, key) is not None
        except LogUnavailable:
            return True

    async def _release(self, table_id: str, seat: int, holder: bytes) -> None:
        try:
            _, entries = await self._store.execute(
                table_id, lambda table: decide_release(table, seat, holder)
            )
        except errors.RequestError as error:
            log.warning(
                "unclaimed seat not freed",
                table_id=table_id,
                seat=seat_name(seat),
                reason=error.reason,
            )
            return
        if entries:
            log.info(
                "unclaimed seat freed",
                table_id=table_id,
                seat=seat_name(seat),
                after_seconds=self.timeout,
                sequence=entries[0].sequence,
            )


def _seats_taken_at(table: Table) -> dict[int, float]:
    """When each seat was last taken (the stored time of its latest SeatTaken)."""
    taken: dict[int, float] = {}
    for entry in table.entries:
        if isinstance(entry.event, ev.SeatTaken):
            taken[entry.event.seat] = entry.message.time.ToNanoseconds() / 1e9
    return taken
