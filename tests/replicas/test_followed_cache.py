"""A replica follows only the tables it serves, and commands them from that followed cache.

Two stores on one PostgreSQL schema stand for two replicas. A table a store holds (a stream or a
command) is followed: what the other replica commits reaches its cache through the log's
notifications, and its commands then skip the read before deciding. A cache that is behind (a
notification not there yet) can neither make a command refuse wrongly nor append over another
replica's event: a refusal or a no-op is decided again after a read, and an append names the
expected version. Writer A here sends no notifications at all (``notify=False``, and B's
periodic re-read is an hour away), so B's cache is behind for certain.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import re
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path

import asyncpg
import grpc
import pytest

from spades.engine import Rules, new_match
from spades.reasons import Reason
from spades.v1 import lobby_pb2
from spades_server.app.server import SpadesServer, StartupError
from spades_server.domain import errors, tokens
from spades_server.domain.decisions import decide_join, decide_new_table
from spades_server.domain.tables import Decided, Table
from spades_server.eventlog.postgres import PostgresEventLog
from spades_server.ops.settings import Settings
from spades_server.store.following import FOLLOW_RETRY
from spades_server.store.table_store import TableStore
from tests.support.backends import (
    NATS_URL,
    POOL_SIZE,
    POSTGRES_DSN,
    drop_schema,
    require_nats,
    require_postgres,
    schema_for,
)
from tests.support.clients import Client, close_streams
from tests.support.followers import two_logs, until_followed
from tests.support.seats import play_turns
from tests.support.time import ORDER_TRACKER, ManualClock, wait_for_state

pytestmark = pytest.mark.asyncio


@pytest.fixture(autouse=True)
def _needs_postgres() -> None:
    require_postgres()


def join_decision(name: str) -> Callable[[Table], Decided]:
    """The store's decision to seat ``name`` at the first free seat."""

    def decide(table: Table) -> Decided:
        return decide_join(table, None, name, True, "", tokens.new_seat_token("t"))

    return decide


async def test_a_command_on_a_cache_that_is_behind_is_decided_again(tmp_path: Path) -> None:
    async with two_logs(tmp_path) as (log_a, log_b):
        a, b = TableStore(log_a), TableStore(log_b)
        created = decide_new_table(new_match(Rules()), name="t", private=False, join_code="")
        await a.create("t-behind", created)
        async with b.holding("t-behind"):
            await until_followed(b, "t-behind")
            await a.execute("t-behind", join_decision("north"))  # B hears nothing of it

            # B's cache says no seat is taken: a refusal there is checked against the log.
            seen: list[int] = []

            def needs_north(table: Table) -> Decided:
                seen.append(table.version)
                if table.state.players[0] is None:
                    raise errors.refuse(Reason.NO_SUCH_SEAT, "north is not seated")
                return decide_join(table, None, "east", True, "", tokens.new_seat_token("t"))

            table, entries = await b.execute("t-behind", needs_north)
            assert seen == [1, 2]  # refused on the cache, accepted after the read
            assert [entry.sequence for entry in entries] == [3]
            assert [player and player[0] for player in table.state.players[:2]] == ["north", "east"]

            # An append on a cache that is behind conflicts, and is decided again on the latest.
            await a.execute("t-behind", join_decision("south"))
            versions: list[int] = []

            def west(table: Table) -> Decided:
                versions.append(table.version)
                return decide_join(table, None, "west", True, "", tokens.new_seat_token("t"))

            table, entries = await b.execute("t-behind", west)
            assert versions == [3, 4]
            assert entries[0].sequence == 5  # (the fourth seat starts the hand)
            assert [player and player[0] for player in table.state.players] == [
                "north",
                "east",
                "south",
                "west",
            ]
            assert await log_b.stream_version("t-behind") == entries[-1].sequence


async def test_a_follower_the_log_failed_follows_again_after_a_pause_of_the_logs_clock(
    tmp_path: Path,
) -> None:
    """A follower whose read failed waits ``FOLLOW_RETRY`` on the log's ``sleep`` (a server's
    clock) before it follows again: the table stays unfollowed until the test's clock moves.
    B's reads of rows fail while their ``data`` column is renamed; its re-read of the heads,
    which names no such column, still tells the follower that A committed."""
    clock = ManualClock()
    followed = "t-failed"
    async with two_logs(tmp_path, clock.sleep) as (log_a, log_b):
        a, b = TableStore(log_a), TableStore(log_b)
        created = decide_new_table(new_match(Rules()), name="t", private=False, join_code="")
        await a.create(followed, created)
        admin = await asyncpg.connect(
            POSTGRES_DSN, server_settings={"search_path": log_b.schema or ""}
        )
        try:
            async with b.holding(followed):
                await until_followed(b, followed)
                await a.execute(followed, join_decision("north"))  # B hears nothing of it
                await admin.execute("ALTER TABLE events RENAME COLUMN data TO gone")
                await clock.sleeping(ORDER_TRACKER)
                clock.advance(log_b.poll_interval)  # B's re-read: the follower reads, and fails
                await clock.sleeping(f"follow-{followed}")
                assert not b.following(followed) and b.cached_version(followed) == 1
                await admin.execute("ALTER TABLE events RENAME COLUMN gone TO data")
                clock.advance(FOLLOW_RETRY)
                await wait_for_state(lambda: b.following(followed), "the table followed again")
                assert b.cached_version(followed) == 2
        finally:
            await admin.close()


