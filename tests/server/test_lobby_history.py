"""The lobby keeps only the tables not finished in memory: finished ones move to the log's rows
and are paged from there, merged with the ones in memory, in the same order as before; a
restart resumes from the lobby's checkpoint, and a checkpoint the log does not reach is
dropped and the lobby rebuilt from every event."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from spades.engine import Rules
from spades.v1 import actions_pb2, lobby_pb2
from spades_server.app.server import SpadesServer
from spades_server.eventlog.base import ProjectionCheckpoint
from spades_server.processes.projection import LOBBY, LobbyProjection
from spades_server.store import journal
from spades_server.store.table_store import TableStore
from tests.support.backends import LogStorage, Storages, read_to_head
from tests.support.clients import Client, clients, current_view
from tests.support.servers import lobby_caught_up, log_head, new_server, replicas

FINISHED = lobby_pb2.TABLE_STATUS_FINISHED


@contextlib.asynccontextmanager
async def serving(
    database: LogStorage, *, move_at_once: bool
) -> AsyncIterator[tuple[SpadesServer, Client]]:
    server = new_server(database)
    if move_at_once:  # every finished table moves to the rows at the next event
        lobby = server.projection
        lobby.settle_positions, lobby.checkpoint_interval, lobby.move_after = 0, 0.0, 1
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            yield server, Client(channel)
    finally:
        await server.stop()


async def finish_by_concession(client: Client, name: str, private: bool = False) -> str:
    created = await client.create_table(Rules(), name=name, private=private)
    table_id = created.table.table_id
    tokens = await client.seat_all(table_id, join_code=created.join_code)
    conceding = client.seat_stream(tokens[1])
    await conceding.start()
    sequence = (await current_view(client, table_id)).sequence
    concede = actions_pb2.Action(concession=actions_pb2.Concession())
    assert (await conceding.act(concede, sequence)).accepted
    await conceding.close()
    return table_id


async def every_page(client: Client, status: int = 0, page_size: int = 2) -> list[str]:
    listed: list[str] = []
    token = ""
    while True:
        page = await client.lobby.ListTables(
            lobby_pb2.ListTablesRequest(
                status=status,  # type: ignore[arg-type]
                page_size=page_size,
                page_token=token,
            )
        )
        assert len(page.tables) <= page_size
        listed += [table.table_id for table in page.tables]
        token = page.next_page_token
        if not token:
            return listed


async def rebuilt_listing(server: SpadesServer) -> list[lobby_pb2.Table]:
    """What a lobby folded from every event lists (no checkpoint, nothing moved)."""
    fresh = LobbyProjection(server.log)
    fresh.move_after = 10**9
    fresh.checkpoint_interval = 10**9
    for stored in await read_to_head(server.log, fresh.position):
        await fresh.fold(journal.decode(stored))
    summaries = [summary for summary in fresh.tables.values() if not summary.private]
    return sorted(
        summaries, key=lambda s: (s.create_time.ToNanoseconds(), s.table_id), reverse=True
    )


@pytest.mark.asyncio
async def test_finished_tables_are_paged_from_the_log_in_order(storage: Storages) -> None:
    database = storage()
    async with serving(database, move_at_once=True) as (server, client):
        finished = [await finish_by_concession(client, f"done {n}") for n in range(5)]
        private = await finish_by_concession(client, "private done", private=True)
        waiting = [
            (await client.create_table(Rules(), name=f"waiting {n}")).table.table_id
            for n in range(3)
        ]
        more_finished = await finish_by_concession(client, "done last")
        await log_head(server)

        # Nothing finished is left in memory (the last one moves at the next event).
        await client.create_table(Rules(), name="one more event")
        in_memory = set(server.projection.tables)
        assert not in_memory & {*finished[:-1], private}
        assert set(waiting) <= in_memory

        truth = await rebuilt_listing(server)
        expected = [summary.table_id for summary in truth]
        for page_size in (1, 2, 3, 100):
            assert await every_page(client, page_size=page_size) == expected
        expected_finished = [s.table_id for s in truth if s.status == FINISHED]
        assert set(expected_finished) == {*finished, more_finished}
        assert await every_page(client, FINISHED, page_size=2) == expected_finished
        assert private not in expected

        # A finished table moved to the rows: GetTable says what the events say.
        gotten = await client.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=finished[0]))
        assert gotten.table == next(s for s in truth if s.table_id == finished[0])
        gotten = await client.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=private))
        assert gotten.table.private and gotten.table.status == FINISHED

        # A page past the end is empty and says so.
        past = await client.lobby.ListTables(
            lobby_pb2.ListTablesRequest(page_size=5, page_token="500")
        )
        assert not past.tables and not past.next_page_token
        before = await every_page(client, page_size=3)

    # A clean stop checkpoints at the log's head: the next start folds nothing before it.
    async with serving(database, move_at_once=False) as (server, client):
        checkpoint = await server.log.load_projection(LOBBY)
        assert checkpoint is not None and checkpoint.position == await log_head(server)
        assert not set(server.projection.tables) & {*finished, private, more_finished}
        assert await every_page(client, page_size=3) == before
        still = await client.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=finished[2]))
        assert still.table.status == FINISHED


@pytest.mark.asyncio
async def test_a_checkpoint_past_the_log_is_dropped_and_the_lobby_rebuilt(
    storage: Storages,
) -> None:
    database = storage()
    async with serving(database, move_at_once=True) as (server, client):
        finished = await finish_by_concession(client, "done")
        waiting = (await client.create_table(Rules(), name="waiting")).table.table_id
        expected = await every_page(client)
        assert set(expected) == {finished, waiting}
        head = await log_head(server)
    # As if the log were restored from an older copy than the checkpoint's.
    log = new_server(database).log
    await log.open()
    await log.save_projection(LOBBY, [], ProjectionCheckpoint(head + 100, b"\x0a\x03bad"))
    await log.close()

    async with serving(database, move_at_once=False) as (_, client):
        assert await every_page(client) == expected
        table = await client.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=finished))
        assert table.table.status == FINISHED


@pytest.mark.asyncio
@pytest.mark.usefixtures("postgres")
async def test_replicas_list_a_table_once_while_one_has_moved_it(tmp_path: Path) -> None:
    async with replicas(tmp_path, 2) as (mover, keeper), clients([mover, keeper]) as (a, b):
        lobby = mover.projection  # moves every finished table at its next event
        lobby.settle_positions, lobby.checkpoint_interval, lobby.move_after = 0, 0.0, 1
        keeper.projection.move_after = 10**9  # keeps them in memory
        keeper.projection.checkpoint_interval = 10**9
        done = [await finish_by_concession(a, f"done {n}") for n in range(3)]
        extra = (await a.create_table(Rules(), name="one more event")).table.table_id
        for server in (mover, keeper):
            # every table of the test, the newest too: the keeper's lobby follows the log a
            # burst behind, and a table it does not list yet is not one it waits for by default
            await lobby_caught_up(server, [*done, extra])
        assert not set(mover.projection.tables) & set(done)
        assert set(done) <= set(keeper.projection.tables)
        for client in (a, b):
            listed = await every_page(client, page_size=2)
            assert len(listed) == len(set(listed)) == 4
            assert await every_page(client, FINISHED, page_size=1) == list(reversed(done))


@pytest.mark.asyncio
async def test_the_lobby_takes_the_entries_its_own_store_folded(
    server: SpadesServer, client: Client
) -> None:
    # The lobby follows the whole log; a row this process's table store folded already (it
    # appended it, or followed it for a stream) is handed over as that entry, not decoded again.
    assert server.projection.folded == server.store.folded_entry
    table_id = await finish_by_concession(client, "Folded once")
    table = server.store.cached(table_id)
    rows = await server.log.read(table_id)
    assert [row.version for row in rows] == list(range(1, table.version + 1))
    assert all(server.store.folded_entry(row) is table.entries[row.version - 1] for row in rows)
    # A row a store has not folded (its table is not in that store's cache) is left to decode.
    elsewhere = TableStore(server.log)
    assert all(elsewhere.folded_entry(row) is None for row in rows)
