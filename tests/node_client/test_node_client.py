"""The Node client check of issue 10: a client written from protos/ and docs/ alone plays against
a real server, on both log backends, and finds the contract kept.

``client.js`` (Node.js, @grpc/grpc-js and @grpc/proto-loader on the .proto files, the reason
codes read from docs/errors.md's table) plays whole matches with wrong answers mixed in, and
reports anything that breaks what the protos and docs promise: a refusal without a
google.rpc.Status and a catalogued ErrorInfo of its status, a prompt that does not answer the
last event, a stream that does not end with OK after SeedRevealed, a replaced stream that does
not end ABORTED (STREAM_REPLACED). Its packages come from ``make node-client``.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from tests.support.backends import Storages
from tests.support.servers import running_server

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
MATCHES = 2
#: Codes every run must meet: its fixed probes (the replaced stream, the empty message, the
#: over-long id, the unknown table, the forged token, the late join) and a stale answer.
ALWAYS = {
    "STREAM_REPLACED",
    "EMPTY_MESSAGE",
    "FIELD_TOO_LONG",
    "TABLE_NOT_FOUND",
    "SEAT_TOKEN_INVALID",
    "MATCH_STARTED",
    "STALE_SEQUENCE",
}


def node_command() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.fail("no `node` on PATH: the Node client check needs Node.js and `make node-client`")
    if not (HERE / "node_modules" / "@grpc" / "grpc-js").is_dir():
        pytest.fail(f"the Node client's packages are not in {HERE}: run `make node-client`")
    return node


@pytest.mark.asyncio
async def test_a_node_client_from_the_protos_finds_the_contract_kept(storage: Storages) -> None:
    node = node_command()
    async with running_server(storage()) as server:
        child = await asyncio.create_subprocess_exec(
            node,
            str(HERE / "client.js"),
            f"127.0.0.1:{server.port}",
            str(ROOT),
            str(MATCHES),
            "10",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        try:
            output, _ = await asyncio.wait_for(child.communicate(), timeout=240)
        finally:
            if child.returncode is None:
                child.kill()
                await child.wait()
    lines = output.decode().splitlines()
    assert child.returncode == 0, "\n".join(lines[-40:])
    seen = json.loads(lines[-1])
    assert seen["problems"] == 0 and seen["matches"] == MATCHES, seen
    assert set(seen["reasons"]) >= ALWAYS, seen
    assert seen["endings"] == ["ABORTED STREAM_REPLACED", "OK"], seen
    assert seen["messages"] > 500 * MATCHES, seen
