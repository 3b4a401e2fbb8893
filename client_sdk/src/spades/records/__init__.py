"""Game records: a whole match as one ``spades.v1.GameRecord``, to keep, replay and verify.

>>> from spades.engine import Rules, seated_match
>>> from spades.records import build_record, events_of
>>> _, events = seated_match(Rules(), seed=bytes(32))
>>> record = build_record(events, table_id="t1")  # unfinished: the public record, no seed
>>> record.seed, len(events_of(record)) == len(events)
(b'', True)
"""

from spades.records.files import (
    Format,
    file_format,
    load_record,
    record_from_bytes,
    record_from_json,
    record_to_bytes,
    record_to_json,
    save_record,
)
from spades.records.record import (
    FORMAT_VERSION,
    RecordError,
    build_record,
    events_of,
    notes_of,
)
from spades.records.render import (
    MatchNarrator,
    ScoreTable,
    SideLine,
    render_match,
    render_score_table,
    score_table,
    score_table_json,
)
from spades.records.replay import NotReplayable, ReplayError, Step, replay, replay_steps
from spades.records.verify import Verification, VerificationError, verify

__all__ = [
    "FORMAT_VERSION",
    "Format",
    "MatchNarrator",
    "NotReplayable",
    "RecordError",
    "ReplayError",
    "ScoreTable",
    "SideLine",
    "Step",
    "Verification",
    "VerificationError",
    "build_record",
    "events_of",
    "file_format",
    "load_record",
    "notes_of",
    "record_from_bytes",
    "record_from_json",
    "record_to_bytes",
    "record_to_json",
    "render_match",
    "render_score_table",
    "replay",
    "replay_steps",
    "save_record",
    "score_table",
    "score_table_json",
    "verify",
]
