"""The ceilings the server benchmark measures itself against: raw grpc.aio exchanges.

``bench_server.py`` runs this in the same run, on the same machine and from the same kind of
client process as the table service, so that its figures can be read as ratios that do not
drift with the machine's other load: server CPU per action against server CPU per round trip,
actions per second against round trips per second over as many streams.

The server (``python pingpong.py serve``) has one bidirectional-streaming method whose messages
are raw bytes (no protobuf work, no handler logic): for each request it writes one response of
:data:`RESPONSE_BYTES`. It prints ``listening on 127.0.0.1:PORT`` and serves until SIGTERM.
The client side (:func:`client_main`) opens one stream per "table" and, once every client process
is ready, writes a request and waits for its answer in a loop for the measured window: the same
one-message-in, one-message-out loop as a seat answering prompts, minus everything the service
adds.

The fan-out (``mode="fanout"``, method ``Table``) has the shape of a table instead: four streams
join a table (their first request names it, and each gets one response back); the seats take
turns, and each request, from whichever seat, is answered with one response on every stream of
the table, each written by its own stream's task woken through a queue. One request in and four
responses out per "action" is what one action of the service causes at least (each seat's
stream gets the news), so this is the floor of that shape over gRPC, with nothing of the
service (no rules, no log, no protobuf).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import grpc

METHOD = "/bench.PingPong/Exchange"
FANOUT_METHOD = "/bench.PingPong/Table"
#: Streams of a fan-out table.
SEATS = 4
#: Sizes of a typical ``PlayRequest`` carrying an action and a ``PlayResponse`` carrying an event.
REQUEST_BYTES = 40
RESPONSE_BYTES = 120


async def _exchange(requests: Any, context: grpc.aio.ServicerContext[bytes, bytes]) -> None:
    response = bytes(RESPONSE_BYTES)
    async for _ in requests:
        await context.write(response)


#: The streams of each fan-out table (by the name its streams' first request gives), each
#: stream's queue of responses to write.
_TABLES: dict[bytes, list[asyncio.Queue[bytes]]] = {}


async def _table(requests: Any, context: grpc.aio.ServicerContext[bytes, bytes]) -> None:
    iterator = aiter(requests)
    name = await anext(iterator)
    mine: asyncio.Queue[bytes] = asyncio.Queue()
    streams = _TABLES.setdefault(name, [])
    streams.append(mine)
    response = bytes(RESPONSE_BYTES)

    async def read() -> None:
        async for _ in iterator:
            for queue in streams:
                queue.put_nowait(response)

    reader = asyncio.create_task(read())
    try:
        await context.write(response)  # joined
        while True:
            await context.write(await mine.get())
    finally:
        reader.cancel()
        streams.remove(mine)
        if not streams:
            del _TABLES[name]


async def serve() -> None:
    server = grpc.aio.server()
    handler = grpc.method_handlers_generic_handler(
        "bench.PingPong",
        {
            "Exchange": grpc.stream_stream_rpc_method_handler(_exchange),
            "Table": grpc.stream_stream_rpc_method_handler(_table),
        },
    )
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    print(f"listening on 127.0.0.1:{port}", flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    await server.stop(grace=0.5)


@dataclass
class PingStats:
    round_trips: int = 0
    latencies: list[float] = field(default_factory=list)
    cpu_seconds: float = 0.0

    def merge(self, other: PingStats) -> None:
        self.round_trips += other.round_trips
        self.latencies.extend(other.latencies)
        self.cpu_seconds += other.cpu_seconds


async def _stream(
    channel: grpc.aio.Channel, started: asyncio.Event, ready: asyncio.Event, stop_at: list[float]
) -> PingStats:
    stats = PingStats()
    # Raw bytes both ways: no (de)serializer, so the reference does no protobuf work at all.
    call: Any = channel.stream_stream(METHOD, None, None)(None)
    request = bytes(REQUEST_BYTES)
    # One exchange before the window, so the stream is open when the clock starts.
    await call.write(request)
    await call.read()
    ready.set()
    await started.wait()
    while (now := time.perf_counter()) < stop_at[0]:
        await call.write(request)
        await call.read()
        stats.round_trips += 1
        stats.latencies.append(time.perf_counter() - now)
    call.cancel()
    return stats


async def _fanout_table(
    channel: grpc.aio.Channel,
    name: bytes,
    started: asyncio.Event,
    ready: asyncio.Event,
    stop_at: list[float],
) -> PingStats:
    """One fan-out table: its four streams on one channel (as the service's bench seats a
    table's four clients on one); each "action" is a request on the next seat's stream, done
    once every stream has read its response."""
    stats = PingStats()
    calls: list[Any] = [
        channel.stream_stream(FANOUT_METHOD, None, None)(None) for _ in range(SEATS)
    ]
    for call in calls:
        await call.write(name)
    for call in calls:
        await call.read()  # every seat has joined
    request = bytes(REQUEST_BYTES)
    ready.set()
    await started.wait()
    seat = 0
    while (now := time.perf_counter()) < stop_at[0]:
        await calls[seat].write(request)
        for call in calls:
            await call.read()
        stats.round_trips += 1
        stats.latencies.append(time.perf_counter() - now)
        seat = (seat + 1) % SEATS
    for call in calls:
        call.cancel()
    return stats


async def client_main(
    address: str, streams: int, seconds: float, wait_all: object, mode: str = "pingpong"
) -> PingStats:
    """``streams`` ping-pong streams on one channel each, or (``mode="fanout"``) as many fan-out
    tables of four streams; ``wait_all`` is a blocking callable that returns once every client
    process is ready (a multiprocessing barrier's ``wait``)."""
    started = asyncio.Event()
    stop_at = [float("inf")]
    readies = [asyncio.Event() for _ in range(streams)]
    channels = [grpc.aio.insecure_channel(address) for _ in range(streams)]
    if mode == "fanout":
        tasks = [
            asyncio.create_task(
                _fanout_table(channel, f"{os.getpid()}-{index}".encode(), started, ready, stop_at)
            )
            for index, (channel, ready) in enumerate(zip(channels, readies, strict=True))
        ]
    else:
        tasks = [
            asyncio.create_task(_stream(channel, started, ready, stop_at))
            for channel, ready in zip(channels, readies, strict=True)
        ]
    await asyncio.gather(*(ready.wait() for ready in readies))
    await asyncio.to_thread(wait_all)  # type: ignore[arg-type]
    cpu = time.process_time()
    stop_at[0] = time.perf_counter() + seconds
    started.set()
    results = await asyncio.gather(*tasks)
    total = PingStats(cpu_seconds=time.process_time() - cpu)
    for result in results:
        total.merge(result)
    for channel in channels:
        await channel.close(None)
    return total


if __name__ == "__main__":
    if sys.argv[1:] != ["serve"]:
        sys.exit("usage: pingpong.py serve")
    asyncio.run(serve())
