"""The one catalogue of reason codes: why a request was refused, in a word a program acts on.

Every refusal the engine or the server makes carries one of these stable ``UPPER_SNAKE`` codes
(on the wire: ``google.rpc.ErrorInfo.reason``, domain ``spades.v1``, beside the human reason),
and each code goes with exactly one gRPC status. This module imports nothing from the engine or
from grpc, so the engine, the server, the SDK and the docs test all read the same table;
``docs/errors.md`` is that table for people (a test keeps the two in sync).

To add a code (any module's refusal, the accounts' for example): add a member here with its
status and a one-line "when", add the row to ``docs/errors.md``, and raise it by name
(``RequestError(..., reason_code=Reason.ACCOUNT_NOT_FOUND)`` in the server). A code is never
renamed or given another status once released: programs match on it.

>>> Reason.MUST_FOLLOW_SUIT.status, Reason.MUST_FOLLOW_SUIT.when
('FAILED_PRECONDITION', 'a card off the led suit while the hand holds that suit')
>>> Reason.of("RATE_LIMITED").status  # the code a client read from ErrorInfo.reason
'RESOURCE_EXHAUSTED'
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

#: The domain of every ErrorInfo this service sends.
DOMAIN: Final = "spades.v1"

# The gRPC status names a code may go with (grpc.StatusCode member names).
_INVALID = "INVALID_ARGUMENT"
_PRECONDITION = "FAILED_PRECONDITION"
_NOT_FOUND = "NOT_FOUND"
_ABORTED = "ABORTED"
_OUT_OF_RANGE = "OUT_OF_RANGE"
_DENIED = "PERMISSION_DENIED"
_UNAUTHENTICATED = "UNAUTHENTICATED"
_EXHAUSTED = "RESOURCE_EXHAUSTED"
_UNAVAILABLE = "UNAVAILABLE"
_ALREADY_EXISTS = "ALREADY_EXISTS"


class Reason(StrEnum):
    """A reason code; ``status`` is its gRPC status name, ``when`` says when it is given."""

    status: str
    when: str

    def __new__(cls, code: str, status: str, when: str) -> Reason:
        member = str.__new__(cls, code)
        member._value_ = code
        member.status = status
        member.when = when
        return member

    @classmethod
    def of(cls, code: str) -> Reason | None:
        """The member named ``code`` (an ``ErrorInfo.reason``), None for a code this version
        of the catalogue does not know (a newer server's)."""
        return cls.__members__.get(code)

    # -- input no rule set could accept (checked before anything else) ----------------------
    MISSING_FIELD = "MISSING_FIELD", _INVALID, "a required field is empty"
    FIELD_TOO_LONG = (
        "FIELD_TOO_LONG",
        _INVALID,
        "a string, id or bytes field is over its documented maximum length",
    )
    INVALID_NOTE = (
        "INVALID_NOTE",
        _INVALID,
        "an action's sealed note is not UTF-8 text",
    )
    INVALID_NAME = (
        "INVALID_NAME",
        _INVALID,
        "a table or player name is empty or holds control characters",
    )
    MALFORMED_REQUEST = (
        "MALFORMED_REQUEST",
        _INVALID,
        "the request's bytes do not parse as the method's message",
    )
    INVALID_ACTION = (
        "INVALID_ACTION",
        _INVALID,
        "an action message the engine cannot read (no kind, a bad card)",
    )
    IMPOSSIBLE_BID = "IMPOSSIBLE_BID", _INVALID, "a bid of more tricks than any rule set deals"
    IMPOSSIBLE_PASS = "IMPOSSIBLE_PASS", _INVALID, "a card pass that is not two different cards"
    INVALID_RULES = "INVALID_RULES", _INVALID, "a rule set that cannot be played"
    INVALID_DEALS = "INVALID_DEALS", _INVALID, "preset deals that do not deal the rule set's deck"
    INVALID_SEED = "INVALID_SEED", _INVALID, "a seed that is not 32 bytes"
    TOO_MANY_DEALS = "TOO_MANY_DEALS", _INVALID, "more preset deals than a table takes"
    NO_SUCH_SEAT = "NO_SUCH_SEAT", _INVALID, "a seat the table does not have"
    INVALID_PAGE_SIZE = "INVALID_PAGE_SIZE", _INVALID, "a page size out of its range"
    INVALID_PAGE_TOKEN = "INVALID_PAGE_TOKEN", _INVALID, "a page token this server did not give out"
    PAGE_TOKEN_MISMATCH = (
        "PAGE_TOKEN_MISMATCH",
        _INVALID,
        "a page token of another listing (another account or other filters)",
    )
    INVALID_GAMES_FILTER = (
        "INVALID_GAMES_FILTER",
        _INVALID,
        "a ListGames filter it does not have, or an opponent that is the account itself",
    )
    UNKNOWN_HOUSE_BOT = "UNKNOWN_HOUSE_BOT", _INVALID, "a house bot kind this server does not have"
    REQUEST_ID_INVALID = (
        "REQUEST_ID_INVALID",
        _INVALID,
        "a request_id that is not 16 to 64 letters, digits, '-' or '_'",
    )
    REQUEST_ID_REUSED = (
        "REQUEST_ID_REUSED",
        _INVALID,
        "a request_id already used for another call",
    )
    START_EXPECTED = "START_EXPECTED", _INVALID, "a Play stream whose first message is not `start`"
    START_AGAIN = "START_AGAIN", _INVALID, "a second `start` on a Play stream (ignored)"
    EMPTY_MESSAGE = (
        "EMPTY_MESSAGE",
        _INVALID,
        "a Play stream message with neither `start` nor `action`",
    )
    CONFLICTING_START = (
        "CONFLICTING_START",
        _INVALID,
        "a stream asked to start both after a sequence and at the latest one",
    )
    # -- the table is not where the request needs it ----------------------------------------
    NOT_YOUR_TURN = "NOT_YOUR_TURN", _PRECONDITION, "a seat acts when it is another seat's turn"
    WRONG_PHASE = "WRONG_PHASE", _PRECONDITION, "an action of another kind than the phase waits for"
    NO_ONE_TO_ACT = "NO_ONE_TO_ACT", _PRECONDITION, "a turn action when no seat is on turn"
    MATCH_NOT_STARTED = "MATCH_NOT_STARTED", _PRECONDITION, "an action before every seat is taken"
    MATCH_STARTED = (
        "MATCH_STARTED",
        _PRECONDITION,
        "a seat taken or left once the match has started, or has ended",
    )
    MATCH_OVER = (
        "MATCH_OVER",
        _PRECONDITION,
        "an action or a close once the match has ended (a seat taken or left: MATCH_STARTED)",
    )
    SEAT_TAKEN = "SEAT_TAKEN", _PRECONDITION, "joining a seat someone holds"
    TABLE_FULL = "TABLE_FULL", _PRECONDITION, "joining a table whose seats are all taken"
    SEAT_EMPTY = "SEAT_EMPTY", _PRECONDITION, "leaving a seat no one holds"
    SEAT_SUBSTITUTED = (
        "SEAT_SUBSTITUTED",
        _PRECONDITION,
        "the player acts while a house bot plays the seat",
    )
    NOT_SUBSTITUTED = "NOT_SUBSTITUTED", _PRECONDITION, "taking back a seat no substitute plays"
    CARD_NOT_HELD = (
        "CARD_NOT_HELD",
        _PRECONDITION,
        "a card (played or passed) that is not in the hand",
    )
    MUST_FOLLOW_SUIT = (
        "MUST_FOLLOW_SUIT",
        _PRECONDITION,
        "a card off the led suit while the hand holds that suit",
    )
    MUST_LEAD_TWO_OF_CLUBS = (
        "MUST_LEAD_TWO_OF_CLUBS",
        _PRECONDITION,
        "a first lead other than the 2♣ by its holder",
    )
    SPADES_NOT_BROKEN = (
        "SPADES_NOT_BROKEN",
        _PRECONDITION,
        "a spade led before spades are broken, holding another suit",
    )
    BID_OUT_OF_RANGE = (
        "BID_OUT_OF_RANGE",
        _PRECONDITION,
        "a bid of more tricks than this table deals",
    )
    NIL_NOT_ALLOWED = (
        "NIL_NOT_ALLOWED",
        _PRECONDITION,
        "a Nil bid where the rules or the partner's bid forbid it",
    )
    BID_BELOW_TEAM_MINIMUM = (
        "BID_BELOW_TEAM_MINIMUM",
        _PRECONDITION,
        "a bid that leaves the team under its minimum bid",
    )
    BLIND_NIL_NOT_OPEN = (
        "BLIND_NIL_NOT_OPEN",
        _PRECONDITION,
        "Blind Nil when the partner already bid Blind Nil",
    )
    NO_EXTENSION = (
        "NO_EXTENSION",
        _PRECONDITION,
        "claiming an extension at a table whose clock has none",
    )
    EXTENSION_ALREADY_CLAIMED = (
        "EXTENSION_ALREADY_CLAIMED",
        _PRECONDITION,
        "claiming this turn's extension a second time",
    )
    NO_AUTOMATIC_ACTION = (
        "NO_AUTOMATIC_ACTION",
        _PRECONDITION,
        "the clock acts when no automatic action answers",
    )
    NO_SEED = "NO_SEED", _PRECONDITION, "dealing from a view, which has no seed"
    HOUSE_BOTS_OFF = (
        "HOUSE_BOTS_OFF",
        _PRECONDITION,
        "asking for a house bot on a server that runs none",
    )
    # -- races: retry after reading the table again -----------------------------------------
    STALE_SEQUENCE = (
        "STALE_SEQUENCE",
        _ABORTED,
        "an action answering a sequence the table has moved past",
    )
    STREAM_REPLACED = (
        "STREAM_REPLACED",
        _ABORTED,
        "a newer stream for the same seat and token took over",
    )
    TABLE_BUSY = "TABLE_BUSY", _ABORTED, "the table kept changing under the request"
    SEQUENCE_AHEAD = "SEQUENCE_AHEAD", _OUT_OF_RANGE, "a sequence past the table's latest"
    TABLE_NOT_FOUND = "TABLE_NOT_FOUND", _NOT_FOUND, "a table id no table has"
    REQUEST_SEAT_GIVEN_UP = (
        "REQUEST_SEAT_GIVEN_UP",
        _PRECONDITION,
        "a retried join whose seat was left or released since",
    )
    # -- accounts and ratings ----------------------------------------------------------------
    UNKNOWN_ACCOUNT_KIND = (
        "UNKNOWN_ACCOUNT_KIND",
        _INVALID,
        "an account kind that is neither bot nor person",
    )
    ACCOUNT_ID_OR_NAME = (
        "ACCOUNT_ID_OR_NAME",
        _INVALID,
        "GetAccount naming both an account_id and a name, or neither",
    )
    TABLE_ID_REQUIRED = (
        "TABLE_ID_REQUIRED",
        _INVALID,
        "a seat call with an account key and no spades-table-id metadata",
    )
    SEAT_REQUIRED = (
        "SEAT_REQUIRED",
        _INVALID,
        "an account key where the account holds several seats, and no spades-seat metadata",
    )
    NAME_TAKEN = (
        "NAME_TAKEN",
        _ALREADY_EXISTS,
        "an account name that, ignoring case, already has an account",
    )
    NAME_RESERVED = (
        "NAME_RESERVED",
        _INVALID,
        "an account name starting with 'House ', which the server keeps for its house bots",
    )
    ACCOUNT_NOT_FOUND = (
        "ACCOUNT_NOT_FOUND",
        _NOT_FOUND,
        "an account id or name no account has",
    )
    POOL_NOT_FOUND = (
        "POOL_NOT_FOUND",
        _NOT_FOUND,
        "a rating pool this server does not have",
    )
    LEADERBOARD_KIND_REQUIRED = (
        "LEADERBOARD_KIND_REQUIRED",
        _INVALID,
        "ListLeaderboard without a kind on a server with separate boards for bots and people",
    )
    KEY_REQUIRED = (
        "KEY_REQUIRED",
        _UNAUTHENTICATED,
        "an account call without the authorization metadata",
    )
    KEY_NOT_BEARER = (
        "KEY_NOT_BEARER",
        _UNAUTHENTICATED,
        "authorization metadata that is not 'Bearer <key>'",
    )
    KEY_NOT_VALID = (
        "KEY_NOT_VALID",
        _UNAUTHENTICATED,
        "a string that is not an account key, or not this account's",
    )
    KEY_REVOKED = (
        "KEY_REVOKED",
        _UNAUTHENTICATED,
        "a rotated or revoked account key (also ends a Connect stream opened with it)",
    )
    REGISTRATION_CLOSED = (
        "REGISTRATION_CLOSED",
        _UNAUTHENTICATED,
        "CreateAccount without the operator token on a server whose registration is operator-only",
    )
    PASSWORD_TOO_SHORT = (
        "PASSWORD_TOO_SHORT",
        _INVALID,
        "a SignUp password shorter than 8 characters",
    )
    WRONG_PASSWORD = (
        "WRONG_PASSWORD",
        _UNAUTHENTICATED,
        "SignIn with a password that is not the account's",
    )
    NO_PASSWORD = (
        "NO_PASSWORD",
        _PRECONDITION,
        "SignIn to an account that has no password (a bot, or a person made with a key)",
    )
    SESSION_NOT_VALID = (
        "SESSION_NOT_VALID",
        _UNAUTHENTICATED,
        "a session token that is not one, or not the account's",
    )
    SESSION_REVOKED = (
        "SESSION_REVOKED",
        _UNAUTHENTICATED,
        "a session that was revoked (signed out)",
    )
    SESSION_EXPIRED = (
        "SESSION_EXPIRED",
        _UNAUTHENTICATED,
        "a session past its expiry",
    )
    SESSION_NOT_FOUND = (
        "SESSION_NOT_FOUND",
        _NOT_FOUND,
        "RevokeSession naming a session the account never had",
    )
    SESSION_REQUIRED = (
        "SESSION_REQUIRED",
        _INVALID,
        "RevokeSession without a session_id, made with an account key (no current session)",
    )
    TOO_MANY_SIGN_INS = (
        "TOO_MANY_SIGN_INS",
        _EXHAUSTED,
        "too many sign-ins or sign-ups for an account or an address: wait the RetryInfo delay",
    )
    BOTS_FOR_PEOPLE = (
        "BOTS_FOR_PEOPLE",
        _DENIED,
        "CreateBot or ListBots by a bot account (only a person owns bots)",
    )
    NOT_BOT_OWNER = (
        "NOT_BOT_OWNER",
        _DENIED,
        "a call naming an account_id (a bot) that the calling person does not own",
    )
    OPERATOR_ONLY = (
        "OPERATOR_ONLY",
        _DENIED,
        "naming an account_id on a call only the operator may make for another account",
    )
    SEAT_NOT_HELD = (
        "SEAT_NOT_HELD",
        _DENIED,
        "an account key for a seat, or a table, where the account holds none",
    )
    RATED_NEEDS_ACCOUNT = (
        "RATED_NEEDS_ACCOUNT",
        _DENIED,
        "an anonymous join at a rated table, or the rated queue without an account key",
    )
    ACCOUNT_ON_BOTH_SIDES = (
        "ACCOUNT_ON_BOTH_SIDES",
        _PRECONDITION,
        "an account taking a seat of the other side at a rated table",
    )
    RULES_NOT_RATED = (
        "RULES_NOT_RATED",
        _PRECONDITION,
        "a rated table with rules of no rating pool",
    )
    ACCOUNT_CONTENDED = (
        "ACCOUNT_CONTENDED",
        _ABORTED,
        "the account kept changing under the request",
    )
    POOL_CONTENDED = (
        "POOL_CONTENDED",
        _ABORTED,
        "the rating pool kept changing under the request",
    )
    # -- manifests and challenges ------------------------------------------------------------
    INVALID_MANIFEST = (
        "INVALID_MANIFEST",
        _INVALID,
        "a rule-set manifest with a player count, target score bound or option that is not one",
    )
    MANIFEST_FOR_BOTS = (
        "MANIFEST_FOR_BOTS",
        _PRECONDITION,
        "SetManifest by a person's account (a person plays any rules)",
    )
    RULES_NOT_DECLARED = (
        "RULES_NOT_DECLARED",
        _PRECONDITION,
        "seating a bot (challenge, rated queue) at rules outside its manifest",
    )
    SERIES_NOT_DECLARED = (
        "SERIES_NOT_DECLARED",
        _PRECONDITION,
        "a challenge asking a bot for a longer series of matches than its manifest declares",
    )
    SERIES_LENGTH_OUT_OF_RANGE = (
        "SERIES_LENGTH_OUT_OF_RANGE",
        _INVALID,
        "a challenge's series_length over the maximum (99)",
    )
    CHALLENGE_SELF = (
        "CHALLENGE_SELF",
        _INVALID,
        "a challenge naming the challenger as an opponent",
    )
    CHALLENGE_OPPONENTS_INVALID = (
        "CHALLENGE_OPPONENTS_INVALID",
        _INVALID,
        "a challenge with no opponent, one named twice, or more than the table has seats for",
    )
    CHALLENGE_SEATING_INVALID = (
        "CHALLENGE_SEATING_INVALID",
        _INVALID,
        "a proposed seating that misses a seat, names one twice or seats a non-party",
    )
    CHALLENGE_EXPIRY_OUT_OF_RANGE = (
        "CHALLENGE_EXPIRY_OUT_OF_RANGE",
        _INVALID,
        "a challenge's expiry_seconds over the maximum",
    )
    BOT_CHALLENGES_PERSON = (
        "BOT_CHALLENGES_PERSON",
        _DENIED,
        "a bot account challenging a person (people challenge bots, not the other way round)",
    )
    CHALLENGE_NOT_ADDRESSED = (
        "CHALLENGE_NOT_ADDRESSED",
        _DENIED,
        "answering a challenge that does not name the caller as an opponent",
    )
    CHALLENGE_NOT_YOURS = (
        "CHALLENGE_NOT_YOURS",
        _DENIED,
        "cancelling a challenge another account made",
    )
    CHALLENGE_ALREADY_ANSWERED = (
        "CHALLENGE_ALREADY_ANSWERED",
        _PRECONDITION,
        "accepting or declining a challenge the caller has accepted already",
    )
    CHALLENGE_CLOSED = (
        "CHALLENGE_CLOSED",
        _PRECONDITION,
        "answering or cancelling a challenge that is accepted, declined, cancelled or expired",
    )
    CHALLENGE_NOT_FOUND = (
        "CHALLENGE_NOT_FOUND",
        _NOT_FOUND,
        "a challenge id no challenge has",
    )
    CHALLENGE_CONTENDED = (
        "CHALLENGE_CONTENDED",
        _ABORTED,
        "the challenge kept changing under the request",
    )
    TOURNAMENT_NOT_FOUND = (
        "TOURNAMENT_NOT_FOUND",
        _NOT_FOUND,
        "a tournament id no tournament has",
    )
    TOURNAMENT_STARTED = (
        "TOURNAMENT_STARTED",
        _PRECONDITION,
        "entering or withdrawing from a tournament that has started",
    )
    ALREADY_ENTERED = (
        "ALREADY_ENTERED",
        _ALREADY_EXISTS,
        "a second entry of an account in a tournament",
    )
    NOT_ENTERED = (
        "NOT_ENTERED",
        _PRECONDITION,
        "withdrawing from a tournament the account has not entered",
    )
    TOURNAMENT_FULL = (
        "TOURNAMENT_FULL",
        _PRECONDITION,
        "entering a tournament that has its 16 entrants",
    )
    INVALID_TOURNAMENT_SETTINGS = (
        "INVALID_TOURNAMENT_SETTINGS",
        _INVALID,
        "tournament settings out of range (format, boards, start, rules)",
    )
    ORGANISER_NOT_ALLOWED = (
        "ORGANISER_NOT_ALLOWED",
        _DENIED,
        "CreateTournament by an account on a server where only the operator organises",
    )
    TOURNAMENT_CONTENDED = (
        "TOURNAMENT_CONTENDED",
        _ABORTED,
        "the tournament kept changing under the request",
    )
    # -- analysis of finished tables --------------------------------------------------------
    TABLE_NOT_FINISHED = (
        "TABLE_NOT_FINISHED",
        _PRECONDITION,
        "analysing a table whose match is still on (a live table is never analysed)",
    )
    TOURNAMENT_NOT_FINISHED = (
        "TOURNAMENT_NOT_FINISHED",
        _PRECONDITION,
        "analysing a tournament that has not ended (its tables may still be live)",
    )
    ANALYSIS_WORLDS_TOO_MANY = (
        "ANALYSIS_WORLDS_TOO_MANY",
        _INVALID,
        "an analysis asking for more worlds per decision than the server's cap",
    )
    ANALYSIS_NOT_FOUND = (
        "ANALYSIS_NOT_FOUND",
        _NOT_FOUND,
        "GetAnalysis for a table with no analysis kept (AnalyseTable computes one)",
    )
    ANALYSIS_QUEUE_FULL = (
        "ANALYSIS_QUEUE_FULL",
        _EXHAUSTED,
        "as many analyses running or waiting as the server admits: wait the RetryInfo delay",
    )
    # -- who may call ------------------------------------------------------------------------
    SEAT_TOKEN_MISSING = (
        "SEAT_TOKEN_MISSING",
        _UNAUTHENTICATED,
        "a seat call without the spades-seat-token metadata",
    )
    SEAT_TOKEN_INVALID = (
        "SEAT_TOKEN_INVALID",
        _UNAUTHENTICATED,
        "a seat token that is not (or no longer) valid",
    )
    SEAT_TOKEN_OTHER_TABLE = (
        "SEAT_TOKEN_OTHER_TABLE",
        _DENIED,
        "a seat token sent with another table's id",
    )
    OPERATOR_TOKEN_MISSING = (
        "OPERATOR_TOKEN_MISSING",
        _UNAUTHENTICATED,
        "an admin call without the operator token",
    )
    OPERATOR_TOKEN_INVALID = (
        "OPERATOR_TOKEN_INVALID",
        _UNAUTHENTICATED,
        "an admin call with a wrong operator token",
    )
    ADMIN_DISABLED = (
        "ADMIN_DISABLED",
        _DENIED,
        "an admin call on a server with no operator token configured",
    )
    JOIN_CODE_REQUIRED = (
        "JOIN_CODE_REQUIRED",
        _DENIED,
        "joining a private table without its join code",
    )
    WRONG_JOIN_CODE = "WRONG_JOIN_CODE", _DENIED, "joining a private table with a wrong join code"
    SUBSTITUTE_MAY_NOT_CONCEDE = (
        "SUBSTITUTE_MAY_NOT_CONCEDE",
        _DENIED,
        "a substitute concedes for the seat's player",
    )
    # -- limits ------------------------------------------------------------------------------
    RATE_LIMITED = (
        "RATE_LIMITED",
        _EXHAUSTED,
        "too many actions or tables too fast: wait the RetryInfo delay",
    )
    TOO_MANY_STREAMS = (
        "TOO_MANY_STREAMS",
        _EXHAUSTED,
        "one more Play stream than a seat token may have open",
    )
    QUICK_MATCH_QUEUE_FULL = (
        "QUICK_MATCH_QUEUE_FULL",
        _EXHAUSTED,
        "one more player waiting from an address than allowed",
    )
    HOUSE_BOTS_BUSY = (
        "HOUSE_BOTS_BUSY",
        _EXHAUSTED,
        "the server already runs as many house bots as it may",
    )
    STREAM_NOT_READ = (
        "STREAM_NOT_READ",
        _EXHAUSTED,
        "a stream whose client stopped reading for too long",
    )
    CLIENT_STREAMING_UNSUPPORTED = (
        "CLIENT_STREAMING_UNSUPPORTED",
        "UNIMPLEMENTED",
        "a client-streaming method (Play) called over gRPC-Web: use Seat and Act",
    )
    # -- the server, not the request ---------------------------------------------------------
    LOG_UNAVAILABLE = (
        "LOG_UNAVAILABLE",
        _UNAVAILABLE,
        "the event log cannot be written or read now: retry",
    )
    SHUTTING_DOWN = (
        "SHUTTING_DOWN",
        _UNAVAILABLE,
        "the server is going away: reconnect (to another replica)",
    )
    LOG_DAMAGED = (
        "LOG_DAMAGED",
        "DATA_LOSS",
        "the log's events of this table are damaged (missing, undecodable or not replayable)",
    )


# A code is its own name on the wire (written out above so a reader can grep for it).
assert all(member.value == member.name for member in Reason), "a code must equal its name"

#: Every code, by name (what a docs test or a client reading ErrorInfo.reason looks up).
CODES: Final[frozenset[str]] = frozenset(member.name for member in Reason)
