"""What the wire says besides the protos, defined once for the SDK and the server: the metadata
keys of calls, and the names both give to the lobby's enum values.

>>> TABLE_STATUS_NAMES[lobby_pb2.TABLE_STATUS_PLAYING]
'playing'
>>> house_bot_kind(lobby_pb2.HOUSE_BOT_KIND_UNSPECIFIED)
'heuristic'
"""

from __future__ import annotations

from typing import Final

from spades.v1 import lobby_pb2

#: The metadata key carrying a seat token (Play, LeaveTable).
SEAT_TOKEN_METADATA: Final = "spades-seat-token"
#: The metadata key carrying the operator token (AdminService).
OPERATOR_TOKEN_METADATA: Final = "spades-operator-token"
#: The metadata key carrying an account's key, as ``Bearer <key>`` (AccountService, and in place
#: of a seat token for the seats the account holds).
AUTHORIZATION_METADATA: Final = "authorization"
#: With an account key, the table a Play, Seat or Act call is for.
TABLE_ID_METADATA: Final = "spades-table-id"
#: With an account key, the seat (``north``, ``east``, ...) when the account holds several.
SEAT_METADATA: Final = "spades-seat"

#: A table's status by name: "waiting", "playing" or "finished".
TABLE_STATUS_NAMES: Final = {
    lobby_pb2.TABLE_STATUS_WAITING: "waiting",
    lobby_pb2.TABLE_STATUS_PLAYING: "playing",
    lobby_pb2.TABLE_STATUS_FINISHED: "finished",
}
TABLE_STATUS_VALUES: Final = {name: value for value, name in TABLE_STATUS_NAMES.items()}

#: The kinds of house bot, by name.
HOUSE_BOT_KINDS: Final = {
    "random": lobby_pb2.HOUSE_BOT_KIND_RANDOM,
    "heuristic": lobby_pb2.HOUSE_BOT_KIND_HEURISTIC,
    "search": lobby_pb2.HOUSE_BOT_KIND_SEARCH,
}
#: The kind of house bot a request that names none gets.
DEFAULT_HOUSE_BOT_KIND: Final = "heuristic"
_HOUSE_BOT_KIND_NAMES: Final[dict[int, str]] = {
    int(value): name for name, value in HOUSE_BOT_KINDS.items()
}


def house_bot_kind(value: int) -> str | None:
    """The name of a house bot kind on the wire (unspecified: the default), None if unknown."""
    if value == lobby_pb2.HOUSE_BOT_KIND_UNSPECIFIED:
        return DEFAULT_HOUSE_BOT_KIND
    return _HOUSE_BOT_KIND_NAMES.get(value)
