"""Identifiers and secrets: table ids, seat tokens, join codes, and the operator token's strength.

A seat token is ``<table id>.<secret>`` with 192 random bits of secret. The server keeps only
its SHA-256 (beside the SeatTaken event, in the journal's secrets: never in a public message)
and compares in constant time (:mod:`spades_server.api.auth`).
A token is good for one seat of one table.

A call made with a client request id (JoinTable, QuickMatch, CreateTable, AddHouseBot,
CreateAccount, RotateKey) must
answer a retry with the same outcome, even from another replica or after a crash between the
commit and the reply. The log keeps no token in the clear, so what a retry needs is derived
from the request id, which only the caller knows: the seat token is an HMAC keyed by the
request id over the table id, a created table's id and join code likewise, and so the secret
of an account key a CreateAccount or RotateKey with a request id issues. The log keeps only
the request id's SHA-256 (to find the earlier outcome) and the token's SHA-256 (to check the
derived token is the one that took the seat), so a copy of the log yields neither. The price:
a request id is as secret as the token it stands for, and must be as unguessable (checked for
length here; a UUID's 122 random bits are the documented choice).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets

from spades import notes

TOKEN_SEPARATOR = "."
_JOIN_CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"


def new_table_id() -> str:
    """A random, unguessable table id (80 bits, lowercase hex)."""
    return secrets.token_hex(10)


def new_seat_token(table_id: str) -> str:
    return f"{table_id}{TOKEN_SEPARATOR}{secrets.token_urlsafe(24)}"


def new_join_code() -> str:
    """Ten characters a person can read aloud (no 0/O, 1/I): about 50 bits."""
    return "".join(secrets.choice(_JOIN_CODE_ALPHABET) for _ in range(10))


#: A client request id: 16..64 letters, digits, '-' or '_' (a UUID, with or without dashes).
REQUEST_ID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{16,64}$")


def _derived(request_id: str, purpose: str, *parts: str) -> bytes:
    message = "\x00".join((purpose, *parts)).encode()
    return hmac.new(request_id.encode(), message, hashlib.sha256).digest()


def request_seat_token(request_id: str, table_id: str) -> str:
    """The seat token of the seat a join with ``request_id`` takes at ``table_id``: the same
    on every retry, on every replica (one request id takes at most one seat of a table).

    >>> token = request_seat_token("0123456789abcdef0123", "t1")
    >>> token == request_seat_token("0123456789abcdef0123", "t1"), table_of_token(token)
    (True, 't1')
    """
    secret = base64.urlsafe_b64encode(_derived(request_id, "seat token", table_id)).decode()
    return f"{table_id}{TOKEN_SEPARATOR}{secret[:32]}"


#: The calls a request id derives a table id for (two kinds of call with one id: two tables).
CREATED_BY_CREATE_TABLE = "create table"
CREATED_BY_QUICK_MATCH = "quick match"
CREATED_BY_ADMIN = "create table with deals"


def request_table_id(request_id: str, purpose: str) -> str:
    """The id of the table a call with ``request_id`` creates (``purpose`` keeps CreateTable's
    and QuickMatch's apart): a retry appends to the same, already created, stream and is refused
    by the log's expected version, so the table is made once across replicas."""
    return _derived(request_id, "table id", purpose).hex()[:20]


def request_join_code(request_id: str, table_id: str) -> str:
    """The join code of the private table a CreateTable with ``request_id`` made."""
    raw = _derived(request_id, "join code", table_id)
    # 32 letters: each byte's low five bits pick one, without bias.
    return "".join(_JOIN_CODE_ALPHABET[byte % 32] for byte in raw[:10])


#: The calls a request id derives an account key for (a creation's key is not a rotation's).
KEY_BY_CREATE_ACCOUNT = "create account"
KEY_BY_ROTATE_KEY = "rotate key"


def request_key_secret(request_id: str, account_id: str, purpose: str) -> str:
    """The secret of the key a call with ``request_id`` issues to ``account_id`` (``purpose``
    keeps CreateAccount's and RotateKey's apart): the same on every retry, on every replica.

    >>> one = request_key_secret("0123456789abcdef0123", "a1", KEY_BY_ROTATE_KEY)
    >>> one == request_key_secret("0123456789abcdef0123", "a1", KEY_BY_ROTATE_KEY), len(one)
    (True, 32)
    """
    raw = _derived(request_id, "account key", purpose, account_id)
    return base64.urlsafe_b64encode(raw).decode()[:32]


def digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode()).digest()


def matches(secret: str, expected_digest: bytes) -> bool:
    """Whether ``secret`` hashes to ``expected_digest``, compared in constant time."""
    return hmac.compare_digest(digest(secret), expected_digest)


def table_of_token(token: str) -> str | None:
    """The table id a seat token names, or None when it is not shaped like a token."""
    table_id, separator, secret = token.partition(TOKEN_SEPARATOR)
    if not separator or not table_id or len(secret) < 16:
        return None
    return table_id


#: An operator token shorter than this is refused: it guards every table (AdminService).
MIN_OPERATOR_TOKEN_LENGTH = 16
#: Placeholders shipped in deploy/ (compose.yaml, kubernetes/secret.yaml): a server started
#: with one was never configured, and anyone who read the repository knows the token.
SHIPPED_OPERATOR_TOKENS = frozenset({"change-me-operator-token", "REPLACE_ME_OPERATOR_TOKEN"})
#: Words that say a token is a placeholder someone meant to replace.
_PLACEHOLDER_WORDS = ("change", "replace", "placeholder", "example", "password", "secret", "token")


def operator_token_refusal(token: str) -> str | None:
    """Why the server must not start with ``token`` as its operator token, or None (empty:
    admin is off, which is fine)."""
    if not token:
        return None
    if token in SHIPPED_OPERATOR_TOKENS:
        return (
            f"the operator token is the shipped placeholder {token!r}; set your own, "
            "e.g. SPADES_OPERATOR_TOKEN=$(openssl rand -hex 32)"
        )
    if len(token) < MIN_OPERATOR_TOKEN_LENGTH:
        return (
            f"the operator token has {len(token)} characters; it needs at least "
            f"{MIN_OPERATOR_TOKEN_LENGTH} (e.g. openssl rand -hex 32)"
        )
    return None


def operator_token_warning(token: str) -> str | None:
    """A warning for a token long enough but that looks like a placeholder, or None."""
    lowered = token.lower()
    if len(set(token)) <= 2 or any(word in lowered for word in _PLACEHOLDER_WORDS):
        return "the operator token looks like a placeholder; prefer openssl rand -hex 32"
    return None


def new_note_key() -> bytes:
    """A table's key for the salts of its sealed notes (:mod:`spades.notes`): 256 random bits,
    kept in the log and revealed in the record when the match ends."""
    return secrets.token_bytes(notes.NOTE_KEY_BYTES)
