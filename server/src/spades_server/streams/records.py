"""A table's game record as the server serves it: the engine's record, with what the log adds.

:func:`spades.records.build_record` makes a record from the engine's events (public, with no
seed, until the match ends). The server's stored messages say more than those events: the
table's listing on TableCreated and the account on SeatTaken (see
:func:`spades_server.domain.table_events.add_server_fields`), which Watch and the lobby show, and
the commitment to each action's sealed note. A record served by GetRecord or in a tournament's
record carries them too, so an offline verifier can tell who sat where and whether the match
counted.

Once the match is over, and only then, the record also reveals the sealed notes and the key of
their salts (:mod:`spades.notes`), read from the log's private envelope here: this join is the one
path by which a note's text leaves the server. No stream, snapshot, view or lobby message is made
from the envelope's secrets (:mod:`spades_server.store.journal` keeps them beside the public
event, never inside it), so before the end a note is nowhere but in the log.
"""

from __future__ import annotations

from spades import protocol, records
from spades.v1 import record_pb2
from spades_server.domain.table_events import add_server_fields
from spades_server.domain.tables import Table


def record_of(table: Table) -> record_pb2.GameRecord:
    """The table's record (public until its match ends), with the log's public additions, and
    the sealed notes once the match is over."""
    record = records.build_record(table.events, table_id=table.table_id)
    for event, entry in zip(record.events, table.entries, strict=True):
        add_server_fields(entry.message, event)
    if table.finished:
        reveal_notes(table, record)
    return record


def reveal_notes(table: Table, record: record_pb2.GameRecord) -> None:
    """Add the finished table's sealed notes and their key to its ``record`` (no key when no
    event commits to a note: a table played before notes existed)."""
    assert table.finished, "a note is revealed only once the match is over"
    if any(entry.message.note_sha256 for entry in table.entries):
        record.note_key = table.note_key
    for entry in table.entries:
        note = entry.secrets.note
        actor = entry.actor
        if note and actor is not None:
            record.notes.add(
                sequence=entry.sequence,
                seat=protocol.seat_to_proto(actor),
                text=note.decode("utf-8"),
            )
