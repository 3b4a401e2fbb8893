"""A whole tournament analysed (AnalysisService.AnalyseTournament) on a real server: refused
while it has not ended and for an unknown one; once ended, every table analysed once (a table
already kept is not judged again), progress streamed, and each entrant's totals its sides'
plays at its tables; refused with RetryInfo when the pool's queue is full; over gRPC on both
log backends, over gRPC-Web, and from the command line (the server's, and a tournament record
file analysed here, which agrees); a tampered tournament record refused before anything is
judged."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import grpc
import pytest
from google.protobuf import json_format

from spades import protocol
from spades.analysis.tournament import tournament_analysis_json, tournament_tables
from spades.analysis.wire import tournament_analysis_from_proto
from spades.records.tournament import HOME_SEATS, load_tournament_record
from spades.v1 import analysis_pb2, analysis_pb2_grpc, tournament_pb2
from spades_server.processes.analysis_workers import QUEUE_FULL_RETRY
from tests.support.admin import OPERATOR_TOKEN
from tests.support.analyses import (
    analyses_counted,
    analysis_steps,
    command_output,
    entered_tournament,
    next_step,
    played_tournament,
    stream_refusal,
    tournament_steps,
)
from tests.support.backends import Storages
from tests.support.clients import READ_TIMEOUT
from tests.support.grpc_web import status_details, web_call
from tests.support.refusals import refused_unchanged
from tests.support.servers import running_server, web_server

#: The most worlds a request may ask of the server here: what the analysis that holds the
#: queue's one place samples, so that it lasts (a fresh deal to solve for every decision and
#: world) while the refusals it causes are checked.
MAX_WORLDS = 16
#: Double dummy only (a world costs a solve per card); the tournament's tables are 1 hand each.
SETTINGS = {
    "analysis_worlds": 0,
    "analysis_max_worlds": MAX_WORLDS,
    "analysis_queue": 1,
    "operator_token": OPERATOR_TOKEN,
}
ANALYSE = "/spades.v1.AnalysisService/AnalyseTournament"
BIN = Path(sys.executable).parent

#: Two whole tables solved double dummy, on a loaded machine (a safety net, not a bound).
pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(900)]


async def _fetch_record(address: str, tournament_id: str, path: Path) -> None:
    """The tournament's record saved to ``path`` by ``spades record fetch --tournament``."""
    await command_output(
        str(BIN / "spades"),
        "record",
        "fetch",
        "--tournament",
        tournament_id,
        "-o",
        str(path),
        "--server",
        address,
    )


def _stub(channel: grpc.aio.Channel) -> analysis_pb2_grpc.AnalysisServiceAsyncStub:
    return analysis_pb2_grpc.AnalysisServiceStub(channel)


def _request(tournament_id: str, **worlds: int) -> analysis_pb2.AnalyseTournamentRequest:
    return analysis_pb2.AnalyseTournamentRequest(tournament_id=tournament_id, **worlds)


