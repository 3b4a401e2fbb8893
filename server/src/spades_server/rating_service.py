"""RatingService: an account's ratings and history, and each pool's leaderboard.

Thin: the pools are folded from their streams (:mod:`spades_server.ratings`), the names come
from the accounts (:mod:`spades_server.accounts`), the pages from :mod:`spades_server.paging`.
"""

from __future__ import annotations

from typing import Any

import grpc

from spades.v1 import rating_pb2, rating_pb2_grpc
from spades_server import paging, ratings
from spades_server.accounts import AccountStore
from spades_server.ratings import PoolStore

Context = grpc.aio.ServicerContext[Any, Any]

DEFAULT_HISTORY_PAGE = 20
DEFAULT_LEADERBOARD_PAGE = 50
MAX_PAGE_SIZE = 100


class RatingServicer(rating_pb2_grpc.RatingServiceServicer):
    def __init__(self, pools: PoolStore, accounts: AccountStore) -> None:
        self._pools = pools
        self._accounts = accounts

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
        pool = await self._pools.load(request.pool or ratings.PARTNERSHIP)
        board = pool.leaderboard()
        page, next_token = paging.page(
            list(enumerate(board, start=1)),
            page_size=request.page_size,
            page_token=request.page_token,
            default_size=DEFAULT_LEADERBOARD_PAGE,
            max_size=MAX_PAGE_SIZE,
        )
        response = rating_pb2.ListLeaderboardResponse(next_page_token=next_token)
        for rank, (account_id, standing) in page:
            account = await self._accounts.load(account_id)
            response.entries.add(
                rank=rank,
                account_id=account_id,
                name=account.name,
                bot=account.bot,
                rating=standing.to_proto(),
            )
        return response
