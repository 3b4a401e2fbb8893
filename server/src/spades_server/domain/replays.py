"""Whether a table's events are the ones the engine produces: the replay check, in one place.

The start-up checks and ``spades-server check`` (``spades_server.app.integrity``) replay tables
read straight from the file, and the table store (``spades_server.domain.tables``) replays each
finished table it loads from the log cold, before any of it is served: a changed card or bid in
settled history is named then, instead of being served.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from spades import records
from spades.engine import events as ev

#: The events a finished match's stream ends with (its history is settled).
FINISHED: Final = (ev.MatchEnded, ev.SeedRevealed)


@dataclass(frozen=True)
class NotReplayed:
    """The first event of a table the engine does not reproduce: its sequence, and why."""

    sequence: int
    reason: str


def first_unreplayed(table_id: str, events: Sequence[ev.Event]) -> NotReplayed | None:
    """Replay a table's events (from its TableCreated) through the engine; the first one it
    does not reproduce, or None when they all replay (or the record cannot be replayed at all:
    no seed, so decoding them was the check)."""
    try:
        records.replay(records.build_record(events, table_id, public=False))
    except records.NotReplayable:
        return None
    except records.ReplayError as error:
        return NotReplayed(error.index + 1, f"does not replay: {error.reason}")
    except records.RecordError as error:
        return NotReplayed(1, f"does not replay: {error}")
    return None
