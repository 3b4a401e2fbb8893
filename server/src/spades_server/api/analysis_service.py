"""AnalysisService: a finished table's analysis, computed in the worker pool or the one kept.

Thin: the analysis itself is :mod:`spades.analysis`'s, the pool and the kept results are
:mod:`spades_server.processes.analysis_workers`'s, the record is the one GetRecord serves
(:func:`spades_server.streams.records.record_of`). What this servicer decides is who gets what:
only a finished table is analysed (a table still playing is refused, TABLE_NOT_FINISHED, for
every caller: an analysis of a live table would be a cheating tool), with at most the server's
cap of worlds (``--analysis-max-worlds``), the server's default when the request names none
(``--analysis-worlds``); and only a finished tournament (TOURNAMENT_NOT_FINISHED before it
ends), whose tables are analysed one after the other as AnalyseTable would (a table kept with
enough worlds is taken as it is, one being analysed for another caller is shared) and summed up
per entrant (:mod:`spades.analysis.tournament`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import grpc

from spades.analysis.tournament import tournament_analysis, tournament_tables
from spades.analysis.wire import analysis_from_proto, tournament_analysis_to_proto
from spades.reasons import Reason
from spades.v1 import analysis_pb2, analysis_pb2_grpc, record_pb2, tournament_pb2
from spades_server.domain import checks, errors
from spades_server.domain.tournaments import FINISHED
from spades_server.ops import metrics
from spades_server.processes.analysis_workers import AnalysisWorkers, Progress
from spades_server.store.table_store import TableStore
from spades_server.store.tournament_store import TournamentStore
from spades_server.streams.records import record_of

Context = grpc.aio.ServicerContext[Any, Any]


def _summed_up(
    tournament_id: str,
    events: Sequence[tournament_pb2.TournamentEvent],
    analyses: Mapping[str, analysis_pb2.Analysis],
    worlds: int,
) -> analysis_pb2.TournamentAnalysis:
    """The tournament's analysis from its tables' (each entrant's sides summed up)."""
    tables = {table_id: analysis_from_proto(kept) for table_id, kept in analyses.items()}
    summed = tournament_analysis(tournament_id, events, tables, worlds=worlds)
    return tournament_analysis_to_proto(summed)


class AnalysisServicer(analysis_pb2_grpc.AnalysisServiceServicer):
    def __init__(
        self,
        store: TableStore,
        workers: AnalysisWorkers,
        tournaments: TournamentStore,
        *,
        default_worlds: int,
        max_worlds: int,
    ) -> None:
        self._store = store
        self._workers = workers
        self._tournaments = tournaments
        self._default_worlds = default_worlds
        self._max_worlds = max_worlds

    async def AnalyseTable(
        self, request: analysis_pb2.AnalyseTableRequest, context: Context
    ) -> AsyncIterator[analysis_pb2.AnalyseTableResponse]:
        table_id = checks.require_id(request.table_id)
        worlds = self._worlds(request)
        kept = await self._workers.kept(table_id)
        if kept is not None and kept.worlds >= worlds:
            metrics.ANALYSES.labels("stored").inc()
            yield analysis_pb2.AnalyseTableResponse(analysis=kept)
            return
        job = self._workers.admit(await self._finished_record(table_id), worlds)
        async for step in self._workers.follow(job):
            if isinstance(step, Progress):
                yield analysis_pb2.AnalyseTableResponse(progress=step.to_proto())
            else:
                yield analysis_pb2.AnalyseTableResponse(analysis=step)

    async def AnalyseTournament(
        self, request: analysis_pb2.AnalyseTournamentRequest, context: Context
    ) -> AsyncIterator[analysis_pb2.AnalyseTournamentResponse]:
        tournament_id = checks.require_id(request.tournament_id, "tournament_id")
        worlds = self._worlds(request)
        tournament = await self._tournaments.load(tournament_id)
        if tournament.status != FINISHED:
            metrics.ANALYSES.labels("refused").inc()
            raise errors.refuse(
                Reason.TOURNAMENT_NOT_FINISHED,
                f"tournament {tournament_id!r} has not ended: its tables are analysed once it "
                "has (a live table is never analysed, for anyone)",
                metadata={"tournament_id": tournament_id},
            )
        tables = tournament_tables(tournament.events)
        analyses: dict[str, analysis_pb2.Analysis] = {}
        for done, table in enumerate(tables):
            kept = await self._workers.kept(table.table_id)
            if kept is None or kept.worlds < worlds:
                # One table at a time: a tournament takes one place in the pool's queue.
                job = self._workers.admit(await self._finished_record(table.table_id), worlds)
                async for step in self._workers.follow(job):
                    if isinstance(step, Progress):
                        yield analysis_pb2.AnalyseTournamentResponse(
                            progress=analysis_pb2.TournamentAnalysisProgress(
                                tables_done=done,
                                tables_total=len(tables),
                                table_id=table.table_id,
                                table=step.to_proto(),
                            )
                        )
                    else:
                        kept = step
            assert kept is not None  # follow ends with the analysis, or raises
            analyses[table.table_id] = kept
        # Off the event loop: a large tournament's tables hold many thousand plays.
        summed = await asyncio.to_thread(
            _summed_up, tournament_id, tournament.events, analyses, worlds
        )
        yield analysis_pb2.AnalyseTournamentResponse(analysis=summed)

    def _worlds(
        self, request: analysis_pb2.AnalyseTableRequest | analysis_pb2.AnalyseTournamentRequest
    ) -> int:
        """The worlds a request asks for (the server's default when it names none), at most
        the server's cap."""
        worlds = request.worlds if request.HasField("worlds") else self._default_worlds
        if worlds > self._max_worlds:
            raise errors.refuse(
                Reason.ANALYSIS_WORLDS_TOO_MANY,
                f"this server samples at most {self._max_worlds} worlds per decision, not {worlds}",
                field="worlds",
            )
        return worlds

    async def _finished_record(self, table_id: str) -> record_pb2.GameRecord:
        """The record of a finished table; TABLE_NOT_FINISHED for one still waiting or
        playing, TABLE_NOT_FOUND for one that never was."""
        table = await self._store.load(table_id)
        if not table.finished:
            metrics.ANALYSES.labels("refused").inc()
            raise errors.refuse(
                Reason.TABLE_NOT_FINISHED,
                f"the match at table {table_id!r} is not finished (a live table is never "
                "analysed, for anyone)",
                metadata={"table_id": table_id},
            )
        return record_of(table)

    async def GetAnalysis(
        self, request: analysis_pb2.GetAnalysisRequest, context: Context
    ) -> analysis_pb2.GetAnalysisResponse:
        table_id = checks.require_id(request.table_id)
        kept = await self._workers.kept(table_id)
        if kept is None:
            await self._store.load(table_id)  # TABLE_NOT_FOUND for a table that never was
            raise errors.refuse(
                Reason.ANALYSIS_NOT_FOUND,
                f"no analysis of table {table_id!r} is kept; ask AnalyseTable for one",
                metadata={"table_id": table_id},
            )
        return analysis_pb2.GetAnalysisResponse(analysis=kept)