async def test_a_tournament_is_analysed_once_it_has_ended_each_table_once(
    storage: Storages,
) -> None:
    async with (
        running_server(storage(), **SETTINGS) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
    ):
        address = f"127.0.0.1:{server.port}"
        stub = _stub(channel)
        tournament_id, players = await entered_tournament(address, OPERATOR_TOKEN)
        # Not ended (still entering): refused, nothing computed or kept.
        refused = analyses_counted("refused")
        details = await refused_unchanged(
            server,
            stream_refusal(stub.AnalyseTournament(_request(tournament_id))),
            grpc.StatusCode.FAILED_PRECONDITION,
            "TOURNAMENT_NOT_FINISHED",
        )
        assert details.metadata["tournament_id"] == tournament_id
        assert analyses_counted("refused") == refused + 1
        await refused_unchanged(
            server,
            stream_refusal(stub.AnalyseTournament(_request("no-such-cup"))),
            grpc.StatusCode.NOT_FOUND,
            "TOURNAMENT_NOT_FOUND",
        )
        await refused_unchanged(
            server,
            stream_refusal(stub.AnalyseTournament(_request(tournament_id, worlds=MAX_WORLDS + 1))),
            grpc.StatusCode.INVALID_ARGUMENT,
            "ANALYSIS_WORLDS_TOO_MANY",
            "worlds",
        )

        await played_tournament(address, tournament_id, players)
        tournament = (
            await channel.unary_unary(
                "/spades.v1.TournamentService/GetTournamentRecord",
                request_serializer=tournament_pb2.GetTournamentRecordRequest.SerializeToString,
                response_deserializer=tournament_pb2.GetTournamentRecordResponse.FromString,
            )(tournament_pb2.GetTournamentRecordRequest(tournament_id=tournament_id))
        ).record
        tables = tournament_tables(tournament.events)
        assert len(tables) == 2
        # One table analysed on its own first: the tournament's analysis takes it as kept.
        first = await analysis_steps(
            stub.AnalyseTable(analysis_pb2.AnalyseTableRequest(table_id=tables[0].table_id))
        )
        kept_first = first[-1].analysis
        started = analyses_counted("started")

        steps = await tournament_steps(stub.AnalyseTournament(_request(tournament_id)))

        *moving, last = steps
        assert moving and all(step.HasField("progress") for step in moving)
        # Only the other table is judged: one analysis started, its progress streamed.
        assert analyses_counted("started") == started + 1
        assert {step.progress.table_id for step in moving} == {tables[1].table_id}
        assert {(s.progress.tables_done, s.progress.tables_total) for s in moving} == {(1, 2)}
        assert moving[-1].progress.table.done == moving[-1].progress.table.total > 52
        analysis = last.analysis
        assert analysis.tournament_id == tournament_id and analysis.worlds == 0
        assert [table.table_id for table in analysis.tables] == [t.table_id for t in tables]
        kept = {}
        for table in tables:
            got = await stub.GetAnalysis(analysis_pb2.GetAnalysisRequest(table_id=table.table_id))
            kept[table.table_id] = got.analysis
        assert kept[tables[0].table_id] == kept_first
        # Each entrant: its side's plays at both tables (North-South at the first table of
        # its pairing when home, East-West at the second), in the order of the standings.
        standings = [line.account_id for line in tournament.standings.lines]
        assert [entrant.account_id for entrant in analysis.entrants] == standings
        for entrant in analysis.entrants:
            plays = clean = lost = hands = 0
            for table in tables:
                home = entrant.account_id == table.home_account_id
                seats = (
                    set(HOME_SEATS[table.leg])
                    if home
                    else set(range(4)) - set(HOME_SEATS[table.leg])
                )
                (side,) = [
                    side
                    for side in kept[table.table_id].sides
                    if {protocol.seat_from_proto(seat) for seat in side.seats} == seats
                ]
                plays += side.plays
                clean += round(side.accuracy * side.plays)
                lost += side.loss_points
                hands += side.hands
            total = entrant.total
            # Two seats at each of two tables of one hand: 52 plays in 2 hands.
            assert (total.plays, total.loss_points, total.hands) == (plays, lost, hands)
            assert (plays, hands) == (52, 2) and total.accuracy == pytest.approx(clean / plays)
            assert total.loss_points_per_hand == pytest.approx(lost / hands)
            assert [side.table_id for side in entrant.sides] == [t.table_id for t in tables]
            costs = [play.loss_points for play in total.costliest]
            assert costs == sorted(costs, reverse=True) and len(costs) <= 3
            assert all(play.table_id in kept for play in total.costliest)
        assert sum(entrant.total.plays for entrant in analysis.entrants) == 104

        # Asked again: every table kept, so nothing is judged; the analysis at once.
        again = await tournament_steps(stub.AnalyseTournament(_request(tournament_id, worlds=0)))
        assert [step.analysis for step in again] == [analysis]
        assert analyses_counted("started") == started + 1

        # The pool's queue (one place here) taken by another table's analysis with worlds:
        # a tournament's analysis with a world is refused with RetryInfo, as a table's is. (With
        # one world the busy analysis could end first: its table's solves are already in the
        # worker's kept contexts, and one such ended in 0.17 s, before it was cancelled.)
        busy = stub.AnalyseTable(
            analysis_pb2.AnalyseTableRequest(table_id=tables[1].table_id, worlds=MAX_WORLDS)
        )
        assert (await next_step(busy)).HasField("progress")
        details = await refused_unchanged(
            server,
            stream_refusal(stub.AnalyseTournament(_request(tournament_id, worlds=1))),
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            "ANALYSIS_QUEUE_FULL",
        )
        assert details.retry_delay == QUEUE_FULL_RETRY
        abandoned = analyses_counted("abandoned")
        busy.cancel()
        async with asyncio.timeout(READ_TIMEOUT):
            while analyses_counted("abandoned") == abandoned:
                await asyncio.sleep(0.01)


