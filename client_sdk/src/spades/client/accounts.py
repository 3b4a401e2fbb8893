"""Accounts and ratings in the async client: create an account, rotate or revoke its key, follow
its stream, read ratings and leaderboards.

A :class:`~spades.client.SpadesClient` made with ``account_key=`` sends the key (as
``authorization: Bearer``) with its lobby calls, so the seats it takes are the account's.

>>> async def main() -> None:  # doctest: +SKIP
...     async with SpadesClient("127.0.0.1:50051") as client:
...         created = await client.create_account("My Bot", kind="bot")
...     async with SpadesClient("127.0.0.1:50051", account_key=created.key) as client:
...         seat = await client.quick_match("My Bot", rated=True)
...         board = await client.leaderboard("partnership")
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from typing import Final, TypeVar

import grpc

from spades.client.connection import new_request_id
from spades.client.errors import from_rpc_error
from spades.v1 import (
    account_pb2,
    account_pb2_grpc,
    games_pb2,
    lobby_pb2_grpc,
    rating_pb2,
    rating_pb2_grpc,
)
from spades.wire import AUTHORIZATION_METADATA

T = TypeVar("T")

#: Seconds between two reads of an account's ratings while its match is rated.
RATING_POLL: Final = 0.25

#: ListGames's rated filter by name ("": rated or not).
RATED_FILTERS: Final = {
    "": games_pb2.RATED_FILTER_UNSPECIFIED,
    "rated": games_pb2.RATED_FILTER_RATED,
    "unrated": games_pb2.RATED_FILTER_UNRATED,
}
#: ListGames's opponents filter by name ("": any).
OPPONENTS_FILTERS: Final = {
    "": games_pb2.OPPONENTS_FILTER_UNSPECIFIED,
    "bots": games_pb2.OPPONENTS_FILTER_BOTS,
    "people": games_pb2.OPPONENTS_FILTER_PEOPLE,
}

#: Account kinds by name.
ACCOUNT_KINDS: Final = {
    "bot": account_pb2.ACCOUNT_KIND_BOT,
    "person": account_pb2.ACCOUNT_KIND_PERSON,
}


@dataclass(frozen=True, slots=True)
class AccountInfo:
    """An account as anyone may see it."""

    account_id: str
    name: str
    #: "bot" or "person".
    kind: str
    key_revoked: bool
    #: A bot's rule-set manifest (None: none declared, the default rules only).
    manifest: account_pb2.RuleManifest | None = None
    #: A bot made with ``create_bot``: the person account that owns it ("" for none).
    owner_account_id: str = ""

    @staticmethod
    def from_proto(message: account_pb2.Account) -> AccountInfo:
        kinds = {value: name for name, value in ACCOUNT_KINDS.items()}
        return AccountInfo(
            message.account_id,
            message.name,
            kinds.get(message.kind, "unknown"),
            message.key_revoked,
            message.manifest if message.HasField("manifest") else None,
            message.owner_account_id,
        )


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """A person's session (never its token)."""

    session_id: str
    #: Seconds since the epoch.
    created: float
    expires: float
    #: The client address it was last used from (at sign-in: the one it signed in from).
    last_address: str
    #: True for the session the listing call was made with.
    current: bool
    #: When it was last used (from ``last_address``; at sign-in until a use is recorded).
    last_used: float = 0.0

    @staticmethod
    def from_proto(message: account_pb2.Session) -> SessionInfo:
        return SessionInfo(
            message.session_id,
            message.create_time.ToNanoseconds() / 1e9,
            message.expire_time.ToNanoseconds() / 1e9,
            message.last_address,
            message.current,
            message.last_use_time.ToNanoseconds() / 1e9,
        )


@dataclass(frozen=True, slots=True)
class SignedIn:
    """A person signed in: its account, the new session and the session's token (shown once:
    send it as the client's ``account_key``, which any call taking a key accepts)."""

    account: AccountInfo
    session: SessionInfo
    token: str


@dataclass(frozen=True, slots=True)
class AccountKey:
    """An account and its key (shown only once: keep it)."""

    account: AccountInfo
    key: str


@dataclass(frozen=True, slots=True)
class RatingInfo:
    """A rating in one pool."""

    pool: str
    mu: float
    sigma: float
    #: mu - 3 sigma, what leaderboards sort by.
    score: float
    matches: int
    provisional: bool

    @staticmethod
    def from_proto(pool: str, message: rating_pb2.Rating) -> RatingInfo:
        return RatingInfo(
            pool, message.mu, message.sigma, message.score, message.matches, message.provisional
        )


