"""Analyses in the async client (AnalysisService, docs/analysis.md): a finished table's
analysis, computed by the server's worker pool (progress as it goes) or the one it kept.

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
from typing import TypeVar

import grpc

from spades.client.errors import error_for, from_rpc_error
from spades.v1 import analysis_pb2, analysis_pb2_grpc

T = TypeVar("T")

#: Told each progress message of an analysis: decisions (and hands) done of all.
AnalysisProgress = Callable[[analysis_pb2.AnalysisProgress], None]


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
        call = self._analyses.AnalyseTable(request)
        try:
            async for message in call:
                if message.HasField("analysis"):
                    return message.analysis
                if progress is not None:
                    progress(message.progress)
        except grpc.RpcError as error:
            raise from_rpc_error(error) from error
        finally:
            call.cancel()
        # A server ends the stream with the analysis or a refusal; anything else is its fault.
        raise error_for(grpc.StatusCode.INTERNAL, "the analysis stream ended with no analysis")

    async def get_analysis(self, table_id: str) -> analysis_pb2.Analysis:
        """The analysis the server kept for ``table_id`` (ANALYSIS_NOT_FOUND when none)."""
        request = analysis_pb2.GetAnalysisRequest(table_id=table_id)
        response = await self._call(self._analyses.GetAnalysis(request, timeout=self.timeout))
        return response.analysis
