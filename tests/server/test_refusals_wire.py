"""Refusals of the wire itself that no other test provoked through a refusal assertion: bytes
that are no request message, one table too many from an address, and a client-streaming call
over gRPC-Web; each with its status, its reason code (the google.rpc.Status the server sends)
and no event written."""

from __future__ import annotations

import base64
from pathlib import Path

import aiohttp
import grpc
import pytest
from google.rpc import status_pb2

from spades.engine import Rules
from spades.v1 import play_pb2
from spades_server.api.web import frame, unframe
from tests.support.backends import Storages
from tests.support.clients import Client
from tests.support.refusals import assert_status_details, refused_unchanged
from tests.support.servers import log_head, running_server, web_server

Code = grpc.StatusCode


@pytest.mark.asyncio
async def test_bytes_that_are_no_request_message_are_malformed_request(storage: Storages) -> None:
    async with (
        running_server(storage()) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
    ):
        # The method's bytes as a client with another idea of the message would send them.
        raw = channel.unary_unary("/spades.v1.LobbyService/ListTables", None, None)
        await refused_unchanged(
            server, raw(b"\x0a\xff\xff\xff"), Code.INVALID_ARGUMENT, "MALFORMED_REQUEST"
        )


@pytest.mark.asyncio
async def test_one_table_too_many_from_an_address_is_rate_limited(storage: Storages) -> None:
    async with (
        running_server(storage(), tables_per_address=1) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
    ):
        client = Client(channel)
        await client.create_table(Rules())
        details = await refused_unchanged(
            server, client.create_table(Rules()), Code.RESOURCE_EXHAUSTED, "RATE_LIMITED"
        )
        assert details.retry_delay is not None and details.retry_delay > 0


@pytest.mark.asyncio
async def test_play_over_grpc_web_is_client_streaming_unsupported(tmp_path: Path) -> None:
    async with web_server(tmp_path / "tables.db") as server:
        head = await log_head(server)
        async with (
            aiohttp.ClientSession() as session,
            session.post(
                f"{server.web_url}spades.v1.PlayService/Play",
                data=frame(0, play_pb2.PlayRequest().SerializeToString()),
                headers={"Content-Type": "application/grpc-web+proto", "X-Grpc-Web": "1"},
            ) as response,
        ):
            assert response.status == 200
            body = await response.read()
        trailers = {}
        for flag, payload in unframe(body):
            assert flag & 0x80, "no message, only the trailers"
            for line in payload.decode().split("\r\n"):
                key, _, value = line.partition(":")
                trailers[key.strip()] = value.strip()
        encoded = trailers["grpc-status-details-bin"]
        status = status_pb2.Status.FromString(base64.b64decode(encoded + "=" * (-len(encoded) % 4)))
        assert trailers["grpc-status"] == str(Code.UNIMPLEMENTED.value[0])
        assert_status_details(status, Code.UNIMPLEMENTED, "CLIENT_STREAMING_UNSUPPORTED")
        assert await log_head(server) == head, "a refusal writes nothing"