@dataclass(frozen=True, slots=True)
class LeaderboardLine:
    rank: int
    account_id: str
    name: str
    bot: bool
    rating: RatingInfo
    #: True for one of the server's house-bot accounts ("House Heuristic", ...).
    house: bool = False


@dataclass(frozen=True, slots=True)
class LeaderboardPage:
    lines: tuple[LeaderboardLine, ...]
    next_page_token: str
    #: True when the server keeps separate boards for bots and people.
    separate_boards: bool = False


class AccountCalls:
    """The AccountService and RatingService calls of :class:`~spades.client.SpadesClient`."""

    _channel: grpc.aio.Channel
    timeout: float | None
    account_key: str

    async def _call(self, call: Awaitable[T]) -> T:
        raise NotImplementedError  # the client's

    async def _call_with_retries(self, call: Callable[[], Awaitable[T]]) -> T:
        raise NotImplementedError  # the client's

    def _bearer(self, key: str | None = None) -> tuple[tuple[str, str], ...]:
        """The metadata carrying ``key`` (default: the client's account key), if any."""
        key = self.account_key if key is None else key
        return ((AUTHORIZATION_METADATA, f"Bearer {key}"),) if key else ()

    @property
    def _accounts(self) -> account_pb2_grpc.AccountServiceAsyncStub:
        return account_pb2_grpc.AccountServiceStub(self._channel)

    @property
    def _ratings(self) -> rating_pb2_grpc.RatingServiceAsyncStub:
        return rating_pb2_grpc.RatingServiceStub(self._channel)

    async def create_account(
        self,
        name: str,
        *,
        kind: str = "bot",
        operator_token: str = "",
        request_id: str | None = None,
    ) -> AccountKey:
        """A new account ("bot" or "person") and its key; ``operator_token`` where only the
        operator may register.

        The call carries ``request_id`` (a fresh one if None) and is tried again with it while
        the server is unreachable: a retry gets the same account and key, never NAME_TAKEN."""
        if kind not in ACCOUNT_KINDS:
            raise ValueError(f"{kind!r} is not an account kind; choose bot or person")
        metadata = (("spades-operator-token", operator_token),) if operator_token else ()
        request = account_pb2.CreateAccountRequest(
            name=name, kind=ACCOUNT_KINDS[kind], request_id=request_id or new_request_id()
        )
        response = await self._call_with_retries(
            lambda: self._accounts.CreateAccount(request, metadata=metadata, timeout=self.timeout)
        )
        return AccountKey(AccountInfo.from_proto(response.account), response.key)

    async def get_account(self, account_id: str = "", *, name: str = "") -> AccountInfo:
        """An account by id or by name (any case)."""
        request = account_pb2.GetAccountRequest(account_id=account_id, name=name)
        response = await self._call(self._accounts.GetAccount(request, timeout=self.timeout))
        return AccountInfo.from_proto(response.account)

    async def rotate_key(
        self, *, request_id: str | None = None, account_id: str = ""
    ) -> AccountKey:
        """A new key for the client's account; the old one stops working (the client uses the
        new one from now on). With ``account_id``: for that bot, which the client's person
        owns (the client keeps its own credential).

        The call carries ``request_id`` (a fresh one if None) and is tried again with it, and
        the old key, while the server is unreachable: a retry gets the same new key."""
        request = account_pb2.RotateKeyRequest(
            request_id=request_id or new_request_id(), account_id=account_id
        )
        metadata = self._bearer()
        response = await self._call_with_retries(
            lambda: self._accounts.RotateKey(request, metadata=metadata, timeout=self.timeout)
        )
        if not account_id:
            self.account_key = response.key
        return AccountKey(AccountInfo.from_proto(response.account), response.key)

    async def revoke_key(self, *, account_id: str = "") -> AccountInfo:
        """Revoke the client's account key for good (with ``account_id``: the key of that bot,
        which the client's person owns)."""
        response = await self._call(
            self._accounts.RevokeKey(
                account_pb2.RevokeKeyRequest(account_id=account_id),
                metadata=self._bearer(),
                timeout=self.timeout,
            )
        )
        return AccountInfo.from_proto(response.account)

    async def sign_up(self, name: str, password: str, *, operator_token: str = "") -> SignedIn:
        """A new person account with ``password``, signed in (``operator_token`` where only the
        operator may register)."""
        metadata = (("spades-operator-token", operator_token),) if operator_token else ()
        request = account_pb2.SignUpRequest(name=name, password=password)
        response = await self._call(
            self._accounts.SignUp(request, metadata=metadata, timeout=self.timeout)
        )
        return SignedIn(
            AccountInfo.from_proto(response.account),
            SessionInfo.from_proto(response.session),
            response.session_token,
        )

    async def sign_in(self, name: str, password: str) -> SignedIn:
        """A new session for the person ``name`` (any case)."""
        request = account_pb2.SignInRequest(name=name, password=password)
        response = await self._call(self._accounts.SignIn(request, timeout=self.timeout))
        return SignedIn(
            AccountInfo.from_proto(response.account),
            SessionInfo.from_proto(response.session),
            response.session_token,
        )

    async def sessions(self) -> tuple[SessionInfo, ...]:
        """The sessions of the client's account that still work, newest first."""
        response = await self._call(
            self._accounts.ListSessions(
                account_pb2.ListSessionsRequest(), metadata=self._bearer(), timeout=self.timeout
            )
        )
        return tuple(SessionInfo.from_proto(session) for session in response.sessions)

    async def revoke_session(self, session_id: str = "") -> str:
        """End a session of the client's account (default: the client's own: signing out);
        returns its id."""
        response = await self._call(
            self._accounts.RevokeSession(
                account_pb2.RevokeSessionRequest(session_id=session_id),
                metadata=self._bearer(),
                timeout=self.timeout,
            )
        )
        return response.session_id

    async def create_bot(self, name: str, *, request_id: str | None = None) -> AccountKey:
        """A bot account owned by the client's person, and its key (shown once). Retried with
        ``request_id`` (a fresh one if None) while the server is unreachable: the same bot."""
        request = account_pb2.CreateBotRequest(name=name, request_id=request_id or new_request_id())
        metadata = self._bearer()
        response = await self._call_with_retries(
            lambda: self._accounts.CreateBot(request, metadata=metadata, timeout=self.timeout)
        )
        return AccountKey(AccountInfo.from_proto(response.account), response.key)

    async def bots(self) -> tuple[AccountInfo, ...]:
        """The bot accounts the client's person owns, oldest first."""
        response = await self._call(
            self._accounts.ListBots(
                account_pb2.ListBotsRequest(), metadata=self._bearer(), timeout=self.timeout
            )
        )
        return tuple(AccountInfo.from_proto(bot) for bot in response.bots)

    async def set_manifest(
        self, manifest: account_pb2.RuleManifest, *, account_id: str = ""
    ) -> AccountInfo:
        """Declare (replace) the client's bot account's rule-set manifest (build one with
        :func:`spades.manifest.manifest_of`): challenges and the rated queue seat it only at
        rules inside it. With ``account_id``: that bot's, which the client's person owns."""
        request = account_pb2.SetManifestRequest(manifest=manifest, account_id=account_id)
        response = await self._call(
            self._accounts.SetManifest(request, metadata=self._bearer(), timeout=self.timeout)
        )
        return AccountInfo.from_proto(response.account)

    async def connect(
        self, after_sequence: int = 0
    ) -> AsyncGenerator[account_pb2.AccountEvent, None]:
        """The account's stream: its events after ``after_sequence``, then live ones (a table
        assigned to it, its rating changes). Resume from the last ``sequence`` seen."""
        call = self._accounts.Connect(
            account_pb2.ConnectRequest(after_sequence=after_sequence), metadata=self._bearer()
        )
        try:
            async for message in call:
                yield message.event
        except grpc.RpcError as error:
            raise from_rpc_error(error) from error
        finally:
            call.cancel()

    async def games(
        self,
        account: str,
        *,
        rated: str = "",
        opponents: str = "",
        opponent: str = "",
        page_size: int = 0,
        page_token: str = "",
    ) -> games_pb2.ListGamesResponse:
        """One page of an account's finished matches (``account``: its id or name), the most
        recently ended first: ``rated`` "rated" or "unrated", ``opponents`` "bots" or "people",
        ``opponent`` an opponent's id or name. Games at private tables come only to the
        account's own client (its key or session)."""
        if rated not in RATED_FILTERS or opponents not in OPPONENTS_FILTERS:
            raise ValueError("rated is 'rated' or 'unrated'; opponents is 'bots' or 'people'")
        request = games_pb2.ListGamesRequest(
            rated=RATED_FILTERS[rated],
            opponents=OPPONENTS_FILTERS[opponents],
            opponent=opponent,
            page_size=page_size,
            page_token=page_token,
        )
        if _looks_like_id(account):
            request.account_id = account
        else:
            request.name = account
        stub = lobby_pb2_grpc.LobbyServiceStub(self._channel)
        return await self._call(
            stub.ListGames(request, metadata=self._bearer(), timeout=self.timeout)
        )

    async def rating_change(
        self, table_id: str, account_id: str = "", *, within: float = 30.0
    ) -> rating_pb2.RatingChange | None:
        """The account's rating change (default: the client's own account) in the rated match
        of ``table_id``, once its pool has rated it: asked every quarter second for up to
        ``within`` seconds after the match (a pool rates it as soon as a replica sees it end);
        None when it was not rated by then."""
        account_id = account_id or account_of_credential(self.account_key)
        request = rating_pb2.GetRatingsRequest(account_id=account_id, page_size=10)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while True:
            response = await self._call(self._ratings.GetRatings(request, timeout=self.timeout))
            for match in response.history:
                if match.table_id == table_id:
                    return next(c for c in match.changes if c.account_id == account_id)
            if loop.time() >= deadline:
                return None
            await asyncio.sleep(RATING_POLL)

    async def ratings(self, account_id: str) -> tuple[RatingInfo, ...]:
        """An account's rating in every pool it played in."""
        request = rating_pb2.GetRatingsRequest(account_id=account_id, page_size=1)
        response = await self._call(self._ratings.GetRatings(request, timeout=self.timeout))
        return tuple(RatingInfo.from_proto(r.pool, r.rating) for r in response.ratings)

    async def leaderboard(
        self,
        pool: str = "partnership",
        *,
        page_size: int = 0,
        page_token: str = "",
        kind: str = "",
    ) -> LeaderboardPage:
        """One page of a pool's leaderboard, best first; ``kind`` "bot" or "person" keeps one
        kind's lines (on a server with separate boards, it names the board, and is needed)."""
        kinds = {
            "": rating_pb2.LEADERBOARD_KIND_UNSPECIFIED,
            "bot": rating_pb2.LEADERBOARD_KIND_BOTS,
            "person": rating_pb2.LEADERBOARD_KIND_PEOPLE,
        }
        if kind not in kinds:
            raise ValueError(f"kind is 'bot' or 'person' (or '' for all), not {kind!r}")
        request = rating_pb2.ListLeaderboardRequest(
            pool=pool, page_size=page_size, page_token=page_token, kind=kinds[kind]
        )
        response = await self._call(self._ratings.ListLeaderboard(request, timeout=self.timeout))
        return LeaderboardPage(
            tuple(
                LeaderboardLine(
                    entry.rank,
                    entry.account_id,
                    entry.name,
                    entry.bot,
                    RatingInfo.from_proto(pool, entry.rating),
                    entry.house,
                )
                for entry in response.entries
            ),
            response.next_page_token,
            response.separate_boards,
        )


def _looks_like_id(account: str) -> bool:
    """Whether ``account`` is an account id (20 lowercase hex digits) rather than a name."""
    return len(account) == 20 and all(c in "0123456789abcdef" for c in account)


def rating_change_text(change: rating_pb2.RatingChange) -> str:
    """A rating change as people read it: the rating leaderboards sort by (mu - 3 sigma),
    before and after, and the difference.

    >>> before, after = rating_pb2.Rating(score=3.1), rating_pb2.Rating(score=1.6)
    >>> rating_change_text(rating_pb2.RatingChange(before=before, after=after))
    'Rating 3.1 → 1.6 (-1.5)'
    """
    before, after = change.before.score, change.after.score
    return f"Rating {before:.1f} → {after:.1f} ({after - before:+.1f})"


def account_of_credential(credential: str) -> str:
    """The account id an account key (``spk.<id>.<secret>``) or a session token
    (``sps.<id>.<session>.<secret>``) names ("" for anything else).

    >>> account_of_credential("sps.0123abcd.feed.secret"), account_of_credential("")
    ('0123abcd', '')
    """
    parts = credential.split(".")
    return parts[1] if len(parts) >= 3 and parts[0] in ("spk", "sps") else ""
