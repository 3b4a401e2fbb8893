"""What a table's log holds besides the engine's events: drafts to append, stored entries, secrets,
listings, claims.

An :class:`Entry` is one stored event as the server knows it: the engine's event (whole: a
TableCreated keeps its seed and preset deals), the public message, the action id and the
secrets kept beside it. A :class:`Draft` is an event a decision wants appended. Pure data: the
bytes they are stored as are :mod:`spades_server.store.journal`'s."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from spades import protocol
from spades.engine import events as ev
from spades.v1 import events_pb2


@dataclass(frozen=True)
class Secrets:
    """What the server keeps about an event and shows no one (the seed and preset deals ride
    in the engine's TableCreated itself)."""

    #: TableCreated of a private table: SHA-256 of its join code.
    join_code_sha256: bytes = b""
    #: SeatTaken: SHA-256 of the seat token handed to the player.
    seat_token_sha256: bytes = b""
    #: SeatSubstituted: SHA-256 of the substitute's seat token.
    substitute_token_sha256: bytes = b""
    #: TableCreated and SeatTaken: SHA-256 of the client's request id (see ``tokens``).
    request_id_sha256: bytes = b""
    #: TableCreated: the key the salts of the seats' sealed notes come from (:mod:`spades.notes`).
    note_key: bytes = b""
    #: The first event of a seat's action: the sealed note it attached (UTF-8), revealed only
    #: in the record of the finished match (:mod:`spades_server.streams.records`).
    note: bytes = b""


#: What most events come with: one shared instance (an entry is kept for as long as its table,
#: and every object kept is one more for the cyclic collector to walk while it is young).
NO_SECRETS = Secrets()


@dataclass(frozen=True)
class Listing:
    """What TableCreated says of the table besides the engine's part (public, the lobby's)."""

    name: str = ""
    private: bool = False
    quick_match: bool = False
    rated: bool = False


@dataclass(frozen=True)
class Draft:
    """An event a command decided to append, with what the server adds to it."""

    event: ev.Event
    action_id: str = ""
    secrets: Secrets = NO_SECRETS
    #: Only for TableCreated.
    listing: Listing | None = None
    #: Only for SeatTaken: the account holding the seat (public), if any.
    account_id: str = ""
    #: Only for the first event of a seat's action: the commitment to its note (public).
    note_sha256: bytes = b""

    @functools.cached_property
    def message(self) -> events_pb2.Event:
        """The public event, made once: stored in the row, then kept by the entry."""
        message = protocol.event_to_proto(self.event)
        if self.listing is not None and message.HasField("table_created"):
            created = message.table_created
            created.name = self.listing.name
            created.private = self.listing.private
            created.quick_match = self.listing.quick_match
            created.rated = self.listing.rated
        if self.account_id and message.HasField("seat_taken"):
            message.seat_taken.account_id = self.account_id
        if self.note_sha256:
            message.note_sha256 = self.note_sha256
        return message


def add_server_fields(public: events_pb2.Event, rendering: events_pb2.Event) -> None:
    """Give ``rendering`` (the same event converted again, e.g. redacted for a viewer) what the
    server added to the stored ``public`` message beyond the engine's event: the table's
    listing on TableCreated (name, private, quick match, rated), the account on SeatTaken and
    the commitment to an action's sealed note (never the note), all public. Without it a
    spectator's TableCreated (its seed hidden, so converted anew) and a record built from the
    engine's events would say less than the lobby and GetTable.

    >>> public, bare = events_pb2.Event(), events_pb2.Event()
    >>> public.table_created.name, public.table_created.rated = "Pond", True
    >>> bare.table_created.shuffle_version = "v1"
    >>> add_server_fields(public, bare)
    >>> bare.table_created.name, bare.table_created.rated, bare.table_created.shuffle_version
    ('Pond', True, 'v1')
    """
    kind = public.WhichOneof("kind")
    if kind != rendering.WhichOneof("kind"):
        return
    if public.note_sha256:
        rendering.note_sha256 = public.note_sha256
    if kind == "table_created":
        source, target = public.table_created, rendering.table_created
        target.name, target.private = source.name, source.private
        target.quick_match, target.rated = source.quick_match, source.rated
    elif kind == "seat_taken":
        rendering.seat_taken.account_id = public.seat_taken.account_id


@dataclass(frozen=True)
class Entry:
    """One stored event of a table, as the server uses it."""

    table_id: str
    sequence: int
    #: Global order in the whole log.
    position: int
    #: When it was stored (unix seconds).
    recorded_at: float
    event: ev.Event
    #: The public event: sequence and time set; no action id (only its actor gets that).
    message: events_pb2.Event = field(repr=False)
    action_id: str = ""
    secrets: Secrets = NO_SECRETS

    @property
    def actor(self) -> int | None:
        """The seat whose own action this event records, if any."""
        return self.event.actor


def drafts(
    events: Sequence[ev.Event],
    action_id: str = "",
    secrets: Secrets | None = None,
    listing: Listing | None = None,
    account_id: str = "",
    note_sha256: bytes = b"",
) -> list[Draft]:
    """Engine events to append; the first carries the action id, secrets, listing, account and
    note commitment."""
    return [
        Draft(event, action_id, secrets or NO_SECRETS, listing, account_id, note_sha256)
        if index == 0
        else Draft(event)
        for index, event in enumerate(events)
    ]


#: The claim data of an accepted action id (its events carry the id and say where it went).
ACCEPTED_CLAIM = b""


def action_claim_key(seat: int, action_id: str) -> str:
    """The claim key of a seat's action id: action ids are per seat."""
    return f"{seat}/{action_id}"


def stream_claim_key(seat: int, holder: bytes) -> str:
    """The claim key saying the seat's holder (its token digest) opened a stream (action ids'
    keys start with the seat's number, these with a word, so they never meet)."""
    return f"opened/{seat}/{holder.hex()}"


@dataclass(frozen=True)
class Refusal:
    """The first result of an action id that was refused: a google.rpc.Code, its reasons and
    the details of its google.rpc.Status (the field at fault, ErrorInfo's metadata), so a
    repeat of the id gets the whole first refusal."""

    code: int
    reason: str
    reason_code: str = ""
    field: str = ""
    metadata: Mapping[str, str] = dataclasses.field(default_factory=dict)
