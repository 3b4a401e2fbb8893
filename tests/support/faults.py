"""Shared pieces of the fault tests: SDK clients that journal every accepted action, and reading
the event log (SQLite or PostgreSQL) once no server holds it, as the truth to hold what was
served and acknowledged to (the server process they kill is tests/support/processes.py's).

The SQLite log is locked by the process that opens it, so the log is read only after the server
has stopped (or died), on either backend; what the server *serves* is therefore collected
first, while it runs.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter, defaultdict
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from google.protobuf import text_format

from spades import protocol
from spades.bot import BotView
from spades.client import ActionResult, SeatConnection, SpadesClient
from spades.client.client import DEFAULT_CHANNEL_OPTIONS
from spades.client.connection import new_action_id
from spades.client.messages import PlayMessage, Snapshot, WatchMessage
from spades.engine import Action, Card, MatchState, Rules, view
from spades.engine import events as ev
from spades.v1 import events_pb2
from spades_bots.random_bot import RandomBot
from spades_server.eventlog.base import StoredEvent
from spades_server.store import journal
from tests.support.backends import LogStorage, read_to_head

# -- clients that remember what the server acknowledged ----------------------------------------


@dataclass(frozen=True, slots=True)
class Accepted:
    """One accepted ActionResult as the seat received it."""

    sequence: int
    action_id: str
    #: time.monotonic() when it arrived, and when its stream had been opened.
    received_at: float
    stream_opened_at: float


@dataclass
class SeatJournal:
    accepted: list[Accepted] = field(default_factory=list)
    #: time.monotonic() of every Play stream opened for the seat.
    streams_opened: list[float] = field(default_factory=list)
    #: time.monotonic() when each action id was first sent.
    sent_at: dict[str, float] = field(default_factory=dict)
    #: Called with each accepted result as it arrives.
    on_accepted: Callable[[Accepted], None] | None = None


class RecordingConnection(SeatConnection):
    """A Play stream that journals every accepted ActionResult it delivers to the bot."""

    def __init__(self, client: SpadesClient, seat_token: str, journal: SeatJournal) -> None:
        super().__init__(client.play_service, seat_token)
        self.journal = journal
        self.opened_at = time.monotonic()

    async def send(
        self, action: Action, sequence: int, action_id: str | None = None, *, note: str = ""
    ) -> str:
        action_id = action_id or new_action_id()
        self.journal.sent_at.setdefault(action_id, time.monotonic())
        return await super().send(action, sequence, action_id, note=note)

    async def receive(self) -> PlayMessage | None:
        message = await super().receive()
        if isinstance(message, ActionResult) and message.accepted:
            accepted = Accepted(
                message.sequence, message.action_id, time.monotonic(), self.opened_at
            )
            self.journal.accepted.append(accepted)
            if self.journal.on_accepted is not None:
                self.journal.on_accepted(accepted)
        return message


def latencies(journal: SeatJournal) -> list[float]:
    """Seconds from sending each action to its (first) accepted result."""
    first: dict[str, float] = {}
    for accepted in journal.accepted:
        first.setdefault(accepted.action_id, accepted.received_at)
    return [at - journal.sent_at[action_id] for action_id, at in first.items()]


class RecordingClient(SpadesClient):
    """The SDK's client, whose Play streams journal what the server acknowledged, per token."""

    def __init__(
        self, address: str, channel_options: Sequence[tuple[str, Any]] = DEFAULT_CHANNEL_OPTIONS
    ) -> None:
        super().__init__(address, channel_options=channel_options)
        self.journals: defaultdict[str, SeatJournal] = defaultdict(SeatJournal)

    def connection(self, seat_token: str, journal: SeatJournal) -> RecordingConnection:
        """A new Play stream of this client, journaling into ``journal``."""
        return RecordingConnection(self, seat_token, journal)

    async def play(
        self,
        seat_token: str,
        after_sequence: int = 0,
        *,
        latest: bool = False,
        batched: bool = True,
    ) -> SeatConnection:
        journal = self.journals[seat_token]
        connection = self.connection(seat_token, journal)
        journal.streams_opened.append(connection.opened_at)
        try:
            await connection.start(after_sequence, latest=latest, batched=batched)
        except BaseException:
            await connection.close()
            raise
        return connection


async def seat_four(client: SpadesClient, rules: Rules, name: str) -> tuple[str, list[str]]:
    """A new table with four seated bots: its id and the seat tokens, by seat."""
    created = await client.create_table(name, rules)
    tokens = []
    for seat in range(rules.players):
        ticket = await client.join_table(created.table_id, f"bot {seat}", seat=seat)
        tokens.append(ticket.token)
    return created.table_id, tokens


class Paced(RandomBot):
    """A random bot that waits before each decision while ``hold()`` is true (``holding``
    says it is waiting now: prompted, with nothing of its own in flight)."""

    def __init__(self, seed: int, hold: Callable[[], bool]) -> None:
        super().__init__(seed)
        self.hold = hold
        self.holding = False

    async def _wait(self) -> None:
        self.holding = True
        try:
            while self.hold():
                await asyncio.sleep(0.005)
        finally:
            self.holding = False

    async def bid(self, view: BotView) -> int:  # type: ignore[override]
        await self._wait()
        return super().bid(view)

    async def play(self, view: BotView) -> Card:  # type: ignore[override]
        await self._wait()
        return super().play(view)


