"""A synchronous face on :class:`SpadesClient`: its event loop runs in a background thread
(like python-chess's ``SimpleEngine``), so scripts and notebooks need no asyncio.

>>> with SyncSpadesClient("127.0.0.1:50051") as client:  # doctest: +SKIP
...     table = client.create_table("practice")
...     seat = client.join_table(table.table_id, "me")
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from spades.client.accounts import AccountInfo, AccountKey, LeaderboardPage, RatingInfo
from spades.client.client import (
    CreatedTable,
    HouseBotSeated,
    SeatTicket,
    SpadesClient,
    TableInfo,
    TablePage,
)
from spades.engine import Rules
from spades.v1 import record_pb2

if TYPE_CHECKING:
    from spades.bot import Backoff, Bot, MatchOutcome

T = TypeVar("T")


class SyncSpadesClient:
    """The non-streaming calls of :class:`SpadesClient`, blocking, plus :meth:`run_bot`."""

    def __init__(
        self, address: str, *, timeout: float | None = 10.0, account_key: str = ""
    ) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="spades-client", daemon=True
        )
        self._thread.start()
        self._client: SpadesClient = self._run(self._make(address, timeout, account_key))

    @staticmethod
    async def _make(address: str, timeout: float | None, account_key: str) -> SpadesClient:
        # The gRPC channel must be made on the loop that will use it.
        return SpadesClient(address, timeout=timeout, account_key=account_key)

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        if self._loop.is_closed():
            coroutine.close()
            raise RuntimeError("this client is closed")
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def __enter__(self) -> SyncSpadesClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the channel and stop the background loop (safe to call twice)."""
        if self._loop.is_closed():
            return
        self._run(self._client.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def create_table(
        self,
        name: str = "Spades",
        rules: Rules | None = None,
        *,
        private: bool = False,
        rated: bool = False,
    ) -> CreatedTable:
        return self._run(self._client.create_table(name, rules, private=private, rated=rated))

    def list_tables(
        self, status: str | None = None, *, page_size: int = 0, page_token: str = ""
    ) -> TablePage:
        return self._run(
            self._client.list_tables(status, page_size=page_size, page_token=page_token)
        )

    def get_table(self, table_id: str) -> TableInfo:
        return self._run(self._client.get_table(table_id))

    def join_table(
        self,
        table_id: str,
        name: str,
        *,
        seat: int | str | None = None,
        bot: bool = True,
        join_code: str = "",
    ) -> SeatTicket:
        return self._run(
            self._client.join_table(table_id, name, seat=seat, bot=bot, join_code=join_code)
        )

    def leave_table(self, seat_token: str) -> SeatTicket:
        return self._run(self._client.leave_table(seat_token))

    def quick_match(self, name: str, *, bot: bool = True, rated: bool = False) -> SeatTicket:
        return self._run(self._client.quick_match(name, bot=bot, rated=rated))

    # Accounts and ratings (see spades.client.accounts).

    def create_account(
        self, name: str, *, kind: str = "bot", operator_token: str = ""
    ) -> AccountKey:
        return self._run(
            self._client.create_account(name, kind=kind, operator_token=operator_token)
        )

    def get_account(self, account_id: str = "", *, name: str = "") -> AccountInfo:
        return self._run(self._client.get_account(account_id, name=name))

    def rotate_key(self) -> AccountKey:
        return self._run(self._client.rotate_key())

    def revoke_key(self) -> AccountInfo:
        return self._run(self._client.revoke_key())

    def ratings(self, account_id: str) -> tuple[RatingInfo, ...]:
        return self._run(self._client.ratings(account_id))

    def leaderboard(
        self, pool: str = "partnership", *, page_size: int = 0, page_token: str = ""
    ) -> LeaderboardPage:
        return self._run(self._client.leaderboard(pool, page_size=page_size, page_token=page_token))

    def add_house_bot(
        self,
        table_id: str,
        *,
        seat: int | str | None = None,
        kind: str = "heuristic",
        join_code: str = "",
    ) -> HouseBotSeated:
        return self._run(
            self._client.add_house_bot(table_id, seat=seat, kind=kind, join_code=join_code)
        )

    def get_record(self, table_id: str) -> record_pb2.GameRecord:
        return self._run(self._client.get_record(table_id))

    def run_bot(
        self, bot: Bot, seat_token: str, *, table_id: str = "", backoff: Backoff | None = None
    ) -> MatchOutcome:
        """Play the seat with ``bot`` until its match ends (blocks; see spades.bot.play_match)."""
        from spades.bot.runner import play_match  # the bot package builds on this one

        return self._run(
            play_match(self._client, bot, seat_token, table_id=table_id, backoff=backoff)
        )
