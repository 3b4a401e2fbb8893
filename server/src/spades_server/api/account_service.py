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
from spades_server.api.auth import OperatorGate, bearer_key_from, metadata_value
from spades_server.domain import accounts, errors, tokens
from spades_server.domain.accounts import Account
from spades_server.domain.checks import check_request_id
from spades_server.eventlog.base import LogClosed
from spades_server.store import account_store, codecs
from spades_server.store.account_store import AccountStore

log = structlog.get_logger(__name__)
Context = grpc.aio.ServicerContext[Any, Any]

#: Who may create accounts (``--registration``): anyone, or only the operator.
REGISTRATION_CHOICES = ("open", "operator")


class AccountServicer(account_pb2_grpc.AccountServiceServicer):
    def __init__(
        self,
        store: AccountStore,
        operator: OperatorGate,
        registration: str,
        shutdown: asyncio.Event | None = None,
    ) -> None:
        self._store = store
        self._operator = operator
        self._registration = registration
        #: Set when the server stops: open Connect streams end with UNAVAILABLE (reconnect).
        self._shutdown = shutdown or asyncio.Event()
        #: Each account's open Connect stream: set when a newer one replaces it.
        self._streams: dict[str, asyncio.Event] = {}

    async def CreateAccount(
        self, request: account_pb2.CreateAccountRequest, context: Context
    ) -> account_pb2.CreateAccountResponse:
        if self._registration == "operator":
            try:
                self._operator.check(context)
            except errors.RequestError as refusal:
                raise errors.refuse(
                    Reason.REGISTRATION_CLOSED,
                    "registration on this server is for the operator only: " + refusal.reason,
                ) from None
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
        account, by_operator = await self._caller(request.account_id, context, request_digest)
        key = accounts.new_key(account.account_id, request_id, tokens.KEY_BY_ROTATE_KEY)
        account = await self._store.execute(
            account.account_id,
            lambda latest: accounts.decide_rotation(
                latest, key, by_operator=by_operator, request_digest=request_digest
            ),
        )
        log.info("account key rotated", account_id=account.account_id, by_operator=by_operator)
        return account_pb2.RotateKeyResponse(account=account.to_proto(), key=key)

    async def RevokeKey(
        self, request: account_pb2.RevokeKeyRequest, context: Context
    ) -> account_pb2.RevokeKeyResponse:
        account, by_operator = await self._caller(request.account_id, context)
        account = await self._store.execute(
            account.account_id,
            lambda latest: accounts.decide_revocation(latest, by_operator=by_operator),
        )
        log.info("account key revoked", account_id=account.account_id, by_operator=by_operator)
        return account_pb2.RevokeKeyResponse(account=account.to_proto())

    async def SetManifest(
        self, request: account_pb2.SetManifestRequest, context: Context
    ) -> account_pb2.SetManifestResponse:
        account, _ = await self._caller("", context)
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
        account = await self._store.authenticate(key)
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
        try:
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
                if entry.sequence > opened_at and kind in ("key_issued", "key_revoked"):
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

    async def _caller(
        self, account_id: str, context: Context, retried_rotation: bytes = b""
    ) -> tuple[Account, bool]:
        """The account a key call is about, and whether the operator makes it: with
        ``account_id`` the caller must be the operator, without it the account (its key, or
        for the retry of the RotateKey with the request id digest ``retried_rotation`` the key
        it replaced)."""
        if account_id:
            if metadata_value(context, OPERATOR_TOKEN_METADATA) is None:
                raise errors.refuse(
                    Reason.OPERATOR_ONLY,
                    "only the operator names an account_id; an account sends its own key "
                    "(authorization: Bearer) and no account_id",
                )
            self._operator.check(context)
            return await self._store.load(account_id), True
        key = bearer_key_from(context)
        if key is None:
            raise _key_required()
        return await self._store.authenticate(key, retried_rotation), False


def _key_required() -> errors.RequestError:
    return errors.refuse(
        Reason.KEY_REQUIRED, "send the account's key as the 'authorization: Bearer <key>' metadata"
    )
