"""The rating pools' streams: load a pool (folded from its rated matches) and append a rated match.

Each pool is one stream of ``spades.v1.MatchRated`` rows; the model and the pool's fold are
:mod:`spades_server.domain.ratings`."""

from __future__ import annotations

from spades.reasons import Reason
from spades.v1 import rating_pb2
from spades_server.domain.ratings import POOLS, Pool, match_result, pool_not_found, rate
from spades_server.domain.tables import Table
from spades_server.eventlog.base import EventLog, StoredEvent
from spades_server.store import stream_kinds as streams
from spades_server.store.codecs import decode_pool, encode_pool
from spades_server.store.repository import AggregateKind, AggregateStore, Contended, as_stored


def stream_of(pool: str) -> str:
    return streams.POOL_PREFIX + pool


# ---------------------------------------------------------------------------------- store


def _check_name(name: str) -> None:
    if name not in POOLS:
        raise pool_not_found(name)


def _fold(pool: Pool, row: StoredEvent) -> None:
    pool.fold(row.version, decode_pool(row))


RATING_POOLS: AggregateKind[Pool, rating_pb2.MatchRated, StoredEvent] = AggregateKind(
    prefix=streams.POOL_PREFIX,
    new=Pool,
    decode=as_stored,
    fold=_fold,
    rows=lambda match: [encode_pool(match)],
    not_found=pool_not_found,
    contended=Contended(Reason.POOL_CONTENDED, "the pool kept changing"),
    check_id=_check_name,
    exists_empty=True,  # a pool nobody was rated in yet is there all the same
)


class PoolStore(AggregateStore[Pool, rating_pb2.MatchRated]):
    """The rating pools (:class:`~spades_server.store.repository.AggregateStore`), each rating
    finished rated tables once."""

    def __init__(self, log: EventLog) -> None:
        super().__init__(log, RATING_POOLS)

    async def rate_table(self, table: Table) -> rating_pb2.MatchRated | None:
        """Rate a finished rated table once (None: nothing to rate, or rated already)."""
        result = match_result(table)
        if result is None:
            return None

        def decide(pool: Pool) -> rating_pb2.MatchRated | None:
            return None if result.table_id in pool.rated_tables else rate(pool, result)

        _, stored = await self.execute_stored(result.pool, decide)
        return decode_pool(stored[0]) if stored else None
