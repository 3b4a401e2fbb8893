"""Who holds a seat: the checks of a seat's token or holder against the table, pure.

The token itself rides in a request's metadata (read by :mod:`spades_server.api.auth`); here
only the table's record of who holds the seat decides."""

from __future__ import annotations

from spades.reasons import Reason
from spades_server.domain import errors, tokens
from spades_server.domain.tables import Table

GIVEN_UP = "this seat was given up, so its token is no longer valid"


TAKEN_BACK = "the seat's player took it back, so this substitute's token is no longer valid"


NOT_VALID = "this seat token is not valid (or its seat was given up)"


def check_player(table: Table, seat: int, token: str) -> None:
    """UNAUTHENTICATED unless ``token`` is the seat's own player's (not a substitute's)."""
    if not tokens.matches(token, table.seat_token_digests.get(seat, b"")):
        raise errors.refuse(Reason.SEAT_TOKEN_INVALID, NOT_VALID)


def check_holder(table: Table, seat: int, holder: bytes, substitute: bool) -> None:
    """UNAUTHENTICATED unless ``holder`` (a token digest) may still act for the seat: its own
    player's, or (for a substitute's stream) the substitute's while the substitution lasts."""
    if substitute:
        if not table.is_substitute(seat, holder):
            raise errors.refuse(Reason.SEAT_TOKEN_INVALID, TAKEN_BACK)
    elif not table.is_player(seat, holder):
        raise errors.refuse(Reason.SEAT_TOKEN_INVALID, GIVEN_UP)
