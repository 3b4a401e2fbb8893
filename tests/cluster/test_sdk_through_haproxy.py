"""The SDK's bots through haproxy, which ends gRPC streams its own way: a real server (SQLite)
behind Debian's haproxy, four bots of the SDK's runner playing through it.

haproxy (2.6 here; before 3.2, issue 1219) answers a server that ends a call before the client
has closed its side (a Play stream the server ends with OK once the match is over, or with a
status) with RST_STREAM CANCEL to the client, which reads CANCELLED and, most of the time, not
the server's status. And it cuts a stream quiet for longer than its timeouts, with CANCELLED
too. So through it:

- a stream cut mid-match (here by ``timeout server`` shorter than a bot's thinking) is a
  dropped connection: the bot reconnects, resumes from its last sequence and finishes;
- a stream cut once the match's last event came is the end of the match: the bot stops, without
  reconnecting to a finished table (it did, over and over, until an OK happened to get through).
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import spades_cluster

from spades.bot import Backoff, MatchOutcome, play_match
from spades.client import SpadesClient
from spades.engine import Rules
from tests.cluster.conftest import require_cluster_tools
from tests.support.cluster_tables import Thinking
from tests.support.faults import seat_four
from tests.support.servers import running_server

RULES = Rules(max_hands=1)
BACKOFF = Backoff(initial=0.05, maximum=0.5, give_up_after=60.0)
#: haproxy's configuration: one frontend (h2c), the server behind it, and its timeouts.
CONFIG = """\
global
    log stdout format raw local0 info
defaults
    mode http
    log global
    option httplog
    timeout connect 2s
    timeout client {timeout}
    timeout server {timeout}
    timeout tunnel {timeout}
frontend grpc
    bind 127.0.0.1:{port} proto h2
    default_backend server
backend server
    server one 127.0.0.1:{server_port} proto h2
"""


@contextlib.contextmanager
def haproxy_in_front(folder: Path, server_port: int, timeout: str) -> Iterator[str]:
    """haproxy forwarding to ``server_port``, its idle timeouts ``timeout``: its address."""
    require_cluster_tools()
    port = spades_cluster.free_port()
    config = folder / "haproxy.cfg"
    config.write_text(CONFIG.format(timeout=timeout, port=port, server_port=server_port))
    with (folder / "haproxy.log").open("ab") as log:
        process = subprocess.Popen(
            [spades_cluster.tool("haproxy", "/usr/sbin"), "-db", "-f", str(config)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        spades_cluster.wait_until(
            lambda: process.poll() is None and spades_cluster.accepts(f"127.0.0.1:{port}"),
            "haproxy listening",
            30,
        )
        yield f"127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(10)


async def play_four(address: str, think: float) -> list[MatchOutcome]:
    async with SpadesClient(address) as client:
        _, tokens = await seat_four(client, RULES, "through haproxy")
        return list(
            await asyncio.wait_for(
                asyncio.gather(
                    *(
                        play_match(
                            client, Thinking(seat, think, over_cards=False), token, backoff=BACKOFF
                        )
                        for seat, token in enumerate(tokens)
                    )
                ),
                120,
            )
        )


@pytest.mark.asyncio
@pytest.mark.timeout(180)
async def test_a_match_over_ends_the_bots_whose_ok_haproxy_turned_into_cancelled(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path / "tables.db") as server:
        with haproxy_in_front(tmp_path, server.port, "1h") as address:
            outcomes = await play_four(address, 0.0)
    assert all(outcome.end is not None for outcome in outcomes)
    # Nothing cut a stream before the match's end, and its end is no reason to reconnect.
    assert [outcome.reconnects for outcome in outcomes] == [0, 0, 0, 0]


@pytest.mark.asyncio
@pytest.mark.timeout(180)
async def test_bots_whose_streams_haproxy_cuts_mid_match_reconnect_and_finish(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path / "tables.db") as server:
        # A stream quiet for 300 ms is cut; each bid takes 600 ms of thought.
        with haproxy_in_front(tmp_path, server.port, "300ms") as address:
            outcomes = await play_four(address, 0.6)
    assert all(outcome.end is not None for outcome in outcomes)
    assert sum(outcome.reconnects for outcome in outcomes) > 0, "haproxy cut no stream"
    applied = [outcome.applied_action_ids for outcome in outcomes]
    assert all(ids for ids in applied), "a seat had nothing applied"
    assert not set.intersection(*applied)
