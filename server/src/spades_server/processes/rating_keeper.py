"""The rating keeper: rates every rated table this server sees finish, and tells the accounts."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

import structlog

from spades.v1 import rating_pb2
from spades_server.domain.tables import Table
from spades_server.ops.tasks import stop_tasks
from spades_server.store.rating_store import PoolStore

log = structlog.get_logger(__name__)


class RatingKeeper:
    """Rates every rated table this server sees finish, and tells the accounts.

    It listens to the table store (every table this replica follows); on start it rates the
    finished rated tables the lobby lists that their pool has not rated (a server killed between
    a match's end and its rating), so no rated match is left unrated. ``announce`` is called
    with every match this replica rated (the accounts' streams are told there).
    """

    def __init__(
        self,
        pools: PoolStore,
        announce: Callable[[rating_pb2.MatchRated], object] | None = None,
    ) -> None:
        self.pools = pools
        self._announce = announce
        self._tasks: set[asyncio.Task[None]] = set()
        self._seen: set[str] = set()

    def table_changed(self, table: Table) -> None:
        if not table.rated or not table.finished or table.table_id in self._seen:
            return
        self._seen.add(table.table_id)
        task = asyncio.get_running_loop().create_task(self._rate(table))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _rate(self, table: Table) -> None:
        try:
            match = await self.pools.rate_table(table)
        except Exception:
            self._seen.discard(table.table_id)  # retried when the table is next seen
            log.exception("rating failed", table_id=table.table_id)
            return
        if match is not None:
            log.info("match rated", table_id=table.table_id, pool=match.pool)
            if self._announce is not None:
                result = self._announce(match)
                if asyncio.iscoroutine(result):
                    await result

    async def settle(self, tables: Sequence[Table]) -> None:
        """Rate, now, the finished rated tables given (on start)."""
        for table in tables:
            self.table_changed(table)
        await self.idle()

    async def idle(self) -> None:
        """Wait for the ratings under way."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def stop(self) -> None:
        await stop_tasks(*self._tasks)
