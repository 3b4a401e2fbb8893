"""The Spades client: an async client for every call, and a thin synchronous wrapper.

>>> import asyncio
>>> from spades.client import SpadesClient
>>> async def tables() -> None:  # doctest: +SKIP
...     async with SpadesClient("127.0.0.1:50051") as client:
...         for table in (await client.list_tables("waiting")).tables:
...             print(table.table_id, table.name, table.badges)
"""

from spades.client.accounts import (
    ACCOUNT_KINDS,
    AccountInfo,
    AccountKey,
    LeaderboardLine,
    LeaderboardPage,
    RatingInfo,
    SessionInfo,
    SignedIn,
    account_of_credential,
    rating_change_text,
)
from spades.client.admin import OPERATOR_TOKEN_METADATA, AdminClient, TableDetail
from spades.client.challenges import ChallengeInfo, ChallengeOpponent, ChallengePage, SeriesMatch
from spades.client.client import (
    DEFAULT_CHANNEL_OPTIONS,
    CreatedTable,
    HouseBotSeated,
    QueueWait,
    SeatInfo,
    SeatTicket,
    SpadesClient,
    TableInfo,
    TablePage,
    TableView,
    parse_seat,
)
from spades.client.connection import SeatConnection, new_action_id, new_request_id
from spades.client.errors import (
    Aborted,
    ActionRefused,
    AlreadyExists,
    ErrorDetails,
    FailedPrecondition,
    FieldViolation,
    InvalidArgument,
    NotFound,
    OutOfRange,
    PermissionDenied,
    ResourceExhausted,
    SpadesError,
    Unauthenticated,
    Unavailable,
    status_lost,
)
from spades.client.messages import (
    ActionResult,
    PlayMessage,
    Prompt,
    Snapshot,
    StreamEvent,
    WatchMessage,
)
from spades.client.presence import OnlineBot, OnlineBotsPage
from spades.client.sync import SyncSeatConnection, SyncSpadesClient
from spades.wire import HOUSE_BOT_KINDS, SEAT_TOKEN_METADATA

__all__ = [
    "ACCOUNT_KINDS",
    "DEFAULT_CHANNEL_OPTIONS",
    "HOUSE_BOT_KINDS",
    "OPERATOR_TOKEN_METADATA",
    "SEAT_TOKEN_METADATA",
    "Aborted",
    "AccountInfo",
    "AccountKey",
    "ActionRefused",
    "ActionResult",
    "AdminClient",
    "AlreadyExists",
    "ChallengeInfo",
    "ChallengeOpponent",
    "ChallengePage",
    "CreatedTable",
    "ErrorDetails",
    "FailedPrecondition",
    "FieldViolation",
    "HouseBotSeated",
    "InvalidArgument",
    "LeaderboardLine",
    "LeaderboardPage",
    "NotFound",
    "OnlineBot",
    "OnlineBotsPage",
    "OutOfRange",
    "PermissionDenied",
    "PlayMessage",
    "Prompt",
    "QueueWait",
    "RatingInfo",
    "ResourceExhausted",
    "SeatConnection",
    "SeatInfo",
    "SeatTicket",
    "SeriesMatch",
    "SessionInfo",
    "SignedIn",
    "Snapshot",
    "SpadesClient",
    "SpadesError",
    "StreamEvent",
    "SyncSeatConnection",
    "SyncSpadesClient",
    "TableDetail",
    "TableInfo",
    "TablePage",
    "TableView",
    "Unauthenticated",
    "Unavailable",
    "WatchMessage",
    "account_of_credential",
    "new_action_id",
    "new_request_id",
    "parse_seat",
    "rating_change_text",
    "status_lost",
]