async def test_a_tournament_over_grpc_web_and_from_the_command_line(tmp_path: Path) -> None:
    async with web_server(tmp_path / "cup.db", **SETTINGS) as server:
        address = f"127.0.0.1:{server.port}"
        tournament_id, players = await entered_tournament(address, OPERATOR_TOKEN)
        request = _request(tournament_id).SerializeToString()
        status, messages, trailers = await web_call(server, ANALYSE, request)
        assert status == 200 and messages == []
        assert trailers["grpc-status"] == str(grpc.StatusCode.FAILED_PRECONDITION.value[0])
        assert status_details(trailers).reason_code == "TOURNAMENT_NOT_FINISHED"
        await played_tournament(address, tournament_id, players)

        status, messages, trailers = await web_call(server, ANALYSE, request)

        assert status == 200 and trailers["grpc-status"] == "0"
        *moving, last = [analysis_pb2.AnalyseTournamentResponse.FromString(m) for m in messages]
        assert moving and all(step.HasField("progress") for step in moving)
        assert [s.progress.tables_done for s in moving] == sorted(
            s.progress.tables_done for s in moving
        )
        assert {s.progress.tables_total for s in moving} == {2}
        analysis = last.analysis
        assert analysis.tournament_id == tournament_id and len(analysis.entrants) == 2
        served = tournament_analysis_json(tournament_analysis_from_proto(analysis))
        assert sum(entrant["plays"] for entrant in served["entrants"]) == 104

        # The command line asks the server (kept: nothing judged again) ...
        spades = str(BIN / "spades")
        flags = ["--server", address, "--worlds", "0", "--json"]
        printed = json.loads(
            await command_output(spades, "record", "analyse", "--tournament", tournament_id, *flags)
        )
        assert printed == served
        # ... or fetches its record and analyses it here (--local): the same numbers.
        fetched = await command_output(
            spades, "record", "analyse", "--tournament", tournament_id, *flags, "--local"
        )
        assert json.loads(fetched) == served
        # The tables at 80 columns, a pipe's width: the totals name every entrant whole (the
        # numbers' columns narrow instead), whether or not it made a costly mistake.
        table = await command_output(
            spades,
            "record",
            "analyse",
            "--tournament",
            tournament_id,
            "--server",
            address,
            COLUMNS="80",
        )
        assert "Tournament" in table and "Costliest mistakes" in table
        totals = table.split("Costliest mistakes")[0]
        assert "Heuristic" in totals and "Random" in totals
        # ... and a tournament record file is verified and analysed here: the same numbers.
        cup = tmp_path / "cup.json"
        await _fetch_record(address, tournament_id, cup)
        local = json.loads(
            await command_output(
                str(BIN / "spades-record"),
                "analyse",
                "--tournament",
                str(cup),
                "--worlds",
                "0",
                "--jobs",
                "2",
                "--json",
            )
        )
        assert local == served
        unfinished = tmp_path / "entering.json"
        other, _ = await entered_tournament(address, OPERATOR_TOKEN, ("Ada", "Bob"))
        await _fetch_record(address, other, unfinished)
        refused = await command_output(
            spades, "record", "analyse", "--tournament", other, *flags, status=1
        )
        assert "TOURNAMENT_NOT_FINISHED" in refused and "has not ended" in refused
        refused = await command_output(
            str(BIN / "spades-record"), "analyse", "--tournament", str(unfinished), status=1
        )
        assert refused.startswith("spades-record: the tournament has not ended")


async def test_a_tampered_tournament_record_is_refused(tmp_path: Path) -> None:
    async with running_server(tmp_path / "cup.db", **SETTINGS) as server:
        address = f"127.0.0.1:{server.port}"
        tournament_id, players = await entered_tournament(address, OPERATOR_TOKEN)
        await played_tournament(address, tournament_id, players)
        cup = tmp_path / "cup.json"
        await _fetch_record(address, tournament_id, cup)
    # The first card played at the first table changed to a card another seat held: the seat
    # never had it, which only a replay of the play can tell. (Two of one seat's cards swapped
    # would not always do: on some deals both orders are legal and win the same tricks.)
    swapped = load_tournament_record(cup)
    played = [e.card_played for e in swapped.tables[0].events if e.HasField("card_played")]
    other = next(play for play in played if play.seat != played[0].seat)
    played[0].card.CopyFrom(other.card)
    # A board's duplicate score changed (and nothing else).
    rescored = load_tournament_record(cup)
    board = next(e.board_scored for e in rescored.events if e.HasField("board_scored"))
    board.duplicate_points += 10
    for record, says in (
        (swapped, "round 1, pairing 1, table 1: event "),
        (rescored, "the scored board differs from the tables' scores"),
    ):
        tampered = tmp_path / "tampered.json"
        tampered.write_text(json_format.MessageToJson(record), encoding="utf-8")
        for command in ([str(BIN / "spades-record")], [str(BIN / "spades"), "record"]):
            refused = await command_output(
                *command, "analyse", "--tournament", str(tampered), "--worlds", "0", status=1
            )
            assert refused.startswith(("spades-record: ", "spades record: "))
            assert says in refused and "Traceback" not in refused
