"""Clients that do not read their streams: the channel that makes a server's write wait, and
what such a stream ends with (tests/faults/test_slow_consumer.py explains the window's size).

With the client's default channel the stream window is 64 KiB and grows by BDP probing, so a
few hands of events never fill it; :data:`SLOW_READER_OPTIONS` gives a window of about 1 KiB
that does not grow, full after about twenty events.
"""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
from prometheus_client import REGISTRY

#: The channel of a client that never reads: a small stream window that does not grow.
SLOW_READER_OPTIONS = (("grpc.http2.bdp_probe", 0), ("grpc.http2.lookahead_bytes", 1024))


def refused_for_exhaustion() -> float:
    """How many calls this process's servers ended with RESOURCE_EXHAUSTED (a stream not read
    for the write timeout is one)."""
    return REGISTRY.get_sample_value("spades_errors_total", {"code": "RESOURCE_EXHAUSTED"}) or 0.0


async def drained_status(call: Any) -> tuple[int, grpc.aio.AioRpcError | None]:
    """Read what the client never read: how many messages there were, and the final status."""
    received = 0
    try:
        while True:
            message = await asyncio.wait_for(call.read(), 10)
            if message is grpc.aio.EOF:  # type: ignore[attr-defined]
                return received, None
            received += 1
    except grpc.aio.AioRpcError as error:
        return received, error
