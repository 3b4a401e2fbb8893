"""AnalysisService on a real server, on both log backends: a finished table analysed in the
worker pool (progress, then the analysis the library computes from the table's record), kept
beside the log (not in the table's events) and returned again without computing, after a
restart too; a live table refused; too many worlds refused; the pool's queue full refused."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
import pytest_asyncio
from prometheus_client import REGISTRY

from spades.analysis import analyse, analysis_json
from spades.analysis.wire import analysis_from_proto, analysis_to_proto
from spades.engine import Rules
from spades.v1 import analysis_pb2, analysis_pb2_grpc, play_pb2
from spades_server.app.server import SpadesServer
from spades_server.processes.analysis_workers import (
    ANALYSES,
    QUEUE_FULL_RETRY,
    AnalysisJob,
    Progress,
)
from tests.support.admin import OPERATOR_TOKEN
from tests.support.analyses import (
    analyses_counted,
    analysis_steps,
    command_output,
    next_step,
    played_out_table,
    stream_refusal,
)
from tests.support.backends import Storages
from tests.support.clients import READ_TIMEOUT, Client
from tests.support.refusals import refused_unchanged
from tests.support.servers import running_server

#: The server's analyses in these tests: double dummy only unless a test asks for worlds (a
#: world costs a solve per card), and at most 2 worlds.
SETTINGS = {
    "analysis_worlds": 0,
    "analysis_max_worlds": 2,
    "analysis_queue": 1,
    "operator_token": OPERATOR_TOKEN,
}


def analyses(client: Client) -> analysis_pb2_grpc.AnalysisServiceAsyncStub:
    return analysis_pb2_grpc.AnalysisServiceStub(client.channel)


@pytest_asyncio.fixture
async def analyst(storage: Storages) -> AsyncIterator[SpadesServer]:
    async with running_server(storage(), **SETTINGS) as running:
        yield running


@pytest_asyncio.fixture
async def analyst_client(analyst: SpadesServer) -> AsyncIterator[Client]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{analyst.port}") as channel:
        yield Client(channel)


@pytest.mark.asyncio
async def test_a_finished_table_is_analysed_kept_beside_the_log_and_returned_again(
    storage: Storages,
) -> None:
    async with (
        running_server(storage(), **SETTINGS) as analyst,
        grpc.aio.insecure_channel(f"127.0.0.1:{analyst.port}") as channel,
    ):
        analysis = await _analysed_and_kept(analyst, Client(channel))
    # A server started again on the same log finds it.
    async with (
        running_server(storage(), **SETTINGS) as restarted,
        grpc.aio.insecure_channel(f"127.0.0.1:{restarted.port}") as channel,
    ):
        request = analysis_pb2.GetAnalysisRequest(table_id=analysis.table_id)
        got = await analyses(Client(channel)).GetAnalysis(request)
        assert got.analysis == analysis


async def _analysed_and_kept(analyst: SpadesServer, client: Client) -> analysis_pb2.Analysis:
    table_id = await played_out_table(f"127.0.0.1:{analyst.port}", OPERATOR_TOKEN)
    stub = analyses(client)
    await refused_unchanged(
        analyst,
        stub.GetAnalysis(analysis_pb2.GetAnalysisRequest(table_id=table_id)),
        grpc.StatusCode.NOT_FOUND,
        "ANALYSIS_NOT_FOUND",
    )
    version = await analyst.log.stream_version(table_id)
    started, finished, stored = (analyses_counted(r) for r in ("started", "finished", "stored"))
    timed = REGISTRY.get_sample_value("spades_analysis_seconds_count") or 0.0

    steps = await analysis_steps(
        stub.AnalyseTable(analysis_pb2.AnalyseTableRequest(table_id=table_id))
    )

    *moving, last = steps
    progress = [step.progress for step in moving]
    assert all(step.HasField("progress") for step in moving) and last.HasField("analysis")
    hands = progress[-1].hands_total
    assert progress[0].done == 0 and progress[-1].done == progress[-1].total
    assert [p.done for p in progress] == sorted(p.done for p in progress)
    assert progress[-1].hands_done == hands >= 1
    # The server's worlds (the default here: 0) and seed: the library's own analysis of the
    # record GetRecord serves, to the last number.
    record = (await client.play.GetRecord(play_pb2.GetRecordRequest(table_id=table_id))).record
    analysis = last.analysis
    assert analysis == analysis_to_proto(analyse(record, worlds=0))
    assert analysis.table_id == table_id and analysis.worlds == 0
    assert len(analysis.plays) == progress[-1].total - hands == 52 * hands
    for play in analysis.plays:
        values = {(v.card.suit, v.card.rank): v.points for v in play.values}
        assert play.loss_points == max(values.values()) - values[(play.card.suit, play.card.rank)]
        assert play.loss_points >= 0 and play.loss_tricks >= 0
        # No world sampled: no expected loss, unless the seat had one card to play.
        assert play.HasField("expected_loss_points") == (len(values) == 1)
    assert [len(seat.seats) for seat in analysis.seats] == [1, 1, 1, 1]
    assert all(0 <= seat.accuracy <= 1 for seat in (*analysis.seats, *analysis.sides))
    assert (analyses_counted("started"), analyses_counted("finished")) == (
        started + 1,
        finished + 1,
    )
    assert REGISTRY.get_sample_value("spades_analysis_seconds_count") == timed + 1
    assert REGISTRY.get_sample_value("spades_analysis_queue") == 0

    # Kept beside the log, never in the table's events.
    assert await analyst.log.stream_version(table_id) == version
    row = await analyst.log.projection_row(ANALYSES, table_id)
    assert row is not None and row.version == 0
    assert analysis_pb2.Analysis.FromString(row.data) == analysis

    # Asked again: the kept analysis at once (no progress, nothing started).
    again = await analysis_steps(
        stub.AnalyseTable(analysis_pb2.AnalyseTableRequest(table_id=table_id, worlds=0))
    )
    assert [step.analysis for step in again] == [analysis]
    assert analyses_counted("stored") == stored + 1
    assert analyses_counted("started") == started + 1
    got = await stub.GetAnalysis(analysis_pb2.GetAnalysisRequest(table_id=table_id))
    assert got.analysis == analysis
    return analysis


@pytest.mark.asyncio
async def test_a_live_table_is_never_analysed(
    analyst: SpadesServer, analyst_client: Client
) -> None:
    waiting = (await analyst_client.create_table(Rules(max_hands=1))).table.table_id
    playing = (await analyst_client.create_table(Rules(max_hands=1))).table.table_id
    await analyst_client.seat_all(playing, 4)
    stub = analyses(analyst_client)
    refused = analyses_counted("refused")
    for table_id in (waiting, playing):
        details = await refused_unchanged(
            analyst,
            stream_refusal(stub.AnalyseTable(analysis_pb2.AnalyseTableRequest(table_id=table_id))),
            grpc.StatusCode.FAILED_PRECONDITION,
            "TABLE_NOT_FINISHED",
        )
        assert details.metadata["table_id"] == table_id
        assert await analyst.log.projection_row(ANALYSES, table_id) is None
    assert analyses_counted("refused") == refused + 2
    await refused_unchanged(
        analyst,
        stream_refusal(stub.AnalyseTable(analysis_pb2.AnalyseTableRequest(table_id="nowhere"))),
        grpc.StatusCode.NOT_FOUND,
        "TABLE_NOT_FOUND",
    )


@pytest.mark.asyncio
async def test_more_worlds_than_the_cap_are_refused(
    analyst: SpadesServer, analyst_client: Client
) -> None:
    stub = analyses(analyst_client)
    await refused_unchanged(
        analyst,
        stream_refusal(
            stub.AnalyseTable(analysis_pb2.AnalyseTableRequest(table_id="any", worlds=3))
        ),
        grpc.StatusCode.INVALID_ARGUMENT,
        "ANALYSIS_WORLDS_TOO_MANY",
        "worlds",
    )


@pytest.mark.asyncio
async def test_a_full_queue_refuses_with_retry_info_until_a_place_is_free(
    analyst: SpadesServer, analyst_client: Client
) -> None:
    table_id = await played_out_table(f"127.0.0.1:{analyst.port}", OPERATOR_TOKEN)
    stub = analyses(analyst_client)
    # The queue admits one analysis: this one, with worlds (a solve per card and world: seconds
    # at the least, where a request takes milliseconds).
    first = stub.AnalyseTable(analysis_pb2.AnalyseTableRequest(table_id=table_id, worlds=2))
    assert (await next_step(first)).HasField("progress")

    assert REGISTRY.get_sample_value("spades_analysis_queue") == 1
    other = analysis_pb2.AnalyseTableRequest(table_id=table_id, worlds=1)
    details = await refused_unchanged(
        analyst,
        stream_refusal(stub.AnalyseTable(other)),
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        "ANALYSIS_QUEUE_FULL",
    )
    assert details.retry_delay == QUEUE_FULL_RETRY
    # The same analysis asked again shares the one running: not refused.
    shared = stub.AnalyseTable(analysis_pb2.AnalyseTableRequest(table_id=table_id, worlds=2))
    assert (await next_step(shared)).HasField("progress")

    # Its callers gone, it is abandoned, and its place in the queue is free again.
    abandoned = analyses_counted("abandoned")
    first.cancel()
    shared.cancel()
    async with asyncio.timeout(READ_TIMEOUT):
        while analyses_counted("abandoned") == abandoned:
            await asyncio.sleep(0.01)
    later = stub.AnalyseTable(other)
    assert (await next_step(later)).HasField("progress")
    later.cancel()


@pytest.mark.asyncio
async def test_spades_record_analyse_asks_the_server_and_local_agrees(
    analyst: SpadesServer, analyst_client: Client
) -> None:
    address = f"127.0.0.1:{analyst.port}"
    table_id = await played_out_table(address, OPERATOR_TOKEN)
    command = [str(Path(sys.executable).parent / "spades"), "record", "analyse", table_id]
    flags = ["--server", address, "--worlds", "0", "--json"]

    served = json.loads(await command_output(*command, *flags))

    kept = await analyses(analyst_client).GetAnalysis(
        analysis_pb2.GetAnalysisRequest(table_id=table_id)
    )
    assert served == analysis_json(analysis_from_proto(kept.analysis))
    assert served["table_id"] == table_id and len(served["plays"]) == 52
    assert all(
        play["expected_loss_points"] is None for play in served["plays"] if len(play["values"]) > 1
    )
    # The record fetched and analysed here: the same numbers.
    assert json.loads(await command_output(*command, *flags, "--local")) == served
    # A live table: refused, in one line.
    live = (await analyst_client.create_table(Rules(max_hands=1))).table.table_id
    refused = await command_output(command[0], "record", "analyse", live, *flags, status=1)
    assert "not finished" in refused and "never analysed" in refused


def test_the_last_progress_goes_out_before_the_end_even_when_both_came_while_sending() -> None:
    """A follower busy sending one progress (a slow stream) may find, when it comes back, both
    the last progress and the analysis done: the last progress still goes out, before the end,
    so a caller always sees the analysis reach its total."""

    async def run() -> list[Progress]:
        job = AnalysisJob("t", 0)
        follow = job.follow()
        job.tell(Progress(0, 2, 0, 1))
        sent = [await anext(follow)]  # being sent while the rest happens:
        job.tell(Progress(2, 2, 1, 1))
        job.outcome.set_result(analysis_pb2.Analysis())
        sent.extend([progress async for progress in follow])
        return sent

    assert asyncio.run(run()) == [Progress(0, 2, 0, 1), Progress(2, 2, 1, 1)]
