"""Sessions: a person's bearer credential after signing in with its password.

A session token is ``sps.<account id>.<session id>.<secret>`` with 192 random bits of secret.
Like an account key it names its account (one stream read to check it) and is sent as
``authorization: Bearer <token>``; unlike a key it expires (``expires_at``, decided when it
is made), and a person has as many as it signs in, each listed and revoked on its own. The
account's stream keeps each session's id, times and sign-in address in public ``SessionStarted``
events, and its token's SHA-256 only in the server's private envelope, compared in constant
time. A session that was revoked is refused as revoked, one past its expiry as expired, any
other token as not valid: each with its own reason code.

>>> token = new_session_token("a1")
>>> session_of_token(token)[0], len(session_of_token(token)[1])
('a1', 16)
>>> session_of_token("spk.a1.secretsecretsecret") is None
True
"""

from __future__ import annotations

import hmac
import secrets

from spades.reasons import Reason
from spades.v1 import account_pb2
from spades_server.domain import errors, tokens
from spades_server.domain.accounts import Account, AccountDecided, SessionRecord
from spades_server.domain.tables import timestamp

#: Every session token starts with this (an account key starts with ``spk``).
SESSION_PREFIX = "sps"
#: How long a session works unless the operator says otherwise (``--session-days``).
DEFAULT_LIFETIME = 30 * 24 * 3600.0


def new_session_token(account_id: str) -> str:
    session_id = secrets.token_hex(8)
    return f"{SESSION_PREFIX}.{account_id}.{session_id}.{secrets.token_urlsafe(24)}"


def is_session_token(credential: str) -> bool:
    return credential.startswith(SESSION_PREFIX + ".")


def session_of_token(token: str) -> tuple[str, str] | None:
    """(account id, session id) a session token names, or None when it is not shaped like one."""
    parts = token.split(".")
    if len(parts) != 4 or parts[0] != SESSION_PREFIX or len(parts[3]) < 16:
        return None
    account_id, session_id = parts[1], parts[2]
    if not account_id or len(session_id) != 16:
        return None
    return account_id, session_id


def session_not_valid() -> errors.RequestError:
    return errors.refuse(Reason.SESSION_NOT_VALID, "this session token is not valid; sign in")


def check_session(account: Account, token: str, now: float) -> SessionRecord:
    """The session ``token`` is good for now, or UNAUTHENTICATED: SESSION_REVOKED (signed out or
    revoked), SESSION_EXPIRED, else SESSION_NOT_VALID."""
    named = session_of_token(token)
    session = account.sessions.get(named[1]) if named else None
    if session is None or not hmac.compare_digest(tokens.digest(token), session.token_sha256):
        raise session_not_valid()
    if session.ended:
        raise errors.refuse(
            Reason.SESSION_REVOKED, "this session was revoked (signed out); sign in again"
        )
    if now >= session.expires_at:
        raise errors.refuse(Reason.SESSION_EXPIRED, "this session has expired; sign in again")
    return session


def decide_sign_in(token: str, now: float, lifetime: float, address: str) -> AccountDecided:
    """A new session for ``token``, working until ``now + lifetime``."""
    named = session_of_token(token)
    assert named is not None, "a token made by new_session_token"
    session = account_pb2.Session(
        session_id=named[1], expire_time=timestamp(now + lifetime), last_address=address
    )
    started = account_pb2.SessionStarted(session=session)
    return AccountDecided(
        [(account_pb2.AccountEvent(session_started=started), b"", b"")],
        session_token_sha256=tokens.digest(token),
    )


def decide_session_end(
    account: Account, session_id: str, *, by_operator: bool
) -> AccountDecided | None:
    """End a session (nothing to do when it already ended); NOT_FOUND for a session the account
    never had."""
    session = account.sessions.get(session_id)
    if session is None:
        raise errors.refuse(
            Reason.SESSION_NOT_FOUND,
            f"this account has no session {session_id!r}",
            field="session_id",
        )
    if session.ended:
        return None
    ended = account_pb2.SessionEnded(session_id=session_id, by_operator=by_operator)
    return AccountDecided([(account_pb2.AccountEvent(session_ended=ended), b"", b"")])


def live_sessions(account: Account, now: float) -> list[SessionRecord]:
    """The sessions that still work, newest first."""
    live = [s for s in account.sessions.values() if not s.ended and now < s.expires_at]
    return sorted(live, key=lambda session: session.created_at, reverse=True)


def password_hash_of(account: Account) -> str:
    """The account's password hash, or FAILED_PRECONDITION (NO_PASSWORD) when it has none (a
    bot, or a person made with CreateAccount)."""
    if not account.password_hash:
        raise errors.refuse(
            Reason.NO_PASSWORD,
            f"{account.name!r} has no password (a bot, or an account made with a key): "
            "use its account key",
        )
    return account.password_hash


def decide_bot_owned(owner: Account, bot_id: str, name: str) -> AccountDecided | None:
    """Tell the person it owns a new bot (once: nothing when its stream has it already)."""
    if bot_id in owner.bots:
        return None
    created = account_pb2.BotCreated(account_id=bot_id, name=name)
    return AccountDecided([(account_pb2.AccountEvent(bot_created=created), b"", b"")])


def check_may_own_bots(owner: Account) -> None:
    """PERMISSION_DENIED (BOTS_FOR_PEOPLE) unless ``owner`` is a person."""
    if owner.bot:
        raise errors.refuse(
            Reason.BOTS_FOR_PEOPLE, "only a person account owns bots; sign in as a person"
        )