@pytest.mark.parametrize("fanout", ["notify", "nats"])
async def test_a_followed_table_hears_the_other_replica_and_skips_the_read(
    tmp_path: Path, fanout: str
) -> None:
    if fanout == "nats":
        require_nats()
    schema = schema_for(tmp_path)
    url = NATS_URL if fanout == "nats" else ""
    logs = [
        PostgresEventLog(POSTGRES_DSN, schema=schema, pool_size=POOL_SIZE, fanout=url)
        for _ in range(2)
    ]
    a, b = TableStore(logs[0]), TableStore(logs[1])
    try:
        for log in logs:
            await log.open()
        created = decide_new_table(new_match(Rules()), name="t", private=False, join_code="")
        await a.create("t-heard", created)
        async with b.holding("t-heard") as table:
            await until_followed(b, "t-heard")
            await a.execute("t-heard", join_decision("north"))
            for _ in range(500):  # B's follower folds it when the notification comes
                if table.version == 2:
                    break
                await asyncio.sleep(0.01)
            assert table.version == 2 and table.state.players[0] is not None
            skipped = b.reads_skipped
            await b.execute("t-heard", join_decision("east"))
            assert b.reads_skipped == skipped + 1  # decided on the followed cache, no read
        assert not b.following("t-heard")  # let go: no longer followed
    finally:
        for log in logs:
            await log.close()
        await drop_schema(schema)


async def test_a_replica_does_not_follow_tables_it_does_not_serve(tmp_path: Path) -> None:
    schema = schema_for(tmp_path)
    servers = [
        SpadesServer(
            Settings(listen="127.0.0.1:0", metrics="off", web="off", house_bots=0),
            PostgresEventLog(POSTGRES_DSN, schema=schema, pool_size=POOL_SIZE),
        )
        for _ in range(2)
    ]
    try:
        for server in servers:
            await server.start()
        async with AsyncExitStack() as stack:
            channels = [
                await stack.enter_async_context(grpc.aio.insecure_channel(f"127.0.0.1:{s.port}"))
                for s in servers
            ]
            here, there = Client(channels[0]), Client(channels[1])
            table_id = (await here.create_table(Rules())).table.table_id
            tokens_ = await here.seat_all(table_id)
            streams = {seat: here.seat_stream(token) for seat, token in enumerate(tokens_)}
            for stream in streams.values():
                await stream.start()
            # Held by the streams, the table is followed once its follower has read it; under
            # load the first action could come before that, and be decided after a read.
            await until_followed(servers[0].store, table_id)
            turns = itertools.count()
            await play_turns(
                here, table_id, streams, random.Random(16), until=lambda _: next(turns) >= 12
            )
            # The serving replica decided on its followed cache; the other never loaded the
            # table, yet its lobby lists it as it stands.
            assert servers[0].store.reads_skipped >= 12
            assert servers[1].store.cached_version(table_id) == -1
            version = servers[0].store.cached_version(table_id)
            for _ in range(500):
                found = await there.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table_id))
                if found.table.sequence == version:
                    break
                await asyncio.sleep(0.01)
            assert found.table.sequence == version
            assert all(seat.occupied for seat in found.table.seats)
            await close_streams(streams)
    finally:
        for server in servers:
            await server.stop()
        await drop_schema(schema)


async def test_a_replica_that_cannot_reach_nats_does_not_start(tmp_path: Path) -> None:
    schema = schema_for(tmp_path)
    unreachable = "nats://127.0.0.1:1"  # port 1: nothing listens there
    server = SpadesServer(
        Settings(listen="127.0.0.1:0", metrics="off", web="off", house_bots=0),
        PostgresEventLog(POSTGRES_DSN, schema=schema, pool_size=2, fanout=unreachable),
    )
    try:
        with pytest.raises(
            StartupError, match=re.escape(f"cannot reach the NATS server {unreachable}")
        ):
            await asyncio.wait_for(server.start(), 30)
    finally:
        await drop_schema(schema)
