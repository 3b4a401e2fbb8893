"""The accounts' streams: load an account (cached, caught up from the log), decide and append.

Each account is one stream, ``account-<account id>``, of ``spades.server.v1.AccountLogEntry``
rows; the aggregate and its decisions are :mod:`spades_server.domain.accounts`."""

from __future__ import annotations

import dataclasses

import structlog

from spades.reasons import Reason
from spades.v1 import account_pb2
from spades_server.domain import errors, sessions, tokens
from spades_server.domain.accounts import (
    Account,
    AccountDecided,
    account_id_for,
    account_not_found,
    account_of_key,
    created_before,
    decide_creation,
    decide_house_creation,
    key_not_valid,
    new_key,
    request_claim_key,
    request_id_reused,
)
from spades_server.domain.tables import timestamp
from spades_server.eventlog.base import (
    EventLog,
    LogClosed,
    LogUnavailable,
    ProjectionRow,
    StoredEvent,
    VersionConflict,
)
from spades_server.ops.clocks import SYSTEM_CLOCK, Clock
from spades_server.store import stream_kinds as streams
from spades_server.store.codecs import decode_account, encode_account
from spades_server.store.repository import (
    AggregateKind,
    AggregateStore,
    Contended,
    as_stored,
    log_unavailable,
)

log = structlog.get_logger(__name__)

#: Where a session's last use is kept: the log's projection rows ``session-use/<account id>``,
#: one per session (its last address and time), written at most every
#: ``session_use_interval`` seconds per session and replica. Not events: where and when a
#: credential was last used is bookkeeping, not the account's history.
SESSION_USE = "session-use/"

#: Every account's stream id starts with this (a table id is lowercase hex: never confused).
STREAM_PREFIX = streams.ACCOUNT_PREFIX


#: The stream whose write-once claims say which account each CreateAccount request id was sent
#: for (key: ``create/<digest hex>``; data: the account id). It has claims only, never events.
REQUEST_CLAIMS = STREAM_PREFIX + "requests"


def stream_of(account_id: str) -> str:
    return STREAM_PREFIX + account_id


# ---------------------------------------------------------------------------------- store


def _fold(account: Account, row: StoredEvent) -> None:
    account.fold(decode_account(row))


def _rows(decided: AccountDecided) -> list[bytes]:
    rows = []
    for event, key, request in decided.events:
        created = event.HasField("account_created")
        rows.append(
            encode_account(
                event,
                key,
                request,
                decided.house and created,
                decided.password_hash if created else "",
                decided.session_token_sha256 if event.HasField("session_started") else b"",
            )
        )
    return rows


def _check_id(account_id: str) -> None:
    if not account_id or "\x00" in account_id or len(account_id) > 64:
        raise account_not_found(repr(account_id))


ACCOUNTS: AggregateKind[Account, AccountDecided, StoredEvent] = AggregateKind(
    prefix=STREAM_PREFIX,
    new=Account,
    decode=as_stored,
    fold=_fold,
    rows=_rows,
    not_found=lambda account_id: account_not_found(repr(account_id)),
    contended=Contended(
        Reason.ACCOUNT_CONTENDED, "the account kept changing under this request; try again"
    ),
    check_id=_check_id,
)


