"""AnalysisService over gRPC-Web, as a browser calls it on the server's web port: a finished
table's analysis streamed (progress frames, then the analysis) and kept, the kept one read in
the text variant, and a live table refused with its reason code in the trailers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
import pytest_asyncio

from spades.v1 import analysis_pb2, lobby_pb2
from spades_server.app.server import SpadesServer
from tests.support.admin import OPERATOR_TOKEN
from tests.support.analyses import played_out_table
from tests.support.grpc_web import TEXT, status_details, web_call
from tests.support.servers import web_server

ANALYSE = "/spades.v1.AnalysisService/AnalyseTable"
GET = "/spades.v1.AnalysisService/GetAnalysis"


@pytest_asyncio.fixture
async def server(tmp_path: Path) -> AsyncIterator[SpadesServer]:
    async with web_server(
        tmp_path / "tables.db", operator_token=OPERATOR_TOKEN, analysis_worlds=0
    ) as served:
        yield served


@pytest.mark.asyncio
async def test_a_finished_table_is_analysed_over_grpc_web(server: SpadesServer) -> None:
    table_id = await played_out_table(f"127.0.0.1:{server.port}", OPERATOR_TOKEN)
    request = analysis_pb2.AnalyseTableRequest(table_id=table_id).SerializeToString()

    status, messages, trailers = await web_call(server, ANALYSE, request)

    assert status == 200 and trailers["grpc-status"] == "0"
    *moving, last = [analysis_pb2.AnalyseTableResponse.FromString(m) for m in messages]
    assert moving and all(step.HasField("progress") for step in moving)
    assert moving[-1].progress.done == moving[-1].progress.total > 52
    analysis = last.analysis
    assert analysis.table_id == table_id and len(analysis.plays) == 52
    assert len(analysis.seats) == 4 and len(analysis.sides) == 2

    # The kept analysis, in the text variant (base64) browsers may use.
    status, messages, trailers = await web_call(
        server,
        GET,
        analysis_pb2.GetAnalysisRequest(table_id=table_id).SerializeToString(),
        content_type=TEXT,
    )
    assert status == 200 and trailers["grpc-status"] == "0"
    assert analysis_pb2.GetAnalysisResponse.FromString(messages[0]).analysis == analysis


@pytest.mark.asyncio
async def test_a_live_table_is_refused_over_grpc_web(server: SpadesServer) -> None:
    created = await web_call(
        server,
        "/spades.v1.LobbyService/CreateTable",
        lobby_pb2.CreateTableRequest(name="still on").SerializeToString(),
    )
    table_id = lobby_pb2.CreateTableResponse.FromString(created[1][0]).table.table_id
    request = analysis_pb2.AnalyseTableRequest(table_id=table_id).SerializeToString()

    status, messages, trailers = await web_call(server, ANALYSE, request)

    assert status == 200 and messages == []
    assert trailers["grpc-status"] == str(grpc.StatusCode.FAILED_PRECONDITION.value[0])
    assert status_details(trailers).reason_code == "TABLE_NOT_FINISHED"