async def eventually(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        await asyncio.sleep(0.01)


async def sequence_reaches(client: SpadesClient, table_id: str, sequence: int) -> None:
    """Wait until the table's log reaches ``sequence`` (its lobby summary says so)."""

    async def reached() -> None:
        while (await client.get_table(table_id)).sequence < sequence:
            await asyncio.sleep(0.02)

    await asyncio.wait_for(reached(), 30)


# -- the log, read directly --------------------------------------------------------------------


async def read_log(storage: LogStorage | Path) -> dict[str, list[StoredEvent]]:
    """Every stream of the log, by stream id (once no server holds it: a SQLite file is
    locked by the process that opens it)."""
    streams: dict[str, list[StoredEvent]] = defaultdict(list)
    positions = []
    async with LogStorage.of(storage).new_log() as log:
        for stored in await read_to_head(log):
            streams[stored.stream_id].append(stored)
            positions.append(stored.position)
    assert positions == sorted(set(positions)), "positions must be unique and increasing"
    return dict(streams)


def assert_contiguous(streams: Mapping[str, Sequence[StoredEvent]]) -> None:
    """Each stream's versions are exactly 1..n, in log order."""
    for stream_id, stored in streams.items():
        versions = [event.version for event in stored]
        assert versions == list(range(1, len(stored) + 1)), (stream_id, versions)


def decoded(stored: Sequence[StoredEvent]) -> list[events_pb2.Event]:
    """The stored messages, each with its sequence (= version) and action id, nothing
    redacted (the journal's public messages: no server secret)."""
    out = []
    for event in stored:
        entry = journal.decode(event)
        message = events_pb2.Event()
        message.CopyFrom(entry.message)
        message.action_id = entry.action_id
        out.append(message)
    return out


def engine_events(stored: Sequence[StoredEvent]) -> list[ev.Event]:
    return [journal.decode(event).event for event in stored]


def action_ids_by_seat(stored: Sequence[StoredEvent]) -> dict[int, Counter[str]]:
    """For each seat, how many times each of its action ids caused events in the log (seat -1:
    an event with an action id but no acting seat)."""
    out: dict[int, Counter[str]] = defaultdict(Counter)
    for message in decoded(stored):
        if message.action_id:
            seat = protocol.event_from_proto(message).actor
            out[-1 if seat is None else seat][message.action_id] += 1
    return out


def assert_each_action_id_in_one_place(streams: Mapping[str, Sequence[StoredEvent]]) -> None:
    """No action id caused events at two places: in two tables, or for two seats."""
    log_ids = [
        action_id
        for stored in streams.values()
        for by_seat in action_ids_by_seat(stored).values()
        for action_id in by_seat
    ]
    assert len(log_ids) == len(set(log_ids)), "an action id caused events at two places"


# -- the log is the truth ----------------------------------------------------------------------


async def served_snapshot(client: SpadesClient, table_id: str) -> Snapshot:
    """The spectator's view at the table's latest sequence (the first message of a Watch)."""
    stream = cast(AsyncGenerator[WatchMessage, None], client.watch(table_id, latest=True))
    try:
        first = await asyncio.wait_for(anext(stream), 10)
    finally:
        await stream.aclose()
    assert isinstance(first, Snapshot), first
    return first


async def served_snapshots(client: SpadesClient, table_ids: Sequence[str]) -> dict[str, Snapshot]:
    return {table_id: await served_snapshot(client, table_id) for table_id in table_ids}


def replayed_state(stored: Sequence[StoredEvent], upto: int | None = None) -> MatchState:
    """The match state from scratch: the engine folds the log's events, nothing else."""
    events = engine_events(stored)
    return MatchState.from_events(events if upto is None else events[:upto])


def assert_log_is_truth(
    snapshots: Mapping[str, Snapshot],
    streams: Mapping[str, Sequence[StoredEvent]],
    *,
    latest: bool = True,
) -> None:
    """For each table, the spectator's view of the log replayed from scratch (up to the
    snapshot's sequence) is the view the server served at that sequence. With ``latest`` the
    snapshot must also be at the log's last sequence (taken once the table was quiet)."""
    assert snapshots, "no table to check"
    for table_id, served in snapshots.items():
        stored = streams[table_id]
        if latest:
            assert served.sequence == len(stored), (
                f"table {table_id}: the server serves sequence {served.sequence} as the latest,"
                f" but its log is at {len(stored)}"
            )
        else:
            assert 1 <= served.sequence <= len(stored), (table_id, served.sequence, len(stored))
        replayed = protocol.view_to_proto(view(replayed_state(stored, served.sequence), None))
        if replayed != served.view:
            raise AssertionError(
                f"table {table_id}: the replayed view differs from the served one at sequence"
                f" {served.sequence}\n"
                f"--- replayed\n{text_format.MessageToString(replayed)}\n"
                f"--- served\n{text_format.MessageToString(served.view)}"
            )


def assert_acknowledged_once(
    stored: Sequence[StoredEvent], journals: Mapping[str, SeatJournal], outcomes: Mapping[str, Any]
) -> None:
    """For each seat token's match outcome (a ``MatchOutcome``): its action ids in the table's
    log are exactly those its bot counted as applied, each once, and every action the server
    acknowledged to it is in the log at the sequence the result named, as that action's."""
    in_log = action_ids_by_seat(stored)
    for token, outcome in outcomes.items():
        seat = outcome.seat
        assert all(count == 1 for count in in_log[seat].values()), "applied twice"
        assert set(in_log[seat]) == outcome.applied_action_ids, seat
        first_sequence: dict[str, int] = {}
        for accepted in journals[token].accepted:
            sequence = first_sequence.setdefault(accepted.action_id, accepted.sequence)
            assert sequence == accepted.sequence, "one action id, two sequences"
            assert 1 <= sequence <= len(stored), accepted
            event = stored[sequence - 1]
            assert event.version == sequence
            assert journal.decode(event).action_id == accepted.action_id, accepted
        assert set(first_sequence) <= outcome.applied_action_ids
