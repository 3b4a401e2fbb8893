"""The server benchmark's reference works: a real ping-pong server process answers every
request with one response, and the client loop counts what it measured."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import grpc

from tests.benchmarks import pingpong


def test_pingpong_reference_measures_round_trips() -> None:
    server = subprocess.Popen(
        [sys.executable, str(Path(pingpong.__file__)), "serve"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        address = server.stdout.readline().split()[-1]
        stats = asyncio.run(pingpong.client_main(address, 3, 0.3, lambda: None))
        assert stats.round_trips > 0
        assert len(stats.latencies) == stats.round_trips
        assert all(latency > 0 for latency in stats.latencies)

        async def one_exchange() -> bytes:
            async with grpc.aio.insecure_channel(address) as channel:
                call: Any = channel.stream_stream(pingpong.METHOD, None, None)(None)
                await call.write(b"x")
                response = await call.read()
                call.cancel()
                assert isinstance(response, bytes)
                return response

        assert asyncio.run(one_exchange()) == bytes(pingpong.RESPONSE_BYTES)
    finally:
        server.terminate()
        assert server.wait(30) == 0
