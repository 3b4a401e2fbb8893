"""Passwords of person accounts: checked for length, hashed with argon2id, verified.

argon2id (RFC 9106) through ``argon2-cffi``: memory-hard, so a stolen log is slow to guess at
on any hardware, and salted per password, so equal passwords do not show. The hash is a PHC
string (``$argon2id$v=19$m=...,t=...,p=...$salt$hash``) that carries its own parameters, so
stronger parameters later apply to new hashes while the old ones still verify. Hashing takes
tens of milliseconds of CPU on purpose: the API runs it off the event loop, and sign-ins are
rate limited (``spades_server.api.limits``). Why a password first and passkeys later:
docs/accounts.md ("People").

>>> hashed = hash_password("correct horse battery")
>>> hashed.startswith("$argon2id$"), verify_password(hashed, "correct horse battery")
(True, True)
>>> verify_password(hashed, "wrong horse")
False
"""

from __future__ import annotations

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from spades.reasons import Reason
from spades_server.domain import errors

MIN_PASSWORD = 8
MAX_PASSWORD = 256

#: argon2-cffi's defaults are RFC 9106's second recommended profile (argon2id, 64 MiB, t=3, p=4).
_HASHER = PasswordHasher()


def check_password(password: str) -> str:
    """The password as sent, or INVALID_ARGUMENT (PASSWORD_TOO_SHORT); never echoes it."""
    if len(password) < MIN_PASSWORD:
        raise errors.refuse(
            Reason.PASSWORD_TOO_SHORT,
            f"the password has {len(password)} characters; it needs at least {MIN_PASSWORD}",
            field="password",
        )
    return password


def hash_password(password: str) -> str:
    """The argon2id hash of ``password`` (a PHC string, with a fresh random salt)."""
    return _HASHER.hash(password)


def verify_password(password_hash: str, password: str) -> bool:
    """Whether ``password`` is the one ``password_hash`` was made from (constant time inside)."""
    try:
        return _HASHER.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False
