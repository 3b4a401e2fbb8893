"""RatingService: an account's ratings and history, and each pool's leaderboard.

Thin: the pools are folded from their streams (:mod:`spades_server.ratings`), the names come
from the accounts (:mod:`spades_server.accounts`), the pages from :mod:`spades_server.paging`.

Boards (``--leaderboards``): ``shared`` (the default) ranks bots and people together on one
board per pool, and a request's ``kind`` keeps only that kind's lines, with their shared ranks;
``separate`` gives each kind its own board per pool, ranked on its own, and a request must say
which (LEADERBOARD_KIND_REQUIRED). House-bot accounts are bots, marked ``house``.
"""

from __future__ import annotations

from typing import Any

import grpc

from spades.reasons import Reason
from spades.v1 import rating_pb2, rating_pb2_grpc
from spades_server import errors, paging, ratings
from spades_server.accounts import Account, AccountStore
from spades_server.ratings import PoolStore, Standing

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
        lines = []
        for account_id, standing in pool.leaderboard():
            account = await self._accounts.load(account_id)
            lines.append((account, standing))
        if self._separate or kind == rating_pb2.LEADERBOARD_KIND_UNSPECIFIED:
            ranked = list(enumerate(_of_kind(lines, kind), start=1))
        else:  # a shared board's lines of one kind keep their ranks on the shared board
            ranked = [line for line in enumerate(lines, start=1) if _is_kind(line[1][0], kind)]
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
        for rank, (account, standing) in page:
            response.entries.add(
                rank=rank,
                account_id=account.account_id,
                name=account.name,
                bot=account.bot,
                rating=standing.to_proto(),
                house=account.house,
            )
        return response


def _is_kind(account: Account, kind: rating_pb2.LeaderboardKind.ValueType) -> bool:
    if kind == rating_pb2.LEADERBOARD_KIND_UNSPECIFIED:
        return True
    return account.bot == (kind == rating_pb2.LEADERBOARD_KIND_BOTS)


def _of_kind(
    lines: list[tuple[Account, Standing]], kind: rating_pb2.LeaderboardKind.ValueType
) -> list[tuple[Account, Standing]]:
    return [line for line in lines if _is_kind(line[0], kind)]
