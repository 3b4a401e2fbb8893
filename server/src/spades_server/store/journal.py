"""The journal: the one mapper between the bytes of a table's log and the server's entries.


An :class:`Entry` is one stored event as the server knows it: the engine's event (whole: a
TableCreated keeps its seed and preset deals, the engine deals from them), the id of the action
that caused it, the server's secrets that came with it, its sequence and time, and its public
``spades.v1.Event`` (made once here, so streams send it as it is when redaction hides nothing).

A row is :data:`ENVELOPE_MARKER` then a ``spades.server.v1.LogEntry``: the public event with the
secrets beside it, never inside a ``spades.v1`` message, so "empty" and "redacted" cannot be
confused and a secret cannot reach a viewer by forgetting to strip it. Rows written before the
envelope are plain ``spades.v1.Event`` bytes whose public messages held the secrets (fields now
reserved in ``spades.v1``); they are read through ``LegacyEvent``, which has those field numbers.
No legacy row starts with a zero byte (protobuf has no field number 0), hence the marker.

>>> from spades.engine import Rules, new_match
>>> _, events = new_match(Rules(), seed=bytes(32))
>>> from spades_server.domain.table_events import Listing
>>> draft = Draft(events[0], secrets=Secrets(join_code_sha256=b"j" * 32), listing=Listing("Pond"))
>>> stored = StoredEvent("t1", 1, 1, 0.0, encode(draft))
>>> entry = decode(stored)
>>> entry.event == events[0], entry.secrets.join_code_sha256 == b"j" * 32
(True, True)
>>> entry.message.table_created.name, entry.message.sequence
('Pond', 1)"""

from __future__ import annotations

import dataclasses

from spades import protocol
from spades.engine import events as ev
from spades.v1 import events_pb2
from spades_server.domain.table_events import (
    ACCEPTED_CLAIM,
    NO_SECRETS,
    Draft,
    Entry,
    Refusal,
    Secrets,
)
from spades_server.eventlog.base import StoredEvent
from spades_server.store.protowire import framed, read_varint
from spades_server.v1 import log_pb2

#: The first byte of every row written with the private envelope.
ENVELOPE_MARKER = b"\x00"


def encode(draft: Draft) -> bytes:
    """The row to store for ``draft``: the marker, then a LogEntry. Most events (a bid, a card)
    come with no secret and no action id but their first: the LogEntry is then framed from the
    public message's bytes, not built and serialised as a message of its own."""
    event = draft.event
    if draft.secrets != NO_SECRETS or isinstance(event, ev.TableCreated):
        secrets = log_pb2.Secrets(
            join_code_sha256=draft.secrets.join_code_sha256,
            seat_token_sha256=draft.secrets.seat_token_sha256,
            substitute_token_sha256=draft.secrets.substitute_token_sha256,
            request_id_sha256=draft.secrets.request_id_sha256,
            note_key=draft.secrets.note_key,
            note=draft.secrets.note,
        )
        if isinstance(event, ev.TableCreated):
            secrets.seed = event.seed or b""
            secrets.preset_deals.extend(protocol.deals_to_proto(event.preset_deals or ()))
        row = log_pb2.LogEntry(event=draft.message, action_id=draft.action_id, secrets=secrets)
        return ENVELOPE_MARKER + row.SerializeToString()
    # LogEntry.event = 1 and .action_id = 2, length-delimited: plain protobuf encoding, which
    # decode() parses as above (an absent secrets field reads as empty secrets).
    parts = [ENVELOPE_MARKER, framed(b"\x0a", draft.message.SerializeToString())]
    if draft.action_id:
        parts.append(framed(b"\x12", draft.action_id.encode()))
    return b"".join(parts)


def encode_refusal(refusal: Refusal) -> bytes:
    """The claim data that keeps ``refusal`` as its action id's first result."""
    return log_pb2.ActionRefusal(
        code=refusal.code,
        reason=refusal.reason,
        reason_code=refusal.reason_code,
        field=refusal.field,
        metadata=refusal.metadata,
    ).SerializeToString()


def decode_claim(data: bytes) -> Refusal | None:
    """The refusal an action id's claim keeps; None for an acceptance."""
    if data == ACCEPTED_CLAIM:
        return None
    kept = log_pb2.ActionRefusal.FromString(data)
    return Refusal(kept.code, kept.reason, kept.reason_code, kept.field, dict(kept.metadata))


def appended(stored: StoredEvent, draft: Draft) -> Entry:
    """The entry of a row just appended from ``draft`` (nothing is parsed again)."""
    return _entry(stored, draft.event, draft.message, draft.action_id, draft.secrets)


