"""Checks of request fields the services share: lengths, names, rule sets and seats.

Each turns a malformed field into INVALID_ARGUMENT naming it, before any decision is made.
Every string and bytes field of a ``spades.v1`` request has a maximum length
(:func:`max_length`, documented on the field in the .proto: a test keeps the two in sync);
:func:`check_lengths` refuses a longer one before anything else reads the request, without
echoing it back.
"""

from __future__ import annotations

import functools
import re
from typing import Final

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from spades import notes, protocol
from spades.engine import InvalidRules, Rules
from spades.reasons import Reason
from spades.v1 import cards_pb2, rules_pb2
from spades_server.domain import errors, tokens

MAX_TABLE_NAME = 64
MAX_PLAYER_NAME = 32
#: Ids the server gives out are shorter (a table id is 20 characters); this bounds any id.
MAX_ID = 64
#: The longest value of each string or bytes field, by field name, in characters (bytes for a
#: bytes field); a field not named here may hold DEFAULT_MAX_LENGTH.
MAX_LENGTHS: Final[dict[str, int]] = {
    "table_id": MAX_ID,
    "action_id": MAX_ID,
    "request_id": MAX_ID,
    "name": MAX_TABLE_NAME,
    "player_name": MAX_PLAYER_NAME,
    "join_code": 32,
    "page_token": 32,
    "seed": 32,
    "challenge_id": MAX_ID,
    "account_id": MAX_ID,
    "tournament_id": MAX_ID,
    "session_id": MAX_ID,
    "opponent_ids": MAX_ID,
    #: ActionRequest.note, in bytes of UTF-8.
    "note": notes.MAX_NOTE_BYTES,
}
DEFAULT_MAX_LENGTH = 256
#: What a field is, for a person, where its name alone does not say.
_LABELS: Final = {"name": "the table name", "player_name": "the player name"}
_PRINTABLE = re.compile(r"^[^\x00-\x1f\x7f]+$")
_STRING = FieldDescriptor.TYPE_STRING
_BYTES = FieldDescriptor.TYPE_BYTES
_MESSAGE = FieldDescriptor.TYPE_MESSAGE


def max_length(field_name: str) -> int:
    """The longest value a request's string or bytes field ``field_name`` may hold."""
    return MAX_LENGTHS.get(field_name, DEFAULT_MAX_LENGTH)


def check_lengths(request: Message, path: str = "") -> None:
    """Refuse (FIELD_TOO_LONG) the first string or bytes field of ``request``, at any depth,
    longer than its :func:`max_length`; the error names the field and its length only."""
    for field, value in request.ListFields():
        repeated = field.is_repeated
        values = value if repeated else (value,)
        kind = field.type
        if kind in (_STRING, _BYTES):
            limit = max_length(field.name)
            for item in values:
                if len(item) > limit:
                    where = f"{path}{field.name}"
                    unit = "characters" if kind == _STRING else "bytes"
                    label = f" ({_LABELS[field.name]})" if field.name in _LABELS else ""
                    raise errors.refuse(
                        Reason.FIELD_TOO_LONG,
                        f"{where}{label} is {len(item)} {unit} long; at most {limit} are allowed",
                        field=where,
                        metadata={"field": where, "max_length": str(limit)},
                    )
        elif kind == _MESSAGE and _holds_text(field.message_type):
            where = f"{path}{field.name}"
            for index, item in enumerate(values):
                check_lengths(item, f"{where}[{index}]." if repeated else f"{where}.")


@functools.cache
def _holds_text(message: Descriptor | None) -> bool:
    """Whether a message type has a string or bytes field at any depth (cards, for example,
    have none, so a request's thousands of cards are not walked)."""
    if message is None:
        return False
    seen: set[str] = set()
    pending = [message]
    while pending:
        current = pending.pop()
        if current.full_name in seen:
            continue
        seen.add(current.full_name)
        for field in current.fields:
            if field.type in (_STRING, _BYTES):
                return True
            if field.type == _MESSAGE and field.message_type is not None:
                pending.append(field.message_type)
    return False


def check_note(note: bytes, field: str = "note") -> bytes:
    """An action's sealed note: UTF-8 text (INVALID_NOTE), its length checked by
    :func:`check_lengths` before; the error never echoes the note."""
    try:
        note.decode("utf-8")
    except UnicodeDecodeError as error:
        raise errors.refuse(
            Reason.INVALID_NOTE,
            f"a note must be UTF-8 text; byte {error.start} is not",
            field=field,
        ) from None
    return note


def check_name(name: str, what: str, limit: int, field: str) -> str:
    """``name`` without surrounding spaces: 1 to ``limit`` printable characters."""
    cleaned = name.strip()
    if not 1 <= len(cleaned) <= limit or not _PRINTABLE.match(cleaned):
        raise errors.refuse(
            Reason.INVALID_NAME, f"{what} must be 1 to {limit} printable characters", field=field
        )
    return cleaned


def require_id(value: str, field: str = "table_id") -> str:
    """``value``, or MISSING_FIELD when it is empty."""
    if not value:
        raise errors.refuse(Reason.MISSING_FIELD, f"{field} is required", field=field)
    return value


def rules_of(message: rules_pb2.RuleSet) -> Rules:
    """The rule set a request asks for."""
    try:
        return protocol.rules_from_proto(message)
    except InvalidRules as error:
        raise errors.from_invalid_rules(error, "rules.") from error


def seat_or_any(seat: cards_pb2.Seat.ValueType) -> int | None:
    """The seat a request names; None when it names none (any free seat)."""
    if seat == cards_pb2.SEAT_UNSPECIFIED:
        return None
    if seat not in cards_pb2.Seat.values():
        raise errors.refuse(Reason.NO_SUCH_SEAT, f"there is no seat {seat}", field="seat")
    return protocol.seat_from_proto(seat)


def check_request_id(request_id: str) -> str:
    """A call's client request id: empty (none) or 16..64 letters, digits, '-' or '_'."""
    if request_id and not tokens.REQUEST_ID_PATTERN.match(request_id):
        raise errors.refuse(
            Reason.REQUEST_ID_INVALID,
            "request_id must be 16 to 64 letters, digits, '-' or '_' (a fresh UUID is right)",
        )
    return request_id
