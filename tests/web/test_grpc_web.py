"""gRPC-Web on the server's own web port: a real server, real HTTP requests in the protocol's
framing (as browser clients send them), and the same services, limits and errors as native gRPC.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import grpc
import pytest
import pytest_asyncio
from prometheus_client import REGISTRY

from spades import protocol
from spades.engine import Rules
from spades.v1 import account_pb2, lobby_pb2, lobby_pb2_grpc, play_pb2
from spades_server.api.web import Gateway, frame, parse_timeout, trailer_block, unframe
from spades_server.app.server import SpadesServer
from tests.support.backends import Storages
from tests.support.grpc_web import BINARY, TEXT, parse_response, status_details, web_call
from tests.support.servers import web_server


@pytest_asyncio.fixture
async def server(storage: Storages) -> AsyncIterator[SpadesServer]:
    """A server with its web port, once on each log backend."""
    async with web_server(storage(), tables_per_address=3, house_bots=0) as served:
        yield served


def open_watches() -> float:
    return REGISTRY.get_sample_value("spades_open_streams", {"kind": "watch"}) or 0.0


def create_request(name: str = "from a browser") -> bytes:
    return lobby_pb2.CreateTableRequest(
        name=name, rules=protocol.rules_to_proto(Rules())
    ).SerializeToString()


@pytest.mark.asyncio
async def test_a_unary_call_answers_with_its_message_and_ok_trailers(server: SpadesServer) -> None:
    status, messages, trailers = await web_call(
        server, "/spades.v1.LobbyService/CreateTable", create_request()
    )
    assert status == 200
    assert trailers["grpc-status"] == "0"
    (message,) = messages
    created = lobby_pb2.CreateTableResponse.FromString(message)
    # The table exists for native clients too: one service behind both protocols.
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        got = await lobby_pb2_grpc.LobbyServiceStub(channel).GetTable(
            lobby_pb2.GetTableRequest(table_id=created.table.table_id)
        )
    assert got.table.name == "from a browser"


@pytest.mark.asyncio
async def test_the_text_variant_is_base64_both_ways(server: SpadesServer) -> None:
    status, messages, trailers = await web_call(
        server,
        "/spades.v1.LobbyService/ListTables",
        lobby_pb2.ListTablesRequest().SerializeToString(),
        content_type=TEXT,
    )
    assert status == 200 and trailers["grpc-status"] == "0"
    assert len(messages) == 1
    lobby_pb2.ListTablesResponse.FromString(messages[0])


@pytest.mark.asyncio
async def test_a_refusal_is_a_status_in_the_trailers(server: SpadesServer) -> None:
    status, messages, trailers = await web_call(
        server,
        "/spades.v1.LobbyService/GetTable",
        lobby_pb2.GetTableRequest(table_id="no-such-table").SerializeToString(),
    )
    assert status == 200 and messages == []
    assert trailers["grpc-status"] == str(grpc.StatusCode.NOT_FOUND.value[0])
    assert "no-such-table" in trailers["grpc-message"]
    # The google.rpc.Status with its details crosses the gateway (base64, as gRPC-Web has it).
    details = status_details(trailers)
    assert details.reason_code == "TABLE_NOT_FOUND"
    assert details.metadata == {"table_id": "no-such-table"}


@pytest.mark.asyncio
async def test_an_over_long_id_is_refused_over_grpc_web_without_being_echoed(
    server: SpadesServer,
) -> None:
    long_id = "t" * 30_000
    status, messages, trailers = await web_call(
        server,
        "/spades.v1.PlayService/GetRecord",
        play_pb2.GetRecordRequest(table_id=long_id).SerializeToString(),
    )
    assert status == 200 and messages == []
    assert trailers["grpc-status"] == str(grpc.StatusCode.INVALID_ARGUMENT.value[0])
    assert long_id[:100] not in trailers["grpc-message"]
    assert len(trailers["grpc-message"]) < 200
    details = status_details(trailers)
    assert details.reason_code == "FIELD_TOO_LONG"
    assert [violation.field for violation in details.field_violations] == ["table_id"]


@pytest.mark.asyncio
async def test_limits_count_the_browser_not_the_gateway(server: SpadesServer) -> None:
    # tables_per_address=3: the browser's address (127.0.0.1) gets three, then a refusal that
    # names it; the gateway's own Unix socket is never what is counted.
    for index in range(3):
        _, _, trailers = await web_call(
            server, "/spades.v1.LobbyService/CreateTable", create_request(f"t{index}")
        )
        assert trailers["grpc-status"] == "0", trailers
    _, _, trailers = await web_call(
        server, "/spades.v1.LobbyService/CreateTable", create_request("one too many")
    )
    assert trailers["grpc-status"] == str(grpc.StatusCode.RESOURCE_EXHAUSTED.value[0])
    assert "127.0.0.1" in trailers["grpc-message"]
    assert "unix" not in trailers["grpc-message"]
    details = status_details(trailers)
    assert details.reason_code == "RATE_LIMITED"
    assert details.retry_delay is not None and 0 < details.retry_delay <= 20  # 3 a minute


@pytest.mark.asyncio
async def test_a_native_client_cannot_claim_another_address(server: SpadesServer) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        lobby = lobby_pb2_grpc.LobbyServiceStub(channel)
        request = lobby_pb2.CreateTableRequest(name="n", rules=protocol.rules_to_proto(Rules()))
        claimed = (("spades-web-peer", "ipv4:203.0.113.9:1"),)
        for _ in range(3):
            await lobby.CreateTable(request, metadata=claimed)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await lobby.CreateTable(request, metadata=claimed)
    assert refused.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    details = refused.value.details() or ""
    assert "127.0.0.1" in details and "203.0.113.9" not in details


@pytest.mark.asyncio
async def test_watch_streams_over_grpc_web_and_a_closed_page_ends_the_call(
    server: SpadesServer,
) -> None:
    _, messages, _ = await web_call(server, "/spades.v1.LobbyService/CreateTable", create_request())
    table_id = lobby_pb2.CreateTableResponse.FromString(messages[0]).table.table_id
    watch = play_pb2.WatchRequest(table_id=table_id).SerializeToString()
    watching_before = open_watches()
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"{server.web_url}spades.v1.PlayService/Watch",
            data=frame(0, watch),
            headers={"Content-Type": BINARY, "X-Grpc-Web": "1"},
        ) as response,
    ):
        assert response.status == 200
        header = await asyncio.wait_for(response.content.readexactly(5), 10)
        flag, length = struct.unpack(">BI", header)
        assert flag == 0
        first = play_pb2.WatchResponse.FromString(await response.content.readexactly(length))
        assert first.WhichOneof("kind") in ("snapshot", "event")
        assert open_watches() == watching_before + 1
    # The page went away: the stream it had is cancelled on the server, not left running.
    for _ in range(50):
        if open_watches() == watching_before:
            break
        await asyncio.sleep(0.1)
    assert open_watches() == watching_before


@pytest.mark.asyncio
async def test_get_view_over_grpc_web_shows_the_seat_its_cards_and_the_public_none(
    server: SpadesServer,
) -> None:
    _, messages, _ = await web_call(server, "/spades.v1.LobbyService/CreateTable", create_request())
    table_id = lobby_pb2.CreateTableResponse.FromString(messages[0]).table.table_id
    tokens = []
    for index in range(4):
        _, messages, _ = await web_call(
            server,
            "/spades.v1.LobbyService/JoinTable",
            lobby_pb2.JoinTableRequest(
                table_id=table_id, player_name=f"browser {index}"
            ).SerializeToString(),
        )
        tokens.append(lobby_pb2.JoinTableResponse.FromString(messages[0]).seat_token)
    request = play_pb2.GetViewRequest(table_id=table_id).SerializeToString()
    for content_type in (BINARY, TEXT):
        _, messages, trailers = await web_call(
            server,
            "/spades.v1.PlayService/GetView",
            request,
            content_type=content_type,
            headers={"spades-seat-token": tokens[2]},
        )
        assert trailers["grpc-status"] == "0"
        seat_view = play_pb2.GetViewResponse.FromString(messages[0]).snapshot.view
        assert protocol.seat_from_proto(seat_view.viewer) == 2 and len(seat_view.hand) == 13
    _, messages, trailers = await web_call(server, "/spades.v1.PlayService/GetView", request)
    public = play_pb2.GetViewResponse.FromString(messages[0]).snapshot
    assert trailers["grpc-status"] == "0" and not public.view.hand and public.sequence > 0
    _, messages, trailers = await web_call(
        server,
        "/spades.v1.PlayService/GetView",
        request,
        headers={"spades-seat-token": "not a token"},
    )
    assert messages == []
    assert trailers["grpc-status"] == str(grpc.StatusCode.UNAUTHENTICATED.value[0])


@pytest.mark.asyncio
async def test_client_streaming_play_is_refused_with_a_reason(server: SpadesServer) -> None:
    status, messages, trailers = await web_call(
        server, "/spades.v1.PlayService/Play", play_pb2.PlayRequest().SerializeToString()
    )
    assert status == 200 and messages == []
    assert trailers["grpc-status"] == str(grpc.StatusCode.UNIMPLEMENTED.value[0])
    assert "gRPC-Web" in trailers["grpc-message"]
    assert status_details(trailers).reason_code == "CLIENT_STREAMING_UNSUPPORTED"


@pytest.mark.asyncio
async def test_bad_requests_are_refused_plainly(server: SpadesServer) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.post(
            f"{server.web_url}spades.v1.LobbyService/ListTables",
            data=b"{}",
            headers={"Content-Type": "application/json"},
        ) as response:
            assert response.status == 415
        async with session.post(
            f"{server.web_url}spades.v1.LobbyService/ListTables",
            data=b"\x00\x00\x00\x00\x09cut",
            headers={"Content-Type": BINARY},
        ) as response:
            _, trailers = parse_response(await response.read())
            assert trailers["grpc-status"] == str(grpc.StatusCode.INVALID_ARGUMENT.value[0])
            assert status_details(trailers).reason_code == "MALFORMED_REQUEST"
        async with session.options(
            f"{server.web_url}spades.v1.LobbyService/ListTables",
            headers={
                "Origin": "http://elsewhere.example",
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "content-type,x-grpc-web,authorization",
            },
        ) as response:
            assert response.status == 204
            assert response.headers["Access-Control-Allow-Origin"] == "*"
            assert "authorization" in response.headers["Access-Control-Allow-Headers"]
            assert "grpc-status" in response.headers["Access-Control-Expose-Headers"]


@pytest.mark.asyncio
async def test_the_web_client_files_are_served(tmp_path: Path) -> None:
    site = tmp_path / "dist"
    (site / "assets").mkdir(parents=True)
    (site / "index.html").write_text("<title>the app</title>")
    (site / "assets" / "app.js").write_text("console.log('hi')")
    gateway = Gateway("127.0.0.1:1", site)
    port = await gateway.start("127.0.0.1:0")
    try:
        async with aiohttp.ClientSession() as session:
            for path, expected in (
                ("/", "<title>the app</title>"),
                ("/assets/app.js", "console.log('hi')"),
                ("/table/abc", "<title>the app</title>"),  # the app's own routes
                ("/../../etc/passwd", "<title>the app</title>"),
            ):
                async with session.get(f"http://127.0.0.1:{port}{path}") as response:
                    assert response.status == 200
                    assert await response.text() == expected
    finally:
        await gateway.stop()
    unbuilt = Gateway("127.0.0.1:1", tmp_path / "nothing")
    port = await unbuilt.start("127.0.0.1:0")
    try:
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{port}/") as response,
        ):
            assert "make web" in await response.text()
    finally:
        await unbuilt.stop()


def test_framing_helpers() -> None:
    assert unframe(frame(0, b"ab") + frame(0x80, b"")) == [(0, b"ab"), (0x80, b"")]
    with pytest.raises(ValueError):
        unframe(b"\x00\x00\x00\x00\x05abc")
    block = trailer_block(grpc.StatusCode.NOT_FOUND, "no table «x»\r\n", [("k-bin", b"\x00")])
    assert block.startswith(b"grpc-status: 5\r\n")
    assert b"grpc-message: no table %C2%ABx%C2%BB%0D%0A\r\n" in block
    assert b"k-bin: AA==\r\n" in block
    assert parse_timeout("1500m") == 1.5
    assert parse_timeout("2S") == 2.0
    assert parse_timeout("soon") is None


async def read_frame(response: aiohttp.ClientResponse) -> tuple[int, bytes]:
    """The next frame of a streaming gRPC-Web response, as it arrives."""
    flag, length = struct.unpack(">BI", await asyncio.wait_for(response.content.readexactly(5), 10))
    return flag, await asyncio.wait_for(response.content.readexactly(length), 10)


@pytest.mark.asyncio
async def test_the_account_stream_runs_over_grpc_web_with_the_accounts_key(
    server: SpadesServer,
) -> None:
    _, messages, trailers = await web_call(
        server,
        "/spades.v1.AccountService/CreateAccount",
        account_pb2.CreateAccountRequest(
            name="webbot", kind=account_pb2.ACCOUNT_KIND_BOT
        ).SerializeToString(),
    )
    assert trailers["grpc-status"] == "0", trailers
    created = account_pb2.CreateAccountResponse.FromString(messages[0])
    bearer = {"authorization": f"Bearer {created.key}"}
    connect = account_pb2.ConnectRequest().SerializeToString()

    # Without the account's key there is no stream: the status the native call has.
    _, messages, trailers = await web_call(
        server,
        "/spades.v1.AccountService/Connect",
        connect,
        headers={"authorization": "Bearer not-a-key"},
    )
    assert messages == []
    assert trailers["grpc-status"] == str(grpc.StatusCode.UNAUTHENTICATED.value[0])

    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"{server.web_url}spades.v1.AccountService/Connect",
            data=frame(0, connect),
            headers={"Content-Type": BINARY, "X-Grpc-Web": "1", **bearer},
        ) as response,
    ):
        assert response.status == 200
        # The account's history first ...
        history = []
        for _ in range(2):
            flag, payload = await read_frame(response)
            assert flag == 0
            history.append(account_pb2.ConnectResponse.FromString(payload).event)
        assert [event.WhichOneof("kind") for event in history] == [
            "account_created",
            "key_issued",
        ]
        assert [event.sequence for event in history] == [1, 2]
        # ... then what happens to it, live, while the browser's stream is open: here its
        # manifest, set over gRPC-Web too.
        manifest = account_pb2.RuleManifest(players=[4], min_target_score=200)
        _, _, trailers = await web_call(
            server,
            "/spades.v1.AccountService/SetManifest",
            account_pb2.SetManifestRequest(manifest=manifest).SerializeToString(),
            headers=bearer,
        )
        assert trailers["grpc-status"] == "0", trailers
        flag, payload = await read_frame(response)
        live = account_pb2.ConnectResponse.FromString(payload).event
        assert flag == 0 and live.sequence == 3
        assert live.manifest_set.manifest == manifest
