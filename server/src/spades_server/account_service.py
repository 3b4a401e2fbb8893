"""AccountService: create an account, look one up, rotate and revoke its key.

A thin servicer over :class:`~spades_server.accounts.AccountStore`: who may call is settled
here (the registration setting, the account's Bearer key, the operator token), what is
appended is decided in :mod:`spades_server.accounts`.
"""

from __future__ import annotations

from typing import Any

import grpc
import structlog

from spades.v1 import account_pb2, account_pb2_grpc
from spades.wire import OPERATOR_TOKEN_METADATA
from spades_server import accounts, errors
from spades_server.accounts import Account, AccountStore
from spades_server.auth import OperatorGate, bearer_key_from, metadata_value

log = structlog.get_logger(__name__)
Context = grpc.aio.ServicerContext[Any, Any]

#: Who may create accounts (``--registration``): anyone, or only the operator.
REGISTRATION_CHOICES = ("open", "operator")


class AccountServicer(account_pb2_grpc.AccountServiceServicer):
    def __init__(self, store: AccountStore, operator: OperatorGate, registration: str) -> None:
        self._store = store
        self._operator = operator
        self._registration = registration

    async def CreateAccount(
        self, request: account_pb2.CreateAccountRequest, context: Context
    ) -> account_pb2.CreateAccountResponse:
        if self._registration == "operator":
            try:
                self._operator.check(context)
            except errors.RequestError as refusal:
                raise errors.RequestError(
                    refusal.code,
                    "registration on this server is for the operator only: " + refusal.reason,
                    reason_code="REGISTRATION_CLOSED",
                ) from None
        name = accounts.check_account_name(request.name)
        kind = accounts.check_kind(request.kind)
        account, key = await self._store.create(name, kind)
        log.info("account created", account_id=account.account_id, kind=accounts.KIND_NAMES[kind])
        return account_pb2.CreateAccountResponse(account=account.to_proto(), key=key)

    async def GetAccount(
        self, request: account_pb2.GetAccountRequest, context: Context
    ) -> account_pb2.GetAccountResponse:
        if bool(request.account_id) == bool(request.name):
            raise errors.RequestError(
                grpc.StatusCode.INVALID_ARGUMENT,
                "name the account by account_id or by name (one of the two)",
                reason_code="ACCOUNT_ID_OR_NAME",
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
        account, by_operator = await self._caller(request.account_id, context)
        key = accounts.new_key(account.account_id)
        account = await self._store.execute(
            account.account_id,
            lambda latest: accounts.decide_rotation(latest, key, by_operator=by_operator),
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

    async def _caller(self, account_id: str, context: Context) -> tuple[Account, bool]:
        """The account a key call is about, and whether the operator makes it: with
        ``account_id`` the caller must be the operator, without it the account (its key)."""
        if account_id:
            if metadata_value(context, OPERATOR_TOKEN_METADATA) is None:
                raise errors.RequestError(
                    grpc.StatusCode.PERMISSION_DENIED,
                    "only the operator names an account_id; an account sends its own key "
                    "(authorization: Bearer) and no account_id",
                    reason_code="OPERATOR_ONLY",
                )
            self._operator.check(context)
            return await self._store.load(account_id), True
        key = bearer_key_from(context)
        if key is None:
            raise errors.RequestError(
                grpc.StatusCode.UNAUTHENTICATED,
                "send the account's key as the 'authorization: Bearer <key>' metadata",
                reason_code="KEY_REQUIRED",
            )
        return await self._store.authenticate(key), False
