"""The server benchmark's references work: a real reference server process answers every
ping-pong request with one response and every fan-out request on each stream of its table, and
the client loops count what they measured."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc

from tests.benchmarks import pingpong


@contextlib.contextmanager
def reference_server() -> Iterator[str]:
    """A reference server process; its address; it must stop cleanly on SIGTERM."""
    server = subprocess.Popen(
        [sys.executable, str(Path(pingpong.__file__)), "serve"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        yield server.stdout.readline().split()[-1]
    finally:
        server.terminate()
        assert server.wait(30) == 0


def test_pingpong_reference_measures_round_trips() -> None:
    with reference_server() as address:
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


def test_fanout_reference_answers_each_request_on_every_stream_of_its_table() -> None:
    with reference_server() as address:
        stats = asyncio.run(pingpong.client_main(address, 2, 0.3, lambda: None, "fanout"))
        assert stats.round_trips > 0
        assert len(stats.latencies) == stats.round_trips

        async def one_table() -> tuple[list[bytes], list[bytes]]:
            async with grpc.aio.insecure_channel(address) as channel:
                tables: list[list[Any]] = [
                    [
                        channel.stream_stream(pingpong.FANOUT_METHOD, None, None)(None)
                        for _ in range(pingpong.SEATS)
                    ]
                    for _ in range(2)
                ]
                for name, calls in zip((b"a", b"b"), tables, strict=True):
                    for call in calls:
                        await call.write(name)
                    for call in calls:
                        await call.read()  # joined
                await tables[0][2].write(b"x")  # one seat of table a acts
                answers = [await call.read() for call in tables[0]]
                # Table b answers its own requests, and heard nothing of table a's.
                await tables[1][0].write(b"y")
                others = [await call.read() for call in tables[1]]
                for call in tables[1]:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(call.read(), 0.2)
                        raise AssertionError("a stream of table b got a second message")
                for call in tables[0] + tables[1]:
                    call.cancel()
                return answers, others

        answers, others = asyncio.run(one_table())
        assert answers == [bytes(pingpong.RESPONSE_BYTES)] * pingpong.SEATS
        assert others == [bytes(pingpong.RESPONSE_BYTES)] * pingpong.SEATS
