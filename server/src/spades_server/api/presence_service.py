"""PresenceService: the bots online now (their account stream open, on any replica).

Thin: who is online is :class:`~spades_server.processes.presence.Presence`'s (the log's
``presence`` rows), each bot's account and manifest come from the account store and its
ratings from the pools; the page from :mod:`spades_server.domain.paging`."""

from __future__ import annotations

from typing import Any, Final

import grpc

from spades.v1 import presence_pb2, presence_pb2_grpc
from spades_server.domain import paging, ratings
from spades_server.domain.tables import timestamp
from spades_server.processes.presence import Presence
from spades_server.store.account_store import AccountStore
from spades_server.store.rating_store import PoolStore

Context = grpc.aio.ServicerContext[Any, Any]

DEFAULT_PAGE_SIZE: Final = 50


MAX_PAGE_SIZE: Final = 200


class PresenceServicer(presence_pb2_grpc.PresenceServiceServicer):
    """ListOnlineBots."""

    def __init__(self, presence: Presence, accounts: AccountStore, pools: PoolStore) -> None:
        self._presence = presence
        self._accounts = accounts
        self._pools = pools

    async def ListOnlineBots(
        self, request: presence_pb2.ListOnlineBotsRequest, context: Context
    ) -> presence_pb2.ListOnlineBotsResponse:
        online, next_token = paging.page(
            await self._presence.online(),
            page_size=request.page_size,
            page_token=request.page_token,
            default_size=DEFAULT_PAGE_SIZE,
            max_size=MAX_PAGE_SIZE,
        )
        pools = [await self._pools.load(name) for name in ratings.POOLS]
        response = presence_pb2.ListOnlineBotsResponse(next_page_token=next_token)
        for each in online:
            account = await self._accounts.load(each.account_id)
            bot = response.bots.add(account=account.to_proto(), online_since=timestamp(each.since))
            for pool in pools:
                standing = pool.standings.get(account.account_id)
                if standing is not None:
                    bot.ratings.add(pool=pool.name, rating=standing.to_proto())
        return response
