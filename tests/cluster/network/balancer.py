"""What haproxy says of one replica (its own Prometheus metrics): whether it is up, and how many
calls it holds to it now."""

from __future__ import annotations

import asyncio
import time
import urllib.request
from typing import Any

import spades_cluster


def _server_metric(addresses: dict[str, Any], metric: str, server: str) -> list[str]:
    url = addresses["balancer"]["metrics"]
    with urllib.request.urlopen(url, timeout=5) as response:
        text = response.read().decode()
    prefix = f"{metric}{{"
    return [
        line
        for line in text.splitlines()
        if line.startswith(prefix)
        and 'proxy="spades_grpc"' in line
        and f'server="{server}"' in line
    ]


def sessions(addresses: dict[str, Any], server: str) -> float:
    """How many calls (HTTP/2 streams) haproxy holds to ``server`` now."""
    lines = _server_metric(addresses, "haproxy_server_current_sessions", server)
    return sum(float(line.rsplit(" ", 1)[1]) for line in lines)


def is_up(addresses: dict[str, Any], server: str) -> bool:
    lines = _server_metric(addresses, "haproxy_server_status", server)
    return any('state="UP"' in line and line.endswith(" 1") for line in lines)


async def until_up(cluster: spades_cluster.Cluster, server: str, timeout: float = 90.0) -> None:
    """Wait until haproxy sends calls to ``server`` again (its checks pass)."""
    addresses = cluster.addresses()
    deadline = time.monotonic() + timeout
    while not await asyncio.to_thread(is_up, addresses, server):
        assert time.monotonic() < deadline, f"haproxy never took {server} back"
        await asyncio.sleep(0.2)
