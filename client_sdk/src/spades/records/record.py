"""A whole match as one ``spades.v1.GameRecord``: built from engine events, read back into them.

A finished match's record holds every event as the table logged it, and the seed and preset deals
(revealed at the end) in fields of the record: TableCreated carries no secret on the wire, and
:func:`events_of` puts them back into it. An unfinished match's record is public: every event as
a spectator sees it, no seed and no preset deals, so it gives away no card a spectator could not
see.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from spades.engine import events as ev
from spades.engine.views import redact
from spades.protocol import (
    deals_from_proto,
    deals_to_proto,
    event_from_proto,
    rules_to_proto,
    seat_to_proto,
    stored_event,
)
from spades.v1 import events_pb2, record_pb2

FORMAT_VERSION = 1


class RecordError(ValueError):
    """A record that cannot be read, replayed or verified; the message says why."""


def build_record(
    events: Sequence[ev.Event], table_id: str = "", *, public: bool | None = None
) -> record_pb2.GameRecord:
    """The record of a match from its events, starting with TableCreated.

    ``public`` redacts every event for a spectator and leaves the seed out; by default a record
    is public exactly when the match is not over (its seed is still secret).
    """
    if not events or not isinstance(events[0], ev.TableCreated):
        raise RecordError("a record starts with the table's TableCreated event")
    finished = any(isinstance(event, ev.MatchEnded) for event in events)
    if public is None:
        public = not finished
    logged = [redact(event, None) for event in events] if public else list(events)
    created = events[0]
    # A revealed seed is public; before that, only the table's own (private) record holds it.
    revealed = [event.seed for event in events if isinstance(event, ev.SeedRevealed)]
    seed = revealed[-1] if revealed else b"" if public else created.seed or b""
    return record_pb2.GameRecord(
        format_version=FORMAT_VERSION,
        table_id=table_id,
        rules=rules_to_proto(created.rules),
        players=_players(events),
        seed_commitment=created.seed_commitment,
        seed=seed,
        shuffle_version=created.shuffle_version,
        events=[stored_event(event, sequence) for sequence, event in enumerate(logged, 1)],
        preset_deals=deals_to_proto(() if public else created.preset_deals or ()),
    )


def _players(events: Sequence[ev.Event]) -> list[events_pb2.Player]:
    seated: dict[int, ev.SeatTaken] = {}
    for event in events:
        if isinstance(event, ev.SeatTaken):
            seated[event.seat] = event
        elif isinstance(event, ev.SeatLeft):
            seated.pop(event.seat, None)
    return [
        events_pb2.Player(seat=seat_to_proto(seat), name=taken.name, bot=taken.bot)
        for seat, taken in sorted(seated.items())
    ]


def notes_of(record: record_pb2.GameRecord) -> dict[int, str]:
    """The record's sealed notes by the sequence of the event each explains (the first event of
    the action it came with); empty for a record of an unfinished match, which holds none.

    >>> record = record_pb2.GameRecord(notes=[record_pb2.SealedNote(sequence=12, text="why")])
    >>> notes_of(record)
    {12: 'why'}
    """
    return {note.sequence: note.text for note in record.notes}


def events_of(record: record_pb2.GameRecord) -> list[ev.Event]:
    """The record's events as engine events, in order.

    Raises :class:`RecordError` naming the event index (from 0) when one cannot be read.
    """
    if record.format_version != FORMAT_VERSION:
        raise RecordError(
            f"record format version {record.format_version} is not supported "
            f"(this reader knows version {FORMAT_VERSION})"
        )
    events = []
    for index, message in enumerate(record.events):
        try:
            events.append(event_from_proto(message, f"events[{index}]"))
        except ValueError as error:
            raise RecordError(f"event {index} cannot be read: {error}") from error
    if not events or not isinstance(events[0], ev.TableCreated):
        raise RecordError("the record's first event must be TableCreated")
    if record.seed:
        # A record with its seed is the whole one: its TableCreated gets its secrets back.
        try:
            deals = deals_from_proto(record.preset_deals, "preset_deals")
        except ValueError as error:
            raise RecordError(f"the preset deals cannot be read: {error}") from error
        events[0] = dataclasses.replace(events[0], seed=record.seed, preset_deals=deals)
    return events
