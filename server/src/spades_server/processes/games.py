"""Every account's finished matches ("my games"), kept by the lobby as projection rows.

The lobby (:class:`~spades_server.processes.projection.LobbyProjection`) hands each
``MatchEnded`` it folds to :meth:`GamesIndex.match_ended`, which makes one row per account that
sat at the table (:func:`spades_server.domain.games.games_of`) in the log's projection store,
under the projection ``games/<account id>``: key the table, sorted by the match's end, listed
unless the table is private. So an account's games page straight from storage, newest first,
with nothing in memory but the rows not written yet.

Those are written (:meth:`GamesIndex.flush`) before the lobby writes its checkpoint, so a
checkpoint never passes a match whose rows are not stored: a server killed in between folds the
match again from the older checkpoint, and writes the same rows again (a row is replaced only by
one of the same or a higher version). A listing flushes first too, so a match this replica saw
end is listed at once. A log with no games rows yet (made before this index) is marked by the
absence of the ``games`` checkpoint: the lobby then rebuilds from every event once, and every
finished match is indexed (:meth:`GamesIndex.built`, :meth:`GamesIndex.mark_built`).
"""

from __future__ import annotations

import asyncio

from spades.v1 import games_pb2, lobby_pb2
from spades_server.domain.games import GamesQuery, games_of
from spades_server.domain.table_events import Entry
from spades_server.eventlog.base import EventLog, ProjectionCheckpoint, ProjectionRow

#: The marker (a checkpoint with no data) saying every finished match of the log is indexed.
MARKER = "games"
#: Each account's rows are the projection ``games/<account id>``.
PREFIX = "games/"
#: Rows read from storage per request at most: a listing whose filters admit few games gives a
#: short page (with a token to go on) rather than reading an account's whole history at once.
SCAN_LIMIT = 2000


def projection_of(account_id: str) -> str:
    return PREFIX + account_id


class GamesIndex:
    """The rows of every account's finished matches: made as the lobby folds each match's end,
    written with the lobby's checkpoints, paged from the log's projection store."""

    def __init__(self, log: EventLog) -> None:
        self._log = log
        #: Rows not written yet, by projection (account).
        self._pending: dict[str, list[ProjectionRow]] = {}
        self._writing = asyncio.Lock()

    def match_ended(self, summary: lobby_pb2.Table, entry: Entry) -> None:
        """Index the match that ``entry`` (its MatchEnded) ended, for each account at the table."""
        ended = entry.message.match_ended
        for account_id, game in games_of(summary, ended, entry.recorded_at).items():
            self._pending.setdefault(projection_of(account_id), []).append(
                ProjectionRow(
                    key=game.table_id,
                    sort_key=game.end_time.ToNanoseconds(),
                    listed=not game.private,
                    version=entry.sequence,
                    data=game.SerializeToString(),
                )
            )

    async def flush(self) -> None:
        """Write the rows made since the last flush (each account's in one write)."""
        async with self._writing:
            while self._pending:
                projection, rows = next(iter(self._pending.items()))
                await self._log.save_projection(projection, rows)
                del self._pending[projection]

    async def built(self) -> bool:
        """Whether every finished match of the log was indexed (else the lobby rebuilds)."""
        return await self._log.load_projection(MARKER) is not None

    async def mark_built(self, position: int) -> None:
        await self.flush()
        await self._log.save_projection(MARKER, [], ProjectionCheckpoint(position, b""))

    async def page(
        self, query: GamesQuery, offset: int, size: int
    ) -> tuple[list[games_pb2.Game], int | None]:
        """Up to ``size`` of the query's games from the account's row at ``offset``, and the
        offset to go on from (None at the end). At most :data:`SCAN_LIMIT` rows are read."""
        await self.flush()
        found: list[games_pb2.Game] = []
        scanned = 0
        chunk = max(size * 2, 50)
        while scanned < SCAN_LIMIT:
            rows = await self._log.projection_rows(
                projection_of(query.account_id),
                listed_only=not query.include_private,
                offset=offset,
                limit=chunk,
            )
            for number, row in enumerate(rows):
                game = games_pb2.Game.FromString(row.data)
                if query.admits(game):
                    found.append(game)
                    if len(found) == size:
                        return found, offset + number + 1
            if len(rows) < chunk:
                return found, None
            offset += len(rows)
            scanned += len(rows)
        return found, offset
