"""Who is online in the async client: the bots whose account stream is open now.

>>> async def main() -> None:  # doctest: +SKIP
...     async with SpadesClient("127.0.0.1:50051") as client:
...         page = await client.online_bots()
...         names = [bot.account.name for bot in page.bots]
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TypeVar

import grpc

from spades.client.accounts import AccountInfo, RatingInfo
from spades.v1 import presence_pb2, presence_pb2_grpc

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class OnlineBot:
    """A bot online now: its account (with its manifest), its ratings, since when."""

    account: AccountInfo
    ratings: tuple[RatingInfo, ...]
    #: Seconds since the epoch.
    online_since: float

    @staticmethod
    def from_proto(message: presence_pb2.OnlineBot) -> OnlineBot:
        return OnlineBot(
            AccountInfo.from_proto(message.account),
            tuple(RatingInfo.from_proto(r.pool, r.rating) for r in message.ratings),
            message.online_since.ToNanoseconds() / 1e9,
        )


@dataclass(frozen=True, slots=True)
class OnlineBotsPage:
    bots: tuple[OnlineBot, ...]
    next_page_token: str


class PresenceCalls:
    """The PresenceService calls of :class:`~spades.client.SpadesClient` (no key needed)."""

    _channel: grpc.aio.Channel
    timeout: float | None

    async def _call(self, call: Awaitable[T]) -> T:
        raise NotImplementedError  # the client's

    async def online_bots(self, *, page_size: int = 0, page_token: str = "") -> OnlineBotsPage:
        """One page of the bots online now (their account stream open), longest online first."""
        request = presence_pb2.ListOnlineBotsRequest(page_size=page_size, page_token=page_token)
        stub = presence_pb2_grpc.PresenceServiceStub(self._channel)
        response = await self._call(stub.ListOnlineBots(request, timeout=self.timeout))
        return OnlineBotsPage(
            tuple(OnlineBot.from_proto(bot) for bot in response.bots), response.next_page_token
        )
