"""The codec registry: for each kind of stream, the one place its rows become entries and back.

Every row of the log is the envelope marker (:data:`ENVELOPE_MARKER`, room for a later format)
and a message of ``spades.server.v1`` (``log.proto``): a table's ``LogEntry`` (read by the
journal, :mod:`spades_server.store.journal`, which also reads the oldest rows' legacy format),
an account's ``AccountLogEntry``, a challenge's ``ChallengeLogEntry``, a tournament's (or the
tournament index's) ``TournamentLogEntry``, and a rating pool's ``PoolLogEntry``. The stores
write and read their rows here; a reader of any stream (the start-up check) asks
:func:`codec_of` which codec reads it.

>>> codec_of(stream_kinds.ACCOUNT_PREFIX + "0a1b").kind, codec_of("0a1b2c").kind
('account', 'table')
>>> row = encode_challenge(log_pb2.ChallengeLogEntry(request_id_sha256=b"r"))
>>> CHALLENGE.decode(StoredEvent("challenge-c1", 1, 1, 0.0, row)).request_id_sha256
b'r'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from spades.v1 import account_pb2, rating_pb2, tournament_pb2
from spades_server.domain.accounts import AccountEntry
from spades_server.domain.tournaments import TournamentEntry
from spades_server.eventlog.base import StoredEvent
from spades_server.store import journal, stream_kinds
from spades_server.store.journal import ENVELOPE_MARKER
from spades_server.v1 import log_pb2


@dataclass(frozen=True)
class Codec:
    """How the rows of one kind of stream are read."""

    #: The stream kind's name (``table``, ``account``, ``challenge``, ``tournament``, ``pool``).
    kind: str
    #: Its streams' prefix (a table's stream has none: its id is lowercase hex).
    prefix: str
    #: The entry a row holds; ValueError (or protobuf's DecodeError) when it holds none.
    decode: Callable[[StoredEvent], object]


def _payload(data: bytes, what: str) -> bytes:
    if not data.startswith(ENVELOPE_MARKER):
        raise ValueError(f"{what} row starts with the envelope marker")
    return data[len(ENVELOPE_MARKER) :]


# ---------------------------------------------------------------------------------- accounts


def encode_account(
    event: account_pb2.AccountEvent,
    key_sha256: bytes = b"",
    request_id_sha256: bytes = b"",
    house: bool = False,
    password_hash: str = "",
    session_token_sha256: bytes = b"",
) -> bytes:
    row = log_pb2.AccountLogEntry(
        event=event,
        key_sha256=key_sha256,
        request_id_sha256=request_id_sha256,
        house=house,
        password_hash=password_hash,
        session_token_sha256=session_token_sha256,
    )
    return ENVELOPE_MARKER + row.SerializeToString()


def decode_account(stored: StoredEvent) -> AccountEntry:
    """The entry an account row holds (ValueError when it is not one)."""
    row = log_pb2.AccountLogEntry.FromString(_payload(stored.data, "an account"))
    message = row.event
    message.sequence = stored.version
    message.time.FromNanoseconds(int(stored.recorded_at * 1e9))
    return AccountEntry(
        account_id=stored.stream_id.removeprefix(stream_kinds.ACCOUNT_PREFIX),
        sequence=stored.version,
        position=stored.position,
        recorded_at=stored.recorded_at,
        message=message,
        key_sha256=row.key_sha256,
        request_id_sha256=row.request_id_sha256,
        house=row.house,
        password_hash=row.password_hash,
        session_token_sha256=row.session_token_sha256,
    )


# ---------------------------------------------------------------------------------- challenges


def encode_challenge(entry: log_pb2.ChallengeLogEntry) -> bytes:
    return ENVELOPE_MARKER + entry.SerializeToString()


def decode_challenge(stored: StoredEvent) -> log_pb2.ChallengeLogEntry:
    """The entry a challenge row holds (ValueError when it is not one)."""
    return log_pb2.ChallengeLogEntry.FromString(_payload(stored.data, "a challenge"))


# ---------------------------------------------------------------------------------- tournaments


def encode_tournament(
    event: tournament_pb2.TournamentEvent, seed: bytes = b"", request_digest: bytes = b""
) -> bytes:
    row = log_pb2.TournamentLogEntry(event=event, seed=seed, request_id_sha256=request_digest)
    return ENVELOPE_MARKER + row.SerializeToString()


def encode_tournament_listed(tournament_id: str) -> bytes:
    """The index stream's row listing a tournament."""
    row = log_pb2.TournamentLogEntry(listed_tournament_id=tournament_id)
    return ENVELOPE_MARKER + row.SerializeToString()


def decode_tournament_row(data: bytes) -> log_pb2.TournamentLogEntry:
    """A tournament or index row (ValueError when it is not one)."""
    return log_pb2.TournamentLogEntry.FromString(_payload(data, "a tournament"))


def decode_tournament(stored: StoredEvent) -> TournamentEntry:
    row = decode_tournament_row(stored.data)
    message = row.event
    message.sequence = stored.version
    message.time.FromNanoseconds(int(stored.recorded_at * 1e9))
    return TournamentEntry(
        stored.version,
        stored.position,
        stored.recorded_at,
        message,
        row.seed,
        row.request_id_sha256,
    )


# ---------------------------------------------------------------------------------- rating pools


def encode_pool(match: rating_pb2.MatchRated) -> bytes:
    return ENVELOPE_MARKER + log_pb2.PoolLogEntry(match_rated=match).SerializeToString()


def decode_pool(stored: StoredEvent) -> rating_pb2.MatchRated:
    """The rated match a pool's row holds, its time the log's (ValueError if not one)."""
    payload = _payload(stored.data, "a pool's")
    match = log_pb2.PoolLogEntry.FromString(payload).match_rated
    match.time.FromNanoseconds(int(stored.recorded_at * 1e9))
    return match


# ---------------------------------------------------------------------------------- the registry

TABLE = Codec("table", "", journal.decode)
ACCOUNT = Codec("account", stream_kinds.ACCOUNT_PREFIX, decode_account)
CHALLENGE = Codec("challenge", stream_kinds.CHALLENGE_PREFIX, decode_challenge)
#: The index stream's rows are tournament rows too (they list a tournament, and hold no event).
TOURNAMENT = Codec(
    "tournament", stream_kinds.TOURNAMENT_PREFIX, lambda stored: decode_tournament_row(stored.data)
)
POOL = Codec("pool", stream_kinds.POOL_PREFIX, decode_pool)
#: Every codec but the table's, by its streams' prefix.
_BY_PREFIX = {codec.prefix: codec for codec in (ACCOUNT, CHALLENGE, TOURNAMENT, POOL)}


def codec_of(stream_id: str) -> Codec:
    """The codec of the stream ``stream_id`` (a table's when no other kind's prefix starts it)."""
    for prefix, codec in _BY_PREFIX.items():
        if stream_id.startswith(prefix):
            return codec
    return TABLE
