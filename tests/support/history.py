"""The history check of the cluster's fault tests: clients that record what they sent, what was
acknowledged and every message each stream delivered; a checker that reads the log itself
(PostgreSQL, directly) and holds the record to it.

What it asserts, per table:

- the table's versions are 1..n in log order (gap-free, in order);
- every action the server acknowledged is in the log exactly once, at the sequence its result
  named, as its seat's, and a seat's acknowledged actions are in the log in the order it was
  told of them;
- no action id caused events twice, acknowledged or not, and every action id in the log is one
  a client sent;
- every stream a client opened delivered its snapshot and then events at consecutive sequences
  (snapshot + 1, + 2, ...), each one the log's event at that sequence (its kind: a seat's view
  redacts the content, not the kind).

The streams also keep every refused action's status and reason code, for the tests to judge.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from spades.bot import MatchOutcome
from spades.client import SpadesClient
from spades.client.client import DEFAULT_CHANNEL_OPTIONS
from spades.client.messages import ActionResult, PlayMessage, Snapshot, StreamEvent
from spades_server.eventlog import PostgresEventLog
from spades_server.eventlog.base import StoredEvent
from tests.support.backends import read_to_head
from tests.support.faults import (
    RecordingClient,
    RecordingConnection,
    SeatJournal,
    action_ids_by_seat,
    assert_acknowledged_once,
    assert_contiguous,
    engine_events,
)


@dataclass
class Delivery:
    """What one Play stream delivered: its snapshot's sequence, then each event's sequence and
    kind (the engine event's class name)."""

    token: str
    snapshot: int | None = None
    events: list[tuple[int, str]] = field(default_factory=list)
    #: Refused actions: (time.monotonic() received, status code name, reason code).
    refusals: list[tuple[float, str, str]] = field(default_factory=list)


class DeliveryRecordingConnection(RecordingConnection):
    def __init__(self, client: SpadesClient, token: str, journal: SeatJournal) -> None:
        super().__init__(client, token, journal)
        self.delivery = Delivery(token)

    async def receive(self) -> PlayMessage | None:
        message = await super().receive()
        if isinstance(message, Snapshot) and self.delivery.snapshot is None:
            self.delivery.snapshot = message.sequence
        elif isinstance(message, StreamEvent):
            self.delivery.events.append((message.sequence, type(message.event).__name__))
        elif isinstance(message, ActionResult) and not message.accepted:
            refusal = (time.monotonic(), message.code.name, message.reason_code)
            self.delivery.refusals.append(refusal)
        return message


class HistoryClient(RecordingClient):
    """The SDK's client, journaling acknowledgements (per seat token) and deliveries (per
    stream) of every Play stream it opens."""

    def __init__(
        self, address: str, channel_options: Sequence[tuple[str, Any]] = DEFAULT_CHANNEL_OPTIONS
    ) -> None:
        super().__init__(address, channel_options=channel_options)
        self.deliveries: list[Delivery] = []

    def connection(self, seat_token: str, journal: SeatJournal) -> RecordingConnection:
        connection = DeliveryRecordingConnection(self, seat_token, journal)
        self.deliveries.append(connection.delivery)
        return connection


async def read_tables(dsn: str, table_ids: Sequence[str]) -> dict[str, list[StoredEvent]]:
    """The log's events of ``table_ids``, by table, read from PostgreSQL directly."""
    streams: dict[str, list[StoredEvent]] = {table_id: [] for table_id in table_ids}
    async with PostgresEventLog(dsn, pool_size=2, notify=False) as log:
        for stored in await read_to_head(log):
            if stored.stream_id in streams:
                streams[stored.stream_id].append(stored)
    return streams


def check_history(
    stored: Sequence[StoredEvent],
    client: HistoryClient,
    outcomes: Mapping[str, MatchOutcome],
) -> None:
    """One table's history (``outcomes``: each seat token's match outcome) against its log."""
    assert_contiguous({"table": stored})
    assert_acknowledged_once(stored, client.journals, outcomes)
    for token in outcomes:
        acknowledged: list[int] = []
        for accepted in client.journals[token].accepted:
            if accepted.sequence not in acknowledged:
                acknowledged.append(accepted.sequence)
        assert acknowledged == sorted(acknowledged), "acknowledged out of the log's order"
    sent = {action_id for journal in client.journals.values() for action_id in journal.sent_at}
    for seat, counts in action_ids_by_seat(stored).items():
        twice = [action_id for action_id, count in counts.items() if count != 1]
        assert not twice, f"seat {seat}: action ids applied more than once: {twice}"
        assert set(counts) <= sent, f"seat {seat}: action ids no client sent"
    kinds = [type(event).__name__ for event in engine_events(stored)]
    for delivery in client.deliveries:
        if delivery.token not in outcomes or delivery.snapshot is None:
            continue
        sequences = [sequence for sequence, _ in delivery.events]
        expected = list(range(delivery.snapshot + 1, delivery.snapshot + 1 + len(sequences)))
        assert sequences == expected, f"a stream skipped or repeated: {sequences[:20]}..."
        for sequence, kind in delivery.events:
            assert kinds[sequence - 1] == kind, (sequence, kind, kinds[sequence - 1])
