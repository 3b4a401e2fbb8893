"""Who may call: every check of a seat token, a substitute's token and the operator token.

A seat token rides in the ``spades-seat-token`` metadata and names its table (see
:mod:`spades_server.domain.tokens`); the table's log holds only its digest (in the journal's
secrets), compared in constant time. The operator token (``--operator-token``) rides in the
``spades-operator-token`` metadata and is compared the same way, as SHA-256 digests, so its
length does not show either."""

from __future__ import annotations

import urllib.parse
from typing import Any

import grpc

from spades.engine import SEAT_NAMES
from spades.reasons import Reason
from spades.wire import (
    AUTHORIZATION_METADATA,
    OPERATOR_TOKEN_METADATA,
    SEAT_METADATA,
    SEAT_TOKEN_METADATA,
    TABLE_ID_METADATA,
)
from spades_server.domain import errors, tokens
from spades_server.domain.seats import NOT_VALID
from spades_server.domain.tables import Table
from spades_server.store.account_store import AccountStore
from spades_server.store.table_store import TableStore

Context = grpc.aio.ServicerContext[Any, Any]


def metadata_value(context: Context, key: str) -> str | None:
    """The value of metadata ``key`` the caller sent (the first, if sent twice), or None."""
    for name, value in context.invocation_metadata() or ():
        if name == key:
            return value if isinstance(value, str) else value.decode(errors="replace")
    return None


#: Metadata key with a browser's address, set by the web port's gateway (web.py) on the calls
#: it forwards, and trusted only on those (:func:`peer_of`).
WEB_PEER_KEY = "spades-web-peer"


def peer_of(context: Context) -> str:
    """The caller's address as ``context.peer()`` gives it, or, for a call the gateway forwarded
    over the server's private Unix socket, the browser's address the gateway recorded. A client
    on the network cannot reach that socket, so it cannot claim another address this way."""
    peer: str = context.peer()
    if peer.startswith("unix:"):
        for key, value in context.invocation_metadata() or ():
            if key == WEB_PEER_KEY and isinstance(value, str):
                return value
    return peer


def client_address(peer: str) -> str:
    """The client's address (no port) from ``context.peer()``: ``ipv4:1.2.3.4:5678`` ->
    ``1.2.3.4``, ``ipv6:[::1]:5678`` -> ``::1``; anything else (unix sockets) as it is."""
    scheme, _, rest = peer.partition(":")
    if scheme in ("ipv4", "ipv6"):
        host = urllib.parse.unquote(rest).rpartition(":")[0]
        return host.removeprefix("[").removesuffix("]") or peer
    return peer


def caller_address(context: Context) -> str:
    """The caller's address, no port (the browser's, for a call through the web port)."""
    return client_address(peer_of(context))


def bearer_key_from(context: Context) -> str | None:
    """The account key of an ``authorization: Bearer <key>`` metadata, or None when none."""
    value = metadata_value(context, AUTHORIZATION_METADATA)
    if value is None:
        return None
    scheme, _, key = value.strip().partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise errors.refuse(
            Reason.KEY_NOT_BEARER, "the authorization metadata must be 'Bearer <account key>'"
        )
    return key.strip()


def seat_token_from(context: Context) -> str:
    """The caller's seat token, or UNAUTHENTICATED."""
    token = metadata_value(context, SEAT_TOKEN_METADATA)
    if token is None:
        raise errors.refuse(
            Reason.SEAT_TOKEN_MISSING,
            f"send your seat token in the {SEAT_TOKEN_METADATA!r} metadata",
        )
    return token


async def authenticate(store: TableStore, token: str) -> tuple[Table, int]:
    """The table and seat a seat token is good for (a player's, or a substitute's while it
    plays the seat), or UNAUTHENTICATED."""
    table_id = tokens.table_of_token(token)
    if table_id is None:
        raise errors.refuse(Reason.SEAT_TOKEN_INVALID, "this is not a seat token")
    try:
        table = await store.load(table_id)
    except errors.RequestError:
        raise errors.refuse(Reason.SEAT_TOKEN_INVALID, "this seat token is not valid") from None
    for seat, token_digest in table.seat_token_digests.items():
        if tokens.matches(token, token_digest):
            return table, seat
    # A substitute (a house bot playing for an absent player) while the substitution lasts.
    for seat, token_digest in table.substitute_token_digests.items():
        if tokens.matches(token, token_digest):
            return table, seat
    raise errors.refuse(Reason.SEAT_TOKEN_INVALID, NOT_VALID)


async def seat_holder(
    store: TableStore, accounts: AccountStore | None, context: Context
) -> tuple[Table, int, bytes]:
    """The table, seat and holder (the seat token's digest) a Play, Seat or Act call is for:
    from its seat token, or from an account key with the ``spades-table-id`` metadata (and
    ``spades-seat`` when the account holds several seats there)."""
    token = metadata_value(context, SEAT_TOKEN_METADATA)
    key = bearer_key_from(context) if token is None and accounts is not None else None
    if key is None or accounts is None:
        token = seat_token_from(context)
        table, seat = await authenticate(store, token)
        return table, seat, tokens.digest(token)
    account = await accounts.authenticate(key, address=caller_address(context))
    table_id = metadata_value(context, TABLE_ID_METADATA)
    if not table_id:
        raise errors.refuse(
            Reason.TABLE_ID_REQUIRED,
            f"with an account key, name the table in the {TABLE_ID_METADATA!r} metadata",
        )
    table = await store.load(table_id)
    held = sorted(
        seat for seat, holder in table.seat_accounts.items() if holder == account.account_id
    )
    wanted = metadata_value(context, SEAT_METADATA)
    if wanted:
        names = [name.lower() for name in SEAT_NAMES[: table.state.players_count]]
        if wanted.strip().lower() not in names:
            raise errors.refuse(
                Reason.NO_SUCH_SEAT, f"{SEAT_METADATA!r} must be one of {', '.join(names)}"
            )
        seat = names.index(wanted.strip().lower())
        if seat not in held:
            raise errors.refuse(
                Reason.SEAT_NOT_HELD,
                f"your account does not hold the {names[seat]} seat at this table",
            )
    elif len(held) == 1:
        seat = held[0]
    elif not held:
        raise errors.refuse(Reason.SEAT_NOT_HELD, "your account holds no seat at this table")
    else:
        raise errors.refuse(
            Reason.SEAT_REQUIRED,
            f"your account holds several seats here: name one in the {SEAT_METADATA!r} metadata",
        )
    return table, seat, table.seat_token_digests[seat]


class OperatorGate:
    """Checks the operator token of a call."""

    def __init__(self, operator_token: str) -> None:
        self._digest = tokens.digest(operator_token) if operator_token else b""

    def check(self, context: Context) -> None:
        if not self._digest:
            raise errors.refuse(
                Reason.ADMIN_DISABLED, "no operator token is configured, so admin calls are refused"
            )
        sent = metadata_value(context, OPERATOR_TOKEN_METADATA)
        if not sent:
            raise errors.refuse(
                Reason.OPERATOR_TOKEN_MISSING,
                f"send the operator token in the {OPERATOR_TOKEN_METADATA!r} metadata",
            )
        if not tokens.matches(sent, self._digest):
            # A wrong credential is UNAUTHENTICATED (gRPC's guide), as a wrong seat token is.
            raise errors.refuse(Reason.OPERATOR_TOKEN_INVALID, "that is not the operator token")
