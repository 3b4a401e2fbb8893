"""RatingService: an account's ratings and history, and each pool's leaderboard.

Thin: the pools are folded from their streams (:mod:`spades_server.domain.ratings`), the names come
from the accounts (:mod:`spades_server.domain.accounts`), the pages from
:mod:`spades_server.domain.paging`.

Boards (``--leaderboards``): ``shared`` (the default) ranks bots and people together on one
board per pool, and a request's ``kind`` keeps only that kind's lines, with their shared ranks;
``separate`` gives each kind its own board per pool, ranked on its own, and a request must say
which (LEADERBOARD_KIND_REQUIRED). House-bot accounts are bots, marked ``house``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import grpc

from spades.reasons import Reason
from spades.v1 import rating_pb2, rating_pb2_grpc
from spades_server.domain import errors, paging, ratings
from spades_server.store.account_store import AccountStore
from spades_server.store.rating_store import PoolStore

Context = grpc.aio.ServicerContext[Any, Any]

DEFAULT_HISTORY_PAGE = 20
DEFAULT_LEADERBOARD_PAGE = 50
MAX_PAGE_SIZE = 100
#: How bots and people are ranked (``--leaderboards``).
LEADERBOARD_CHOICES = ("shared", "separate")


class RatingServicer(rating_pb2_grpc.RatingServiceServicer):
    def __init__(self, pools: PoolStore, accounts: AccountStore, boards: str = "shared") -> None:
        self._pools = pools
        self._accounts = accounts
        self._separate = boards == "separate"
        #: Each account's name, kind and house mark, which never change once it is created:
        #: kept, so a board filtered by kind reads each account's stream once, not per request.
        self._identities: dict[str, Identity] = {}

    async def GetRatings(
        self, request: rating_pb2.GetRatingsRequest, context: Context
    ) -> rating_pb2.GetRatingsResponse:
        account = await self._accounts.load(request.account_id)
        names = [request.pool] if request.pool else list(ratings.POOLS)
        response = rating_pb2.GetRatingsResponse(account_id=account.account_id)
        history: list[rating_pb2.MatchRated] = []
        for name in names:
            pool = await self._pools.load(name)
            standing = pool.standings.get(account.account_id)
            if standing is not None:
                response.ratings.add(pool=name, rating=standing.to_proto())
            history.extend(
                match
                for match in pool.matches
                if any(change.account_id == account.account_id for change in match.changes)
            )
        history.sort(key=lambda match: match.time.ToNanoseconds(), reverse=True)
        page, next_token = paging.page(
            history,
            page_size=request.page_size,
            page_token=request.page_token,
            default_size=DEFAULT_HISTORY_PAGE,
            max_size=MAX_PAGE_SIZE,
        )
        response.history.extend(page)
        response.next_page_token = next_token
        return response

    async def ListLeaderboard(
        self, request: rating_pb2.ListLeaderboardRequest, context: Context
    ) -> rating_pb2.ListLeaderboardResponse:
        kind = request.kind
        if kind not in (
            rating_pb2.LEADERBOARD_KIND_UNSPECIFIED,
            rating_pb2.LEADERBOARD_KIND_BOTS,
            rating_pb2.LEADERBOARD_KIND_PEOPLE,
        ):
            raise errors.refuse(
                Reason.UNKNOWN_ACCOUNT_KIND,
                f"there is no leaderboard kind {kind}: bots (1) or people (2)",
                field="kind",
            )
        if self._separate and kind == rating_pb2.LEADERBOARD_KIND_UNSPECIFIED:
            raise errors.refuse(
                Reason.LEADERBOARD_KIND_REQUIRED,
                "this server keeps separate boards for bots and people: say which (kind)",
                field="kind",
            )
        pool = await self._pools.load(request.pool or ratings.PARTNERSHIP)
        board = pool.leaderboard()
        if kind == rating_pb2.LEADERBOARD_KIND_UNSPECIFIED:
            ranked = list(enumerate(board, start=1))
        else:
            bots = kind == rating_pb2.LEADERBOARD_KIND_BOTS
            ranked = [
                line
                for line in enumerate(board, start=1)
                if (await self._identity(line[1][0])).bot == bots
            ]
            if self._separate:  # the kind's own board: ranked among themselves
                ranked = [(rank, line) for rank, (_, line) in enumerate(ranked, start=1)]
        page, next_token = paging.page(
            ranked,
            page_size=request.page_size,
            page_token=request.page_token,
            default_size=DEFAULT_LEADERBOARD_PAGE,
            max_size=MAX_PAGE_SIZE,
        )
        response = rating_pb2.ListLeaderboardResponse(
            next_page_token=next_token, separate_boards=self._separate
        )
        for rank, (account_id, standing) in page:
            identity = await self._identity(account_id)
            response.entries.add(
                rank=rank,
                account_id=account_id,
                name=identity.name,
                bot=identity.bot,
                rating=standing.to_proto(),
                house=identity.house,
            )
        return response

    async def _identity(self, account_id: str) -> Identity:
        identity = self._identities.get(account_id)
        if identity is None:
            account = await self._accounts.load(account_id)
            identity = Identity(account.name, account.bot, account.house)
            self._identities[account_id] = identity
        return identity


@dataclass(frozen=True)
class Identity:
    """What a leaderboard line says of its account besides the rating."""

    name: str
    bot: bool
    house: bool
