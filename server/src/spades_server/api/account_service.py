"""AccountService: create an account, look one up, rotate and revoke its key.

A thin servicer over :class:`~spades_server.store.account_store.AccountStore`: who may call is
settled here (the registration setting, the account's Bearer key, the operator token), what is
appended is decided in :mod:`spades_server.domain.accounts`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import grpc
import structlog

from spades.reasons import Reason
from spades.v1 import account_pb2, account_pb2_grpc
from spades.wire import OPERATOR_TOKEN_METADATA
from spades_server.api.auth import (
    OperatorGate,
    bearer_key_from,
    caller_address,
    metadata_value,
)
from spades_server.api.limits import Limits
from spades_server.api.people import PeopleCalls
from spades_server.domain import accounts, errors, tokens
from spades_server.domain.accounts import Account
from spades_server.domain.checks import check_request_id
from spades_server.eventlog.base import LogClosed
from spades_server.processes.presence import Presence
from spades_server.store import account_store, codecs
from spades_server.store.account_store import AccountStore

log = structlog.get_logger(__name__)
Context = grpc.aio.ServicerContext[Any, Any]

#: Who may create accounts (``--registration``): anyone, or only the operator.
REGISTRATION_CHOICES = ("open", "operator")


class AccountServicer(PeopleCalls, account_pb2_grpc.AccountServiceServicer):
    def __init__(
        self,
        store: AccountStore,
        operator: OperatorGate,
        registration: str,
        shutdown: asyncio.Event | None = None,
        limits: Limits | None = None,
        presence: Presence | None = None,
    ) -> None:
        self._store = store
        self._limits = limits or Limits()
        self._operator = operator
        self._registration = registration
        #: Set when the server stops: open Connect streams end with UNAVAILABLE (reconnect).
        self._shutdown = shutdown or asyncio.Event()
        #: Each account's open Connect stream: set when a newer one replaces it.
        self._streams: dict[str, asyncio.Event] = {}
        #: Where a bot's open stream is recorded (PresenceService.ListOnlineBots).
        self._presence = presence

    def _check_registration(self, context: Context) -> None:
        """REGISTRATION_CLOSED unless anyone may register, or the caller is the operator."""
        if self._registration == "operator":
            try:
                self._operator.check(context)
            except errors.RequestError as refusal:
                raise errors.refuse(
                    Reason.REGISTRATION_CLOSED,
                    "registration on this server is for the operator only: " + refusal.reason,
                ) from None

    async def CreateAccount(
        self, request: account_pb2.CreateAccountRequest, context: Context
    ) -> account_pb2.CreateAccountResponse:
        self._check_registration(context)
        name = accounts.check_account_name(request.name)
        accounts.check_not_reserved(name)
        kind = accounts.check_kind(request.kind)
        request_id = check_request_id(request.request_id)
        account, key = await self._store.create(name, kind, request_id)
        log.info("account created", account_id=account.account_id, kind=accounts.KIND_NAMES[kind])
        return account_pb2.CreateAccountResponse(account=account.to_proto(), key=key)

    async def GetAccount(
        self, request: account_pb2.GetAccountRequest, context: Context
    ) -> account_pb2.GetAccountResponse:
        if bool(request.account_id) == bool(request.name):
            raise errors.refuse(
                Reason.ACCOUNT_ID_OR_NAME,
                "name the account by account_id or by name (one of the two)",
            )
        if request.account_id:
            account = await self._store.load(request.account_id)
        else:
            try:
                account = await self._store.load(accounts.account_id_for(request.name.strip()))
            except errors.RequestError:
                raise accounts.account_not_found(f"named {request.name.strip()!r}") from None
        return account_pb2.GetAccountResponse(account=account.to_proto())

    async def RotateKey(
        self, request: account_pb2.RotateKeyRequest, context: Context
    ) -> account_pb2.RotateKeyResponse:
        request_id = check_request_id(request.request_id)
        request_digest = tokens.digest(request_id) if request_id else b""
        account, session_id, who = await self._target(request.account_id, context, request_digest)
        by_operator = who == "operator"
        # A bot's owner, and a person signed in with its password, may issue a key even after
        # a revocation, as the operator may.
        by_owner = who == "owner" or (who == "self" and bool(session_id))
        key = accounts.new_key(account.account_id, request_id, tokens.KEY_BY_ROTATE_KEY)
        account = await self._store.execute(
            account.account_id,
            lambda latest: accounts.decide_rotation(
                latest,
                key,
                by_operator=by_operator,
                request_digest=request_digest,
                by_owner=by_owner,
            ),
        )
        log.info("account key rotated", account_id=account.account_id, by_operator=by_operator)
        return account_pb2.RotateKeyResponse(account=account.to_proto(), key=key)

    async def RevokeKey(
        self, request: account_pb2.RevokeKeyRequest, context: Context
    ) -> account_pb2.RevokeKeyResponse:
        account, _, who = await self._target(request.account_id, context)
        by_operator = who == "operator"
        account = await self._store.execute(
            account.account_id,
            lambda latest: accounts.decide_revocation(
                latest, by_operator=by_operator, by_owner=who == "owner"
            ),
        )
        log.info("account key revoked", account_id=account.account_id, by_operator=by_operator)
        return account_pb2.RevokeKeyResponse(account=account.to_proto())

    async def SetManifest(
        self, request: account_pb2.SetManifestRequest, context: Context
    ) -> account_pb2.SetManifestResponse:
        account, _, _ = await self._target(request.account_id, context)
        manifest = request.manifest
        account = await self._store.execute(
            account.account_id, lambda latest: accounts.decide_manifest(latest, manifest)
        )
        log.info("manifest set", account_id=account.account_id)
        return account_pb2.SetManifestResponse(account=account.to_proto())

    async def Connect(
        self, request: account_pb2.ConnectRequest, context: Context
    ) -> AsyncIterator[account_pb2.ConnectResponse]:
        key = bearer_key_from(context)
        if key is None:
            raise _key_required()
        account, session_id = await self._store.caller(key, address=caller_address(context))
        if request.after_sequence > account.version:
            raise errors.refuse(
                Reason.SEQUENCE_AHEAD,
                f"after_sequence {request.after_sequence} is past the account's last event "
                f"({account.version})",
            )
        account_id, opened_at = account.account_id, account.version
        superseded = asyncio.Event()
        previous = self._streams.get(account_id)
        if previous is not None:
            previous.set()
        self._streams[account_id] = superseded
        rows = self._store.log.subscribe(
            account_store.stream_of(account_id), request.after_sequence
        )
        stop = asyncio.ensure_future(superseded.wait())
        shutdown = asyncio.ensure_future(self._shutdown.wait())
        next_row: asyncio.Future[Any] | None = None
        online = self._presence is not None and account.bot
        try:
            if online:
                await self._presence.opened(account_id)  # type: ignore[union-attr]
            while True:
                next_row = asyncio.ensure_future(anext(rows))
                await asyncio.wait({next_row, stop, shutdown}, return_when=asyncio.FIRST_COMPLETED)
                if shutdown.done():
                    next_row.cancel()
                    raise errors.refuse(
                        Reason.SHUTTING_DOWN,
                        "the server is shutting down; reconnect and resume from your last sequence",
                    )
                if stop.done():
                    next_row.cancel()
                    raise errors.RequestError(
                        grpc.StatusCode.ABORTED,
                        "a newer Connect stream for this account took over, so this one is closed",
                        reason_code=Reason.STREAM_REPLACED,
                    )
                try:
                    entry = codecs.decode_account(next_row.result())
                except LogClosed:
                    raise errors.refuse(
                        Reason.SHUTTING_DOWN, "the server is shutting down; reconnect"
                    ) from None
                yield account_pb2.ConnectResponse(event=entry.message)
                kind = entry.message.WhichOneof("kind")
                if session_id and entry.sequence > opened_at and kind == "session_ended":
                    if entry.message.session_ended.session_id == session_id:
                        raise errors.refuse(
                            Reason.SESSION_REVOKED,
                            "the session this stream was opened with was revoked (signed out)",
                        )
                elif entry.sequence > opened_at and kind in ("key_issued", "key_revoked"):
                    raise errors.refuse(
                        Reason.KEY_REVOKED,
                        "the key this stream was opened with was replaced or revoked",
                    )
        finally:
            if next_row is not None:
                next_row.cancel()  # a client that went away leaves it waiting on the log
            stop.cancel()
            shutdown.cancel()
            with contextlib.suppress(Exception):
                await rows.aclose()
            if self._streams.get(account_id) is superseded:
                del self._streams[account_id]
            if online:
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await self._presence.closed(account_id)  # type: ignore[union-attr]

    async def _target(
        self, account_id: str, context: Context, retried_rotation: bytes = b""
    ) -> tuple[Account, str, str]:
        """The account a call is about, the caller's session id (empty: the call is not made
        with a session) and who makes it: ``"self"`` (its key or session, no ``account_id``, or
        none), ``"owner"`` (a person naming a bot it owns) or ``"operator"`` (the operator
        token, naming ``account_id``). For the retry of the RotateKey with the request id digest
        ``retried_rotation``, the key that call replaced is accepted as the account's."""
        if account_id and metadata_value(context, OPERATOR_TOKEN_METADATA) is not None:
            self._operator.check(context)
            return await self._store.load(account_id), "", "operator"
        key = bearer_key_from(context)
        if key is None:
            if account_id:
                raise errors.refuse(
                    Reason.OPERATOR_ONLY,
                    "only the operator, or a bot's owner (its session or key as "
                    "'authorization: Bearer'), names an account_id",
                )
            raise _key_required()
        caller, session_id = await self._store.caller(
            key, retried_rotation, address=caller_address(context)
        )
        if not account_id:
            return caller, session_id, "self"
        if account_id == caller.account_id or caller.bot:
            raise errors.refuse(
                Reason.OPERATOR_ONLY,
                "an account_id names another account (the operator's, or a person's for its "
                "bots); for your own account send no account_id",
            )
        target = await self._store.load(account_id)
        if target.owner_account_id != caller.account_id:
            raise errors.refuse(
                Reason.NOT_BOT_OWNER,
                f"{target.name!r} is not one of your bots",
                metadata={"account_id": account_id},
            )
        return target, session_id, "owner"


def _key_required() -> errors.RequestError:
    return errors.refuse(
        Reason.KEY_REQUIRED, "send the account's key as the 'authorization: Bearer <key>' metadata"
    )
