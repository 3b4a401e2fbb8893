"""A table's game record as the server serves it: the engine's record, with what the log adds.

:func:`spades.records.build_record` makes a record from the engine's events (public, with no
seed, until the match ends). The server's stored messages say more than those events: the
table's listing on TableCreated and the account on SeatTaken (see
:func:`spades_server.domain.table_events.add_server_fields`), which Watch and the lobby show. A
record served by GetRecord or in a tournament's record carries them too, so an offline verifier
can tell who sat where and whether the match counted.
"""

from __future__ import annotations

from spades import records
from spades.v1 import record_pb2
from spades_server.domain.table_events import add_server_fields
from spades_server.domain.tables import Table


def record_of(table: Table) -> record_pb2.GameRecord:
    """The table's record (public until its match ends), with the log's public additions."""
    record = records.build_record(table.events, table_id=table.table_id)
    for event, entry in zip(record.events, table.entries, strict=True):
        add_server_fields(entry.message, event)
    return record
