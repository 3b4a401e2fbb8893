"""Every limit refuses with RESOURCE_EXHAUSTED, a reason (with the retry delay where waiting
helps), and writes nothing; the defaults let honest clients through."""

from __future__ import annotations

import asyncio
import re
from typing import Any, cast

import grpc
import pytest

from spades.client import ErrorDetails
from spades.engine import Rules
from spades.v1 import actions_pb2, cards_pb2, lobby_pb2, play_pb2
from spades_server.api import limits
from spades_server.api.auth import client_address
from spades_server.api.limits import Buckets, Limits
from spades_server.app import config
from spades_server.domain import errors
from spades_server.ops.settings import Settings
from tests.support.admin import OWN_CONNECTION, Code, raw, serving
from tests.support.backends import Storages
from tests.support.clients import Client, SeatStream, rpc_error, stream_error
from tests.support.refusals import assert_status, nothing_written

RESOURCE_EXHAUSTED = Code.RESOURCE_EXHAUSTED.value[0]
RETRY = re.compile(r"retry in ([0-9.]+) s")


def retry_in(reason: str) -> float:
    found = RETRY.search(reason)
    assert found, f"the reason gives the retry delay: {reason!r}"
    return float(found.group(1))


async def seated_table(client: Client) -> tuple[str, list[str]]:
    created = await client.create_table(Rules())
    table_id = created.table.table_id
    return table_id, await client.seat_all(table_id)


async def first_prompt(stream: SeatStream) -> play_pb2.TurnPrompt:
    return (await stream.next_of("prompt")).prompt


async def seat_to_act(
    client: Client, tokens: list[str]
) -> tuple[int, SeatStream, play_pb2.TurnPrompt]:
    """The index of the token whose seat is to act, its stream (started) and its prompt."""
    streams = [client.seat_stream(token) for token in tokens]
    snapshots = [await stream.start() for stream in streams]
    turn = snapshots[0].view.turn
    index = [snapshot.view.viewer for snapshot in snapshots].index(turn)
    for other, stream in enumerate(streams):
        if other != index:
            await stream.close()
    return index, streams[index], await first_prompt(streams[index])


# -- unit: token buckets, addresses ------------------------------------------------------------


def test_a_token_bucket_grants_its_burst_then_its_rate() -> None:
    now = [100.0]
    buckets = Buckets(rate=4.0, burst=2.0, clock=lambda: now[0])
    assert buckets.take("a") == 0.0
    assert buckets.take("a") == 0.0
    assert buckets.take("a") == pytest.approx(0.25)
    assert buckets.take("b") == 0.0, "each key has its own bucket"
    now[0] += 0.25
    assert buckets.take("a") == 0.0
    assert buckets.take("a") == pytest.approx(0.25)
    assert Buckets(rate=0, burst=0).take("a") == 0.0, "rate 0: no limit"


def test_idle_buckets_are_forgotten() -> None:
    now = [0.0]
    buckets = Buckets(rate=1.0, burst=1.0, clock=lambda: now[0])
    for key in range(limits.SWEEP_AT):
        buckets.take(key)
    now[0] += 2.0  # every bucket is full again
    buckets.take("new")  # one key past the sweep mark
    assert len(buckets) == 1 and "new" in buckets


@pytest.mark.parametrize(
    ("peer", "address"),
    [
        ("ipv4:127.0.0.1:50312", "127.0.0.1"),
        ("ipv6:[::1]:50312", "::1"),
        ("ipv6:%5B::1%5D:50312", "::1"),
        ("unix:/tmp/spades.sock", "unix:/tmp/spades.sock"),
    ],
)
def test_the_client_address_of_a_peer(peer: str, address: str) -> None:
    assert client_address(peer) == address


def test_delays_are_rounded_up() -> None:
    assert limits.seconds(0.2501) == "0.26"
    assert limits.seconds(30.0) == "30"
    assert errors.duration(0.25).ToMilliseconds() == 250
    assert errors.duration(0.0001).ToMilliseconds() == 1  # never shorter than asked
    assert errors.duration(30.0).seconds == 30


