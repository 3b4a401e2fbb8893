"""Tables as event-sourced aggregates, and command handling on the event log.

A :class:`Table` is everything the log says about one table: the engine's match state plus
what only the server keeps (seat-token digests, substitutes' token digests, the table's name and
privacy, the action ids already answered). :class:`TableStore` handles every command the same
stateless way: load the table (from a cache checked against the log's version), decide with the
engine, append with the expected version, and on a conflict reload and decide again.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.protobuf.timestamp_pb2 import Timestamp

from spades import protocol
from spades.engine import IllegalAction, MatchState, Phase
from spades.engine import events as ev
from spades.v1 import events_pb2
from spades_server import errors, metrics
from spades_server.eventlog.base import EventLog, StoredEvent, VersionConflict

MAX_DECIDE_ATTEMPTS = 20


@dataclass
class Table:
    """One table folded from its log."""

    table_id: str
    version: int = 0
    state: MatchState = field(default_factory=MatchState)
    name: str = ""
    private: bool = False
    quick_match: bool = False
    join_code_sha256: bytes = b""
    created_at: float = 0.0
    seat_token_digests: dict[int, bytes] = field(default_factory=dict)
    #: The token digest of each seat's substitute (a house bot), while it plays the seat.
    substitute_token_digests: dict[int, bytes] = field(default_factory=dict)
    #: (seat, action id) -> sequence of the first event the action caused.
    answered_actions: dict[tuple[int, str], int] = field(default_factory=dict)
    #: Every stored event, as protobuf with its sequence and time.
    events: list[events_pb2.Event] = field(default_factory=list)
    #: The same events as engine values (for redaction and views).
    engine_events: list[ev.Event] = field(default_factory=list)

    def fold(self, stored: StoredEvent, message: events_pb2.Event | None = None) -> None:
        """Add one stored event (the next version) to the table; ``message`` is its data
        already parsed (by the command that appended it), to save parsing it again."""
        if stored.version <= self.version:
            return  # already folded: a concurrent load read it from the log first
        event = message if message is not None else events_pb2.Event.FromString(stored.data)
        event.sequence = stored.version
        event.time.FromNanoseconds(int(stored.recorded_at * 1e9))
        engine_event = protocol.event_from_proto(event)
        self.state.evolve(engine_event)
        kind = event.WhichOneof("kind")
        if kind == "table_created":
            created = event.table_created
            self.name = created.name
            self.private = created.private
            self.quick_match = created.quick_match
            self.join_code_sha256 = created.join_code_sha256
            self.created_at = stored.recorded_at
            created.ClearField("join_code_sha256")
        elif kind == "seat_taken":
            seat = protocol.seat_from_proto(event.seat_taken.player.seat)
            self.seat_token_digests[seat] = event.seat_taken.seat_token_sha256
            event.seat_taken.ClearField("seat_token_sha256")
        elif kind == "seat_left":
            self.seat_token_digests.pop(protocol.seat_from_proto(event.seat_left.seat), None)
        elif kind == "seat_substituted":
            seat = protocol.seat_from_proto(event.seat_substituted.seat)
            self.substitute_token_digests[seat] = event.seat_substituted.substitute_token_sha256
            event.seat_substituted.ClearField("substitute_token_sha256")
        elif kind == "seat_reclaimed":
            seat = protocol.seat_from_proto(event.seat_reclaimed.seat)
            self.substitute_token_digests.pop(seat, None)
        if event.action_id:
            actor = actor_of(engine_event)
            if actor is not None:
                self.answered_actions.setdefault((actor, event.action_id), stored.version)
        # The server's secrets (digests) now live in the fields above only: the kept message
        # may go to any viewer the engine's redaction lets see it.
        self.events.append(event)
        self.engine_events.append(engine_event)
        self.version = stored.version

    def is_player(self, seat: int, holder: bytes) -> bool:
        """Whether ``holder`` (a token digest) is the seat's own player's."""
        return bool(holder) and self.seat_token_digests.get(seat) == holder

    def is_substitute(self, seat: int, holder: bytes) -> bool:
        """Whether ``holder`` is the token digest of the substitute playing the seat now."""
        return bool(holder) and self.substitute_token_digests.get(seat) == holder

    @property
    def in_play(self) -> bool:
        """True while the match is being played (started, not over)."""
        return self.state.phase not in (Phase.WAITING_FOR_PLAYERS, Phase.ENDED)

    @property
    def started(self) -> bool:
        return self.state.phase is not Phase.WAITING_FOR_PLAYERS

    @property
    def finished(self) -> bool:
        return self.state.phase is Phase.ENDED

    def state_at(self, version: int) -> MatchState:
        """The match state as it was after ``version`` events."""
        if version >= self.version:
            return self.state
        return MatchState.from_events(self.engine_events[:version])


def actor_of(event: ev.Event) -> int | None:
    """The seat whose action an event records first, if any."""
    if isinstance(event, ev.BlindNilChosen | ev.BidMade | ev.CardPlayed | ev.Conceded):
        return event.seat
    if isinstance(event, ev.CardsPassed):
        return event.from_seat
    if isinstance(event, ev.SeatTaken | ev.SeatLeft):
        return event.seat
    return None


def to_proto_events(
    engine_events: Sequence[ev.Event], action_id: str = ""
) -> list[events_pb2.Event]:
    """Engine events as log entries; the first carries the action id that caused them."""
    out = [protocol.event_to_proto(event) for event in engine_events]
    if out and action_id:
        out[0].action_id = action_id
    return out


Decision = Callable[[Table], list[events_pb2.Event]]


class TableStore:
    """Loads tables from the log (with a version-checked cache) and runs commands on them."""

    def __init__(self, log: EventLog) -> None:
        self.log = log
        self._cache: dict[str, Table] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._signals: dict[str, asyncio.Event] = {}
        self._refreshing: set[asyncio.Task[None]] = set()
        #: Called with a table each time new events were folded into it.
        self.listeners: list[Callable[[Table], None]] = []

    def _lock(self, table_id: str) -> asyncio.Lock:
        lock = self._locks.get(table_id)
        if lock is None:
            lock = self._locks[table_id] = asyncio.Lock()
        return lock

    async def load(self, table_id: str) -> Table:
        """The table as of the log's latest version; NOT_FOUND when there is none."""
        if not table_id:
            raise errors.invalid("table_id is required")
        if "\x00" in table_id:  # PostgreSQL text cannot hold one (it refuses the query): none has
            raise errors.not_found(f"there is no table {table_id!r}")
        table = self._cache.get(table_id)
        if table is not None and self.log.sole_writer:
            return table  # every append to this log went through this store and was folded
        table = table or Table(table_id)
        stored = await self.log.read(table_id, after_version=table.version)
        # Another load may have cached this table while we read: keep one object per table,
        # or commands and streams would fold into different copies.
        table = self._cache.get(table_id) or table
        for event in stored:
            table.fold(event)  # folding skips what the table already has
        if table.version == 0:
            raise errors.not_found(f"there is no table {table_id!r}")
        self._cache[table_id] = table
        if stored:
            self._changed(table)
        return table

    async def _refresh(self, table: Table) -> None:
        """Fold whatever the log has past the cached table (after a conflict: always read)."""
        version = table.version
        for event in await self.log.read(table.table_id, after_version=version):
            table.fold(event)
        if table.version != version:
            self._changed(table)

    def observe(self, stored: StoredEvent) -> None:
        """Fold an event another process appended into the cached table (the log's followers
        call this with every event; events this store appended are already folded)."""
        table = self._cache.get(stored.stream_id)
        if table is None or stored.version <= table.version:
            return
        if stored.version == table.version + 1:
            table.fold(stored)
            self._changed(table)
        else:  # events were missed: read them in order
            task = asyncio.get_running_loop().create_task(self._refresh(table))
            self._refreshing.add(task)
            task.add_done_callback(self._refreshing.discard)

    def cached(self, table_id: str) -> Table:
        """The table as last loaded (call :meth:`load` once first)."""
        return self._cache[table_id]

    def cached_tables(self) -> list[Table]:
        """Every table loaded so far."""
        return list(self._cache.values())

    def cached_version(self, table_id: str) -> int:
        table = self._cache.get(table_id)
        return table.version if table is not None else -1

    def _changed(self, table: Table) -> None:
        for listener in self.listeners:
            listener(table)
        self.poke(table.table_id)

    def poke(self, table_id: str) -> None:
        """Wake everyone waiting on the table (it changed, or a stream has news)."""
        signal = self._signals.pop(table_id, None)
        if signal is not None:
            signal.set()

    def wake_all(self) -> None:
        """Wake every waiter (on shutdown)."""
        for table_id in list(self._signals):
            self.poke(table_id)

    async def wait_for_change(
        self,
        table_id: str,
        position: int,
        outgoing: asyncio.Queue[Any] | None,
        shutdown: asyncio.Event,
    ) -> None:
        """Return once the table is past ``position``, ``outgoing`` has news, or on shutdown."""
        if (
            self._cache[table_id].version > position
            or (outgoing is not None and not outgoing.empty())
            or shutdown.is_set()
        ):
            return
        signal = self._signals.get(table_id)
        if signal is None:
            signal = self._signals[table_id] = asyncio.Event()
        await signal.wait()

    async def create(self, table_id: str, events: list[events_pb2.Event]) -> Table:
        """Start a new table's log with ``events``."""
        stored = await self._append(table_id, 0, events)
        table = Table(table_id)
        for event in stored:
            table.fold(event)
        self._cache[table_id] = table
        self._changed(table)
        return table

    async def execute(self, table_id: str, decide: Decision) -> tuple[Table, list[StoredEvent]]:
        """Run a command: decide on the latest table, append, retry on a conflict.

        ``decide`` raises :class:`errors.RequestError` to refuse (nothing is written) and may
        return no events (nothing to do). A command runs to the end even if its caller is
        cancelled (a client vanishing mid-append): an appended event is always folded.
        """
        return await asyncio.shield(asyncio.ensure_future(self._execute(table_id, decide)))

    async def _execute(self, table_id: str, decide: Decision) -> tuple[Table, list[StoredEvent]]:
        async with self._lock(table_id):
            for _ in range(MAX_DECIDE_ATTEMPTS):
                table = await self.load(table_id)
                try:
                    new_events = decide(table)
                except IllegalAction as error:
                    raise errors.precondition(error.reason) from error
                if not new_events:
                    return table, []
                try:
                    stored = await self._append(table_id, table.version, new_events)
                except VersionConflict:
                    metrics.APPEND_CONFLICTS.inc()
                    await self._refresh(table)
                    continue
                for event, message in zip(stored, new_events, strict=True):
                    table.fold(event, message)
                self._changed(table)
                return table, stored
        raise errors.RequestError(
            grpc.StatusCode.ABORTED,
            "the table kept changing under this request; try again",
        )

    async def _append(
        self, table_id: str, expected: int, events: list[events_pb2.Event]
    ) -> list[StoredEvent]:
        started = time.perf_counter()
        stored = await self.log.append(
            table_id, expected, [event.SerializeToString() for event in events]
        )
        metrics.APPEND_SECONDS.observe(time.perf_counter() - started)
        metrics.EVENTS_APPENDED.inc(len(stored))
        return stored


def timestamp(seconds: float) -> Timestamp:
    stamp = Timestamp()
    stamp.FromNanoseconds(int(seconds * 1e9))
    return stamp
