"""Checks of request fields the services share: names, rule sets and seats.

Each turns a malformed field into INVALID_ARGUMENT naming it, before any decision is made.
"""

from __future__ import annotations

import re

import grpc

from spades import protocol
from spades.engine import InvalidRules, Rules
from spades.v1 import cards_pb2, rules_pb2
from spades_server import errors, tokens

MAX_TABLE_NAME = 64
MAX_PLAYER_NAME = 32
_PRINTABLE = re.compile(r"^[^\x00-\x1f\x7f]+$")


def check_name(name: str, what: str, limit: int) -> str:
    """``name`` without surrounding spaces: 1 to ``limit`` printable characters."""
    cleaned = name.strip()
    if not 1 <= len(cleaned) <= limit or not _PRINTABLE.match(cleaned):
        raise errors.invalid(f"{what} must be 1 to {limit} printable characters")
    return cleaned


def rules_of(message: rules_pb2.RuleSet) -> Rules:
    """The rule set a request asks for."""
    try:
        return protocol.rules_from_proto(message)
    except InvalidRules as error:
        raise errors.invalid(f"rules.{error.field}: {error.reason}") from error


def seat_or_any(seat: cards_pb2.Seat.ValueType) -> int | None:
    """The seat a request names; None when it names none (any free seat)."""
    if seat == cards_pb2.SEAT_UNSPECIFIED:
        return None
    if seat not in cards_pb2.Seat.values():
        raise errors.invalid(f"there is no seat {seat}")
    return protocol.seat_from_proto(seat)


def check_request_id(request_id: str) -> str:
    """A call's client request id: empty (none) or 16..64 letters, digits, '-' or '_'."""
    if request_id and not tokens.REQUEST_ID_PATTERN.match(request_id):
        raise errors.RequestError(
            grpc.StatusCode.INVALID_ARGUMENT,
            "request_id must be 16 to 64 letters, digits, '-' or '_' (a fresh UUID is right)",
            reason_code="REQUEST_ID_INVALID",
        )
    return request_id