def kind_of(stored: StoredEvent) -> str:
    """The name of the stored event's kind (``spades.v1.Event``'s oneof, such as
    "card_played"), without making an entry: for a reader that needs only some kinds.

    >>> from spades.engine import Rules, new_match
    >>> _, events = new_match(Rules(), seed=bytes(32))
    >>> kind_of(StoredEvent("t1", 1, 1, 0.0, encode(Draft(events[0]))))
    'table_created'
    """
    data = stored.data
    if data.startswith(ENVELOPE_MARKER):
        # Read off the bytes: LogEntry.event comes first, and a stored event holds no sequence,
        # time or action id (its entry does), so its first field is its kind's, or the
        # commitment to an action's note (field 4), then its kind's.
        kind = _KIND_OF_FIELD.get(_first_field_of_first_field(data, len(ENVELOPE_MARKER)))
        if kind is not None:
            return kind
        message = log_pb2.LogEntry.FromString(data[len(ENVELOPE_MARKER) :]).event
    else:
        message = events_pb2.Event.FromString(data)
    return message.WhichOneof("kind") or ""


#: spades.v1.Event's kinds by field number.
_KIND_OF_FIELD = {
    field.number: field.name for field in events_pb2.Event.DESCRIPTOR.oneofs_by_name["kind"].fields
}


def _first_field_of_first_field(data: bytes, start: int) -> int:
    """The field number of the first field inside the message that is the first field (a
    length-delimited one) of ``data[start:]``, past an Event's note_sha256; 0 when it is not
    laid out so."""
    if data[start : start + 1] != b"\x0a":  # LogEntry.event = 1, length-delimited
        return 0
    length = read_varint(data, start + 1)  # the event's length
    if length is None or not length[0]:
        return 0  # (an empty event: what follows is the entry's next field)
    tag = read_varint(data, length[1])
    if tag is not None and tag[0] == _NOTE_SHA256_TAG:
        skipped = read_varint(data, tag[1])  # the commitment's length
        tag = None if skipped is None else read_varint(data, skipped[1] + skipped[0])
    return 0 if tag is None else tag[0] >> 3


#: The tag of Event.note_sha256 (4, length-delimited): the one field before an event's kind.
_NOTE_SHA256_TAG = 4 << 3 | 2


def decode(stored: StoredEvent) -> Entry:
    """The entry a stored row holds, written with the envelope or before it."""
    data = stored.data
    if data.startswith(ENVELOPE_MARKER):
        row = log_pb2.LogEntry.FromString(data[len(ENVELOPE_MARKER) :])
        message, action_id = row.event, row.action_id
        kept = row.secrets
        secrets = Secrets(
            kept.join_code_sha256,
            kept.seat_token_sha256,
            kept.substitute_token_sha256,
            kept.request_id_sha256,
            kept.note_key,
            kept.note,
        )
        if secrets == NO_SECRETS:
            secrets = NO_SECRETS  # one instance for the many rows with none
        seed, preset_deals = kept.seed, kept.preset_deals
    else:
        message = events_pb2.Event.FromString(data)
        legacy = log_pb2.LegacyEvent.FromString(data)
        action_id = message.action_id
        message.ClearField("action_id")
        # The secrets' old fields are unknown to spades.v1 now: never keep them in the message.
        message.DiscardUnknownFields()
        secrets = Secrets(
            legacy.table_created.join_code_sha256,
            legacy.seat_taken.seat_token_sha256,
            legacy.seat_substituted.substitute_token_sha256,
        )
        seed, preset_deals = legacy.table_created.seed, legacy.table_created.preset_deals
    event = protocol.event_from_proto(message)
    if isinstance(event, ev.TableCreated):
        event = dataclasses.replace(
            event,
            seed=seed or None,
            preset_deals=protocol.deals_from_proto(preset_deals, "preset_deals"),
        )
    return _entry(stored, event, message, action_id, secrets)


def _entry(
    stored: StoredEvent,
    event: ev.Event,
    message: events_pb2.Event,
    action_id: str,
    secrets: Secrets,
) -> Entry:
    message.sequence = stored.version
    message.time.seconds, message.time.nanos = divmod(int(stored.recorded_at * 1e9), 1_000_000_000)
    return Entry(
        table_id=stored.stream_id,
        sequence=stored.version,
        position=stored.position,
        recorded_at=stored.recorded_at,
        event=event,
        message=message,
        action_id=action_id,
        secrets=secrets,
    )