def test_the_defaults_let_a_64_table_loopback_benchmark_through() -> None:
    settings = Settings()
    assert settings.tables_per_address >= 64 * 2
    assert settings.quick_match_per_address >= 4
    assert settings.max_play_streams >= 2, "a reconnecting seat may briefly have two"
    # The benchmark: 64 tables whose channels share one connection, ten seconds at three
    # times the ~700 actions/s measured on 2 CPUs, each table's turns going round its seats.
    now = [0.0]
    limit = Limits(settings, clock=lambda: now[0])
    for number in range(10 * 2100):
        now[0] = number / 2100
        table = number % 64
        limit.check_action(f"t{table}", number // 64 % 4, peer="ipv4:127.0.0.1:40000")
    # One table alone, three times as fast as measured (~350 actions/s).
    for number in range(10 * 1050):
        now[0] = 100 + number / 1050
        limit.check_action("alone", number % 4, peer="ipv4:127.0.0.1:40001")
    # 64 tables' worth of creation at once from 127.0.0.1.
    for _ in range(128):
        limit.check_table_creation_from("127.0.0.1")  # refused: LimitExceeded


def test_limits_are_flags_with_environment_variables() -> None:
    settings = config.from_args(
        ["--seat-action-rate", "5", "--tables-per-address", "7"],
        {
            "SPADES_CONNECTION_ACTION_RATE": "50",
            "SPADES_MAX_PLAY_STREAMS": "3",
            "SPADES_QUICK_MATCH_PER_ADDRESS": "9",
            "SPADES_MAX_MESSAGE_BYTES": "2048",
            "SPADES_SEAT_ACTION_RATE": "1",
        },
    )
    assert settings.seat_action_rate == 5.0, "a flag beats its environment variable"
    assert settings.connection_action_rate == 50.0
    assert settings.max_play_streams == 3
    assert settings.tables_per_address == 7
    assert settings.quick_match_per_address == 9
    assert settings.max_message_bytes == 2048


def test_a_negative_limit_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        config.from_args(["--max-play-streams", "-1"], {})
    assert "--max-play-streams/SPADES_MAX_PLAY_STREAMS must not be negative" in (
        capsys.readouterr().err
    )


# -- message size ------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_a_message_over_the_size_limit_is_refused_by_grpc(storage: Storages) -> None:
    async with serving(storage, max_message_bytes=4096) as (server, client):
        table_id, tokens = await seated_table(client)
        async with nothing_written(server):
            error = await rpc_error(
                client.lobby.GetTable(lobby_pb2.GetTableRequest(table_id="x" * 5000))
            )
            assert_status(error, Code.RESOURCE_EXHAUSTED, "larger than max", "4096")
            # On a Play stream: one huge action (a pass of thousands of cards).
            stream = client.seat_stream(tokens[0])
            await stream.start()
            huge = actions_pb2.Action(
                card_pass=actions_pb2.CardPass(
                    cards=[cards_pb2.Card(suit=cards_pb2.SUIT_CLUBS, rank=cards_pb2.RANK_TWO)]
                    * 2000
                )
            )
            error = await stream_error(
                stream.call,
                play_pb2.PlayRequest(
                    action=play_pb2.ActionRequest(action_id="big", sequence=1, action=huge)
                ),
            )
            assert_status(error, Code.RESOURCE_EXHAUSTED, "larger than max")
        # A message under the limit still goes through.
        got = await client.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table_id))
        assert got.table.table_id == table_id


# -- action rates ------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_actions_over_the_seat_rate_are_refused_with_the_retry_delay(
    storage: Storages,
) -> None:
    async with serving(storage, seat_action_rate=1.0) as (server, client):  # bursts of 2
        _, tokens = await seated_table(client)
        _, stream, prompt = await seat_to_act(client, tokens)
        legal = prompt.legal_actions[0]
        # Two refused actions (stale) use the burst up: refusals count too.
        for number in range(2):
            result = await stream.act(legal, prompt.sequence - 1, action_id=f"stale {number}")
            assert result.code == Code.ABORTED.value[0], result
        async with nothing_written(server):
            result = await stream.act(legal, prompt.sequence, action_id="too fast")
        assert not result.accepted
        assert result.code == RESOURCE_EXHAUSTED, result
        assert "too many actions from this seat" in result.reason, result.reason
        delay = retry_in(result.reason)
        assert 0 < delay <= 1.0
        # The same delay for a program: RetryInfo in the result's google.rpc.Status.
        details = ErrorDetails.from_status(result.status)
        assert details.reason_code == "RATE_LIMITED"
        assert details.retry_delay == pytest.approx(delay, abs=0.01)
        await asyncio.sleep(delay)
        result = await stream.act(legal, prompt.sequence, action_id="in time")
        assert result.accepted, result


@pytest.mark.asyncio
async def test_actions_over_the_connection_rate_are_refused(storage: Storages) -> None:
    async with serving(storage, seat_action_rate=0, connection_action_rate=1.0) as (
        server,
        client,
    ):
        _, tokens = await seated_table(client)
        index, stream, prompt = await seat_to_act(client, tokens)
        legal = prompt.legal_actions[0]
        other = client.seat_stream(tokens[(index + 1) % 4])
        await other.start()
        # Two seats on one connection share its bucket (bursts of 2).
        assert (await other.act(legal, 0, action_id="other")).code != RESOURCE_EXHAUSTED
        assert (await stream.act(legal, 0, action_id="stale")).code == Code.ABORTED.value[0]
        async with nothing_written(server):
            result = await stream.act(legal, prompt.sequence, action_id="third")
        assert result.code == RESOURCE_EXHAUSTED, result
        assert "too many actions on this connection" in result.reason
        assert retry_in(result.reason) > 0
        # Another connection has its own bucket.
        async with grpc.aio.insecure_channel(
            f"127.0.0.1:{server.port}", options=OWN_CONNECTION
        ) as channel:
            fresh = Client(channel)
            mover = fresh.seat_stream(tokens[index])  # replaces the seat's first stream
            await mover.start()
            result = await mover.act(legal, prompt.sequence, action_id="elsewhere")
            assert result.accepted, result


