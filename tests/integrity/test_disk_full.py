"""While the disk is full: actions answered UNAVAILABLE with a reason, health NOT_SERVING, an
error logged, a metric; and all of it undone by itself once there is room again.

The disk is a real one: a 16 MiB tmpfs holding the log, filled with a file until the kernel
says ENOSPC. Mounting needs root; elsewhere the test is skipped, saying so (under CI, which
runs as root, a skip is a failure: tests/support/skips.py).
"""

from __future__ import annotations

import asyncio
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from prometheus_client import REGISTRY
from structlog.testing import capture_logs

from spades.engine import Clock, Rules
from spades.engine.events import TurnTimedOut
from spades.v1 import play_pb2
from spades_server.app.server import SpadesServer
from spades_server.store import journal
from tests.support.clients import Client, SeatStream, rpc_error
from tests.support.servers import running_server

pytestmark = pytest.mark.asyncio
RECOVERY_TIMEOUT = 15.0


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs to fill needs root")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=True)


def fill(folder: Path) -> Path:
    """Write a file until the file system is full; returns it (delete it to make room)."""
    filler = folder / "filler"
    descriptor = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for size in (65536, 512):  # big writes first, then whatever fits in the last sliver
            try:
                while os.write(descriptor, b"\0" * size):
                    pass
            except OSError as error:
                assert error.errno == errno.ENOSPC, error
    finally:
        os.close(descriptor)
    return filler


async def health_of(client: Client) -> int:
    stub = health_pb2_grpc.HealthStub(client.channel)
    response = await stub.Check(health_pb2.HealthCheckRequest(service=""))
    return int(response.status)


async def wait_for_health(client: Client, status: int) -> None:
    async with asyncio.timeout(RECOVERY_TIMEOUT):
        while await health_of(client) != status:
            await asyncio.sleep(0.05)


async def seat_to_act(
    client: Client, table_id: str
) -> tuple[SeatStream, list[SeatStream], play_pb2.TurnPrompt]:
    """Seat four players, open their streams; the stream that is prompted, and its prompt."""
    streams = [client.seat_stream(token) for token in await client.seat_all(table_id)]
    for stream in streams:
        await stream.start()
    prompts = {asyncio.ensure_future(stream.next_of("prompt")): stream for stream in streams}
    done, pending = await asyncio.wait(prompts, return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()
    task = done.pop()
    return prompts[task], streams, task.result().prompt


async def test_disk_full_refuses_with_unavailable_then_recovers(small_disk: Path) -> None:
    async with (
        running_server(small_disk / "tables.db", house_bots=0) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
    ):
        client = Client(channel)
        table_id = (await client.create_table()).table.table_id
        stream, streams, prompt = await seat_to_act(client, table_id)
        action, sequence = prompt.legal_actions[0], prompt.sequence

        filler = fill(small_disk)
        with capture_logs() as logged:
            result = await stream.act(action, sequence, action_id="bid-while-full")
            assert not result.accepted
            assert result.code == grpc.StatusCode.UNAVAILABLE.value[0], result
            assert "cannot be written now" in result.reason and "full" in result.reason
            created = await rpc_error(client.create_table())
            assert created.code() is grpc.StatusCode.UNAVAILABLE, created
            await wait_for_health(client, health_pb2.HealthCheckResponse.NOT_SERVING)
        assert REGISTRY.get_sample_value("spades_log_writable") == 0
        assert any(
            entry["log_level"] == "error" and "cannot be written" in entry["event"]
            for entry in logged
        ), logged

        filler.unlink()  # room again: the log's probe notices by itself
        await wait_for_health(client, health_pb2.HealthCheckResponse.SERVING)
        assert REGISTRY.get_sample_value("spades_log_writable") == 1
        # The same stream is still open; the unanswered action, resent, now goes through.
        result = await stream.act(action, sequence, action_id="bid-while-full")
        assert result.accepted, result
        assert result.sequence == sequence + 1
        assert (await client.create_table()).table.table_id
        await check_log_after(server, table_id, sequence)
        for each in streams:
            await each.close()


async def check_log_after(server: SpadesServer, table_id: str, sequence: int) -> None:
    stored = await server.log.read(table_id)
    assert [event.version for event in stored] == list(range(1, sequence + 2))


async def test_a_turn_that_times_out_while_the_disk_is_full_times_out_after(
    small_disk: Path,
) -> None:
    # The clock's append fails like any other while the disk is full; it must be tried again,
    # or the table would wait forever for a timeout that was due during the outage.
    async with (
        running_server(small_disk / "tables.db", house_bots=0) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
    ):
        client = Client(channel)
        rules = Rules(clock=Clock(turn_millis=1000, extension_millis=1000))
        table_id = (await client.create_table(rules)).table.table_id
        await client.seat_all(table_id)
        filler = fill(small_disk)
        await wait_for_health(client, health_pb2.HealthCheckResponse.NOT_SERVING)
        filler.unlink()
        await wait_for_health(client, health_pb2.HealthCheckResponse.SERVING)
        async with asyncio.timeout(RECOVERY_TIMEOUT):
            while not any(
                isinstance(journal.decode(stored).event, TurnTimedOut)
                for stored in await server.log.read(table_id)
            ):
                await asyncio.sleep(0.1)
