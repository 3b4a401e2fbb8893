"""Identifiers and secrets: table ids, seat tokens, join codes, and the operator token's strength.

A seat token is ``<table id>.<secret>`` with 192 random bits of secret. The server keeps only
its SHA-256 (beside the SeatTaken event, in the journal's secrets: never in a public message)
and compares in constant time (:mod:`spades_server.auth`).
A token is good for one seat of one table.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

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
