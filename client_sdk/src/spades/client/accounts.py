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

from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from typing import Final, TypeVar

import grpc

from spades.client.connection import new_request_id
from spades.client.errors import from_rpc_error
from spades.v1 import account_pb2, account_pb2_grpc, rating_pb2, rating_pb2_grpc
from spades.wire import AUTHORIZATION_METADATA

T = TypeVar("T")

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

    @staticmethod
    def from_proto(message: account_pb2.Account) -> AccountInfo:
        kinds = {value: name for name, value in ACCOUNT_KINDS.items()}
        return AccountInfo(
            message.account_id,
            message.name,
            kinds.get(message.kind, "unknown"),
            message.key_revoked,
            message.manifest if message.HasField("manifest") else None,
        )


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

    async def rotate_key(self, *, request_id: str | None = None) -> AccountKey:
        """A new key for the client's account; the old one stops working (the client uses the
        new one from now on).

        The call carries ``request_id`` (a fresh one if None) and is tried again with it, and
        the old key, while the server is unreachable: a retry gets the same new key."""
        request = account_pb2.RotateKeyRequest(request_id=request_id or new_request_id())
        metadata = self._bearer()
        response = await self._call_with_retries(
            lambda: self._accounts.RotateKey(request, metadata=metadata, timeout=self.timeout)
        )
        self.account_key = response.key
        return AccountKey(AccountInfo.from_proto(response.account), response.key)

    async def revoke_key(self) -> AccountInfo:
        """Revoke the client's account key for good."""
        response = await self._call(
            self._accounts.RevokeKey(
                account_pb2.RevokeKeyRequest(), metadata=self._bearer(), timeout=self.timeout
            )
        )
        return AccountInfo.from_proto(response.account)

    async def set_manifest(self, manifest: account_pb2.RuleManifest) -> AccountInfo:
        """Declare (replace) the client's bot account's rule-set manifest (build one with
        :func:`spades.manifest.manifest_of`): challenges and the rated queue seat it only at
        rules inside it."""
        request = account_pb2.SetManifestRequest(manifest=manifest)
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