# -- streams per seat token --------------------------------------------------------------------


@pytest.mark.asyncio
async def test_open_streams_per_seat_token_are_limited(storage: Storages) -> None:
    async with serving(storage, max_play_streams=2) as (server, client):
        _, tokens = await seated_table(client)
        first = client.seat_stream(tokens[0])
        second = client.seat_stream(tokens[0])
        for _ in range(200):  # both calls have reached the server
            if sum(server.limits.play_streams.values()) == 2:
                break
            await asyncio.sleep(0.01)
        assert sum(server.limits.play_streams.values()) == 2
        async with nothing_written(server):
            error = await stream_error(lambda: client.seat_stream(tokens[0]).call)
            assert_status(error, Code.RESOURCE_EXHAUSTED, "2 open Play streams", "at most 2")
        # Another seat is not affected, and closing one lets a new one in.
        other = client.seat_stream(tokens[1])
        await other.start()
        first.call.cancel()
        for _ in range(200):
            if sum(server.limits.play_streams.values()) == 2:
                break
            await asyncio.sleep(0.01)
        again = client.seat_stream(tokens[0])
        await again.start()
        second.call.cancel()
        await again.close()
        await other.close()


# -- tables per client address -----------------------------------------------------------------


@pytest.mark.asyncio
async def test_tables_per_address_are_limited_with_retry_info(storage: Storages) -> None:
    async with serving(storage, tables_per_address=2) as (server, client):
        await client.create_table(Rules())
        await client.create_table(Rules(), private=True)
        tables = len(server.projection.tables)
        async with nothing_written(server):
            call = client.lobby.CreateTable(lobby_pb2.CreateTableRequest(name="one too many"))
            error = await rpc_error(call)
            assert_status(
                error,
                Code.RESOURCE_EXHAUSTED,
                "too many tables created from 127.0.0.1",
                "2 a minute",
            )
        delay = retry_in(error.details() or "")
        assert 29 < delay <= 30  # one table every 30 s
        # For a program: google.rpc.RetryInfo in the status details (no hand-made metadata).
        details = ErrorDetails.from_trailers(error.trailing_metadata())
        assert details.reason_code == "RATE_LIMITED"
        assert details.retry_delay == pytest.approx(delay, abs=0.01)
        trailing = dict(cast(Any, error.trailing_metadata()) or ())
        assert "retry-delay" not in trailing
        assert len(server.projection.tables) == tables


# -- quick-match entries per client address ----------------------------------------------------


@pytest.mark.asyncio
async def test_quick_match_entries_per_address_are_limited(storage: Storages) -> None:
    async with serving(storage, quick_match_per_address=2) as (server, client):
        request = lobby_pb2.QuickMatchRequest(player_name="queued", bot=True)
        first = await client.lobby.QuickMatch(request)
        await client.lobby.QuickMatch(request)
        async with nothing_written(server):
            error = await rpc_error(client.lobby.QuickMatch(request))
            assert_status(
                error,
                Code.RESOURCE_EXHAUSTED,
                "127.0.0.1 already has 2 players waiting in the quick-match queue",
                "at most 2",
            )
        # Once their table starts they no longer wait: the address may queue again.
        await client.seat_all(first.seat.table_id, players=2)
        again = await client.lobby.QuickMatch(request)
        assert again.seat.table_id != first.seat.table_id


# -- malformed requests ------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_bytes_that_do_not_parse_are_invalid_argument(storage: Storages) -> None:
    corrupt = b"\xff\xff\xff\xff"
    async with serving(storage) as (server, client):
        _, tokens = await seated_table(client)
        async with nothing_written(server):
            unary = raw(client.channel).unary_unary("/spades.v1.LobbyService/CreateTable")
            error = await rpc_error(unary(corrupt))
            assert_status(error, Code.INVALID_ARGUMENT, "not a valid CreateTable request")
            watch = raw(client.channel).unary_stream("/spades.v1.PlayService/Watch")
            error = await rpc_error(_drain(watch(corrupt)))
            assert_status(error, Code.INVALID_ARGUMENT, "not a valid Watch request")
            play = raw(client.channel).stream_stream("/spades.v1.PlayService/Play")
            call = play(metadata=(("spades-seat-token", tokens[0]),))
            error = await stream_error(call, corrupt)  # type: ignore[arg-type]
            assert_status(error, Code.INVALID_ARGUMENT, "message 1 of the stream")
            call = play(metadata=(("spades-seat-token", tokens[0]),))
            start = play_pb2.PlayRequest(start=play_pb2.StartPlay()).SerializeToString()
            error = await stream_error(call, start, corrupt)  # type: ignore[arg-type]
            assert_status(error, Code.INVALID_ARGUMENT, "message 2 of the stream")


async def _drain(call: grpc.aio.UnaryStreamCall) -> None:  # type: ignore[type-arg]
    async for _ in call:
        pass
