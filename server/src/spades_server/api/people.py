"""AccountService's calls for people: sign up, sign in, sessions, and the bots a person owns.

A mixin of :class:`~spades_server.api.account_service.AccountServicer`: each call checks who
may make it (the registration setting, a session or key as Bearer, the operator token, the
sign-in limits of :mod:`spades_server.api.limits`), then decides in
:mod:`spades_server.domain.sessions` and :mod:`spades_server.domain.passwords` through the
account store. Hashing a password takes tens of milliseconds of CPU, so it runs in a worker
thread, never on the event loop. Nothing secret is logged: a log line names the account and
the session's id, never a password, a token or a key.
"""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import structlog

from spades.reasons import Reason
from spades.v1 import account_pb2
from spades_server.api.auth import bearer_key_from, caller_address
from spades_server.api.limits import Limits
from spades_server.domain import accounts, errors, passwords, sessions
from spades_server.domain.accounts import Account
from spades_server.domain.checks import check_request_id
from spades_server.store.account_store import AccountStore

log = structlog.get_logger(__name__)
Context = grpc.aio.ServicerContext[Any, Any]

SECONDS_A_DAY = 24 * 3600.0


class PeopleCalls:
    """SignUp, SignIn, ListSessions, RevokeSession, CreateBot and ListBots."""

    _store: AccountStore
    _limits: Limits

    def _check_registration(self, context: Context) -> None:
        raise NotImplementedError  # the servicer's

    async def _target(self, account_id: str, context: Context) -> tuple[Account, str, str]:
        raise NotImplementedError  # the servicer's

    async def _start_session(
        self, account: Account, context: Context
    ) -> tuple[Account, account_pb2.Session, str]:
        token = sessions.new_session_token(account.account_id)
        lifetime = self._limits.settings.session_days * SECONDS_A_DAY
        address = caller_address(context)
        decided = sessions.decide_sign_in(token, self._store.clock.now(), lifetime, address)
        account = await self._store.execute(account.account_id, lambda _latest: decided)
        session_id = sessions.session_of_token(token)[1]  # type: ignore[index]
        log.info("signed in", account_id=account.account_id, session_id=session_id)
        return account, account.sessions[session_id].to_proto(current=True), token

    async def SignUp(
        self, request: account_pb2.SignUpRequest, context: Context
    ) -> account_pb2.SignUpResponse:
        self._check_registration(context)
        name = accounts.check_account_name(request.name)
        accounts.check_not_reserved(name)
        password = passwords.check_password(request.password)
        self._limits.check_sign_in(context)
        password_hash = await asyncio.to_thread(passwords.hash_password, password)
        account, _ = await self._store.create(
            name, account_pb2.ACCOUNT_KIND_PERSON, password_hash=password_hash
        )
        log.info("person signed up", account_id=account.account_id)
        account, session, token = await self._start_session(account, context)
        return account_pb2.SignUpResponse(
            account=account.to_proto(), session=session, session_token=token
        )

    async def SignIn(
        self, request: account_pb2.SignInRequest, context: Context
    ) -> account_pb2.SignInResponse:
        name = request.name.strip()
        if not name or not request.password:
            missing = "name" if not name else "password"
            raise errors.refuse(Reason.MISSING_FIELD, f"the {missing} is required", field=missing)
        account_id = accounts.account_id_for(name)
        # Counted before the account is looked up, so guessing names is limited too.
        self._limits.check_sign_in(context, account_id)
        try:
            account = await self._store.load(account_id)
        except errors.RequestError:
            raise accounts.account_not_found(f"named {name!r}") from None
        password_hash = sessions.password_hash_of(account)
        if not await asyncio.to_thread(passwords.verify_password, password_hash, request.password):
            log.info("sign-in refused: wrong password", account_id=account_id)
            raise errors.refuse(
                Reason.WRONG_PASSWORD, f"that password is not {account.name}'s", field="password"
            )
        account, session, token = await self._start_session(account, context)
        return account_pb2.SignInResponse(
            account=account.to_proto(), session=session, session_token=token
        )

    async def ListSessions(
        self, request: account_pb2.ListSessionsRequest, context: Context
    ) -> account_pb2.ListSessionsResponse:
        account, current, _ = await self._target(request.account_id, context)
        live = sessions.live_sessions(account, self._store.clock.now())
        uses = await self._store.session_uses(account.account_id)
        listed = []
        for session in live:
            shown = session.to_proto(current=session.session_id == current)
            used = uses.get(session.session_id)
            if used is not None and used.last_use_time.ToNanoseconds() > 0:
                shown.last_address = used.last_address
                shown.last_use_time.CopyFrom(used.last_use_time)
            listed.append(shown)
        return account_pb2.ListSessionsResponse(sessions=listed)

    async def RevokeSession(
        self, request: account_pb2.RevokeSessionRequest, context: Context
    ) -> account_pb2.RevokeSessionResponse:
        account, current, who = await self._target(request.account_id, context)
        session_id = request.session_id.strip() or current
        if not session_id:
            raise errors.refuse(
                Reason.SESSION_REQUIRED,
                "name the session to revoke (session_id): this call was not made with a session",
                field="session_id",
            )
        by_operator = who == "operator"
        await self._store.execute(
            account.account_id,
            lambda latest: sessions.decide_session_end(latest, session_id, by_operator=by_operator),
        )
        log.info("session revoked", account_id=account.account_id, session_id=session_id)
        return account_pb2.RevokeSessionResponse(session_id=session_id)

    async def CreateBot(
        self, request: account_pb2.CreateBotRequest, context: Context
    ) -> account_pb2.CreateBotResponse:
        owner = await self._signed_in(context)
        sessions.check_may_own_bots(owner)
        name = accounts.check_account_name(request.name)
        accounts.check_not_reserved(name)
        request_id = check_request_id(request.request_id)
        bot, key = await self._store.create(
            name, account_pb2.ACCOUNT_KIND_BOT, request_id, owner_account_id=owner.account_id
        )
        if bot.owner_account_id != owner.account_id:  # a retry's id, sent by someone else
            raise accounts.request_id_reused()
        # The bot's stream names its owner first; the owner's stream lists it then (a retry
        # with the request id adds it, should the server stop in between).
        await self._store.execute(
            owner.account_id,
            lambda latest: sessions.decide_bot_owned(latest, bot.account_id, bot.name),
        )
        log.info("bot created", account_id=bot.account_id, owner_account_id=owner.account_id)
        return account_pb2.CreateBotResponse(account=bot.to_proto(), key=key)

    async def ListBots(
        self, request: account_pb2.ListBotsRequest, context: Context
    ) -> account_pb2.ListBotsResponse:
        owner, _, _ = await self._target(request.account_id, context)
        sessions.check_may_own_bots(owner)
        bots = [await self._store.load(bot_id) for bot_id in owner.bots]
        return account_pb2.ListBotsResponse(bots=[bot.to_proto() for bot in bots])

    async def _signed_in(self, context: Context) -> Account:
        key = bearer_key_from(context)
        if key is None:
            raise errors.refuse(
                Reason.KEY_REQUIRED,
                "send your session token (or account key) as 'authorization: Bearer <token>'",
            )
        return await self._store.authenticate(key, address=caller_address(context))
