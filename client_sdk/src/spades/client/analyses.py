"""Analyses in the async client (AnalysisService, docs/analysis.md): a finished table's
analysis, computed by the server's worker pool (progress as it goes) or the one it kept, and a
finished tournament's, summed up per entrant.

The server sends a ``spades.v1.Analysis``; :func:`spades.analysis.wire.analysis_from_proto`
turns it into the :class:`spades.analysis.Analysis` that ``spades-record analyse`` prints.

>>> async def main() -> None:  # doctest: +SKIP
...     async with SpadesClient("127.0.0.1:50051") as client:
...         analysis = await client.analyse_table(
...             table_id, worlds=16, progress=lambda p: print(p.done, "of", p.total)
...         )
...         print([seat.accuracy for seat in analysis.seats])
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import grpc

from spades.client.errors import error_for, from_rpc_error
from spades.v1 import analysis_pb2, analysis_pb2_grpc

T = TypeVar("T")
#: What an analysis stream ends with.
Result = TypeVar("Result", analysis_pb2.Analysis, analysis_pb2.TournamentAnalysis)

#: Told each progress message of an analysis: decisions (and hands) done of all.
AnalysisProgress = Callable[[analysis_pb2.AnalysisProgress], None]
#: Told each progress message of a tournament's analysis: tables done of all, and the table's.
TournamentAnalysisProgress = Callable[[analysis_pb2.TournamentAnalysisProgress], None]


class AnalysisCalls:
    """The AnalysisService calls of :class:`~spades.client.SpadesClient`."""

    _channel: grpc.aio.Channel
    timeout: float | None

    async def _call(self, call: Awaitable[T]) -> T:
        raise NotImplementedError  # the client's

    @property
    def _analyses(self) -> analysis_pb2_grpc.AnalysisServiceAsyncStub:
        return analysis_pb2_grpc.AnalysisServiceStub(self._channel)

    async def analyse_table(
        self,
        table_id: str,
        *,
        worlds: int | None = None,
        progress: AnalysisProgress | None = None,
    ) -> analysis_pb2.Analysis:
        """The analysis of the finished table ``table_id``, with ``worlds`` sampled per
        decision (None: the server's default; 0: double dummy only); ``progress`` is told
        each progress message while the server works. The server returns the analysis it kept
        when it has one of at least as many worlds. Raises ``SpadesError``: TABLE_NOT_FINISHED
        for a table still playing, ANALYSIS_QUEUE_FULL (with its ``retry_delay``) when the
        server's pool is full, ANALYSIS_WORLDS_TOO_MANY above the server's cap.
        No timeout: a match's analysis may take minutes."""
        request = analysis_pb2.AnalyseTableRequest(table_id=table_id)
        if worlds is not None:
            request.worlds = worlds
        return await _streamed(
            self._analyses.AnalyseTable(request), progress, analysis_pb2.Analysis
        )

    async def analyse_tournament(
        self,
        tournament_id: str,
        *,
        worlds: int | None = None,
        progress: TournamentAnalysisProgress | None = None,
    ) -> analysis_pb2.TournamentAnalysis:
        """The analysis of every table of the finished tournament ``tournament_id``, summed up
        per entrant (``worlds`` and ``progress`` as for :meth:`analyse_table`; the tables the
        server already analysed are not judged again). Raises ``SpadesError``:
        TOURNAMENT_NOT_FINISHED for a tournament that has not ended, TOURNAMENT_NOT_FOUND, and
        the refusals of :meth:`analyse_table`. No timeout."""
        request = analysis_pb2.AnalyseTournamentRequest(tournament_id=tournament_id)
        if worlds is not None:
            request.worlds = worlds
        return await _streamed(
            self._analyses.AnalyseTournament(request), progress, analysis_pb2.TournamentAnalysis
        )

    async def get_analysis(self, table_id: str) -> analysis_pb2.Analysis:
        """The analysis the server kept for ``table_id`` (ANALYSIS_NOT_FOUND when none)."""
        request = analysis_pb2.GetAnalysisRequest(table_id=table_id)
        response = await self._call(self._analyses.GetAnalysis(request, timeout=self.timeout))
        return response.analysis


async def _streamed(
    call: Any, progress: Callable[[Any], None] | None, result: type[Result]
) -> Result:
    """The ``analysis`` (a ``result``) an analysis stream ends with, ``progress`` told each
    other message."""
    try:
        async for message in call:
            if message.HasField("analysis"):
                analysis: Result = message.analysis
                return analysis
            if progress is not None:
                progress(message.progress)
    except grpc.RpcError as error:
        raise from_rpc_error(error) from error
    finally:
        call.cancel()
    # A server ends the stream with the analysis or a refusal; anything else is its fault.
    raise error_for(grpc.StatusCode.INTERNAL, "the analysis stream ended with no analysis")