class AccountStore(AggregateStore[Account, AccountDecided]):
    """The accounts (:class:`~spades_server.store.repository.AggregateStore`), with what only
    accounts do: keys, creation by name, request-id claims, the house's accounts."""

    def __init__(
        self, log: EventLog, clock: Clock = SYSTEM_CLOCK, *, session_use_interval: float = 60.0
    ) -> None:
        super().__init__(log, ACCOUNTS)
        #: What says whether a session has expired (and the account API's ``now``).
        self.clock = clock
        self.session_use_interval = session_use_interval
        #: Session id -> when (monotonic) this replica last recorded its use.
        self._session_uses: dict[str, float] = {}

    async def authenticate(
        self, key: str, retried_rotation: bytes = b"", *, address: str = ""
    ) -> Account:
        """The account whose key ``key`` is now, or whose live session it is, or
        UNAUTHENTICATED (KEY_NOT_VALID, KEY_REVOKED; SESSION_NOT_VALID, SESSION_REVOKED,
        SESSION_EXPIRED); see :meth:`Account.check_key` for ``retried_rotation``. A session's
        use from ``address`` is recorded (:meth:`session_used`)."""
        return (await self.caller(key, retried_rotation, address=address))[0]

    async def caller(
        self, key: str, retried_rotation: bytes = b"", *, address: str = ""
    ) -> tuple[Account, str]:
        """:meth:`authenticate`, and the id of the session ``key`` is (empty for a key)."""
        if sessions.is_session_token(key):
            named = sessions.session_of_token(key)
            if named is None:
                raise sessions.session_not_valid()
            try:
                account = await self.load(named[0])
            except errors.RequestError:
                raise sessions.session_not_valid() from None
            session = sessions.check_session(account, key, self.clock.now())
            await self.session_used(account.account_id, session.session_id, address)
            return account, session.session_id
        return await self._by_key(key, retried_rotation), ""

    async def session_used(self, account_id: str, session_id: str, address: str) -> None:
        """Record that the session was used now from ``address``, unless this replica recorded
        its use less than ``session_use_interval`` seconds ago (so a session used for every
        action costs one small write a minute, not one per action). A log that cannot take the
        write now loses only this record: the call goes on."""
        now = self.clock.monotonic()
        last = self._session_uses.get(session_id)
        if last is not None and now - last < self.session_use_interval:
            return
        self._session_uses[session_id] = now
        used_at = self.clock.now()
        record = account_pb2.Session(
            session_id=session_id, last_address=address, last_use_time=timestamp(used_at)
        )
        row = ProjectionRow(
            key=session_id,
            sort_key=int(used_at * 1e9),
            listed=True,
            # The minute of the use (a row's version is a 32-bit integer on PostgreSQL): an
            # older minute's record never replaces a newer one.
            version=int(used_at // 60),
            data=record.SerializeToString(),
        )
        try:
            await self.log.save_projection(SESSION_USE + account_id, [row])
        except (LogUnavailable, LogClosed) as error:
            log.warning("session use not recorded", account_id=account_id, reason=str(error))

    async def session_uses(self, account_id: str) -> dict[str, account_pb2.Session]:
        """Each session's last recorded use (address and time), by session id."""
        rows = await self.log.projection_rows(
            SESSION_USE + account_id, listed_only=False, offset=0, limit=1000
        )
        return {row.key: account_pb2.Session.FromString(row.data) for row in rows}

    async def _by_key(self, key: str, retried_rotation: bytes) -> Account:
        account_id = account_of_key(key)
        if account_id is None:
            raise key_not_valid()
        try:
            account = await self.load(account_id)
        except errors.RequestError:
            raise key_not_valid() from None
        account.check_key(key, retried_rotation)
        return account

    async def create(
        self,
        name: str,
        kind: account_pb2.AccountKind.ValueType,
        request_id: str = "",
        *,
        owner_account_id: str = "",
        password_hash: str = "",
    ) -> tuple[Account, str]:
        """A new account and its first key; ALREADY_EXISTS (NAME_TAKEN) when the name is.
        ``owner_account_id``: a bot a person made (CreateBot); ``password_hash``: a person
        made by SignUp (its argon2id hash, kept beside the creation), issued no key ("").

        With ``request_id`` the key is derived from it, and a retry (the account's creation has
        the id's digest) gets the same account and key, appending nothing."""
        account_id = account_id_for(name)
        key = new_key(account_id, request_id, tokens.KEY_BY_CREATE_ACCOUNT)
        request_digest = tokens.digest(request_id) if request_id else b""
        if request_digest:
            await self._claim_request(request_digest, account_id)
        if password_hash:  # a person who signs in with its password: no key until it asks
            key = ""
        decided = decide_creation(name, kind, key, request_digest, owner_account_id)
        if password_hash:
            decided = dataclasses.replace(decided, password_hash=password_hash)
        try:
            account = await self.start(account_id, decided)
        except VersionConflict:
            if request_digest:
                # The log's expected version found the stream: made by this call, or not.
                self.forget(account_id)
                account = await self.load(account_id)
                if created_before(account, request_digest):
                    return account, key
            raise errors.refuse(
                Reason.NAME_TAKEN, f"the name {name!r} is taken (names are compared ignoring case)"
            ) from None
        return account, key

    async def _claim_request(self, request_digest: bytes, account_id: str) -> None:
        """Claim a CreateAccount's request id for ``account_id`` (write-once, in the log);
        REQUEST_ID_REUSED when it was claimed for another account. A retry finds its own claim."""
        try:
            first = await self.log.claim(
                REQUEST_CLAIMS, request_claim_key(request_digest), account_id.encode()
            )
        except LogUnavailable as error:
            raise log_unavailable(error) from None
        if first is not None and first != account_id.encode():
            raise request_id_reused()

    async def create_house(self, name: str) -> Account | None:
        """The house-bot account ``name``, made now if it is not there yet (once across
        replicas: the stream's expected version 0); None when the name has an account that is
        not the house's (made before names were reserved)."""
        account_id = account_id_for(name)
        try:
            return await self.start(account_id, decide_house_creation(name))
        except VersionConflict:
            self.forget(account_id)
            account = await self.load(account_id)
            return account if account.house else None
