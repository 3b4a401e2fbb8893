"""Identifiers and secrets: table ids, seat tokens and join codes.

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
