"""A decision that keeps meeting another replica's append gives up: TABLE_BUSY for a table, and
the aggregates' ``*_CONTENDED``, with ABORTED, nothing written, and (TABLE_BUSY) nothing kept
for the action id, so the same action sent again is decided afresh; and an append whose
connection is lost mid-statement is LOG_UNAVAILABLE, kept no more than TABLE_BUSY.

Only on PostgreSQL: the SQLite log is locked to one process, whose store folds every append it
makes, so its decisions never meet a conflict at all (those codes cannot happen there).

The conflict is made by real components, in the order a slow replica would meet it: the
server's append is held at the log by a PostgreSQL transaction of the test (on the action's
claim key, which the append writes in the same statement, or on the stream's next version)
until another replica, a second server on the same log (or the test, appending what the
product's own decision and encoder make), has appended to the same stream. The server under
test decides once (``decide_attempts``, the stores' seam for this; 20 by default), so one
conflict is its last.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import asyncpg
import grpc
import pytest
import pytest_asyncio

from spades import protocol
from spades.engine import Rules
from spades.v1 import (
    account_pb2,
    account_pb2_grpc,
    actions_pb2,
    challenge_pb2,
    challenge_pb2_grpc,
    play_pb2,
    tournament_pb2,
    tournament_pb2_grpc,
)
from spades_server.app.server import SpadesServer
from spades_server.domain import accounts, challenges, table_events, tournaments
from spades_server.store.repository import Repository
from tests.support.accounts import BOT, PERSON, bearer, new_account
from tests.support.backends import POSTGRES_DSN, LogStorage, head_position, require_postgres
from tests.support.clients import READ_TIMEOUT, TOKEN_KEY, Client, current_view, rpc_error
from tests.support.refusals import assert_action_refused, assert_call_refused
from tests.support.seats import bid
from tests.support.servers import running_server

Code = grpc.StatusCode
OPERATOR = "operator token for the contention tests"
EXTENSION = actions_pb2.Action(extension_claim=actions_pb2.ExtensionClaim())


@pytest.fixture
def postgres_log(tmp_path: Path) -> LogStorage:
    """The test's log on PostgreSQL (which must answer)."""
    require_postgres()
    return LogStorage("postgres", tmp_path / "tables.db")


@pytest_asyncio.fixture
async def shared_log(postgres_log: LogStorage) -> AsyncIterator[LogStorage]:
    yield postgres_log
    await postgres_log.remove()


@asynccontextmanager
async def held_claim(storage: LogStorage, stream_id: str, key: str) -> AsyncIterator[int]:
    """A transaction holding the claim ``key`` of ``stream_id`` (uncommitted) while the block
    runs, rolled back after it: an append that claims the same key waits for it. Yields the
    transaction's backend pid."""
    connection = await asyncpg.connect(POSTGRES_DSN)
    try:
        transaction = connection.transaction()
        await transaction.start()
        await connection.execute(
            f'INSERT INTO "{storage.schema}".claims (stream_id, key, data) VALUES ($1, $2, $3)',
            stream_id,
            key,
            b"held by the test",
        )
        try:
            yield int(await connection.fetchval("SELECT pg_backend_pid()"))
        finally:
            await transaction.rollback()
    finally:
        await connection.close()


async def waiting_on(pid: int) -> None:
    """Until a statement waits for a lock the backend ``pid`` holds."""
    connection = await asyncpg.connect(POSTGRES_DSN)
    try:
        async with asyncio.timeout(READ_TIMEOUT):
            while not await connection.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))", pid
            ):
                await asyncio.sleep(0.005)
    finally:
        await connection.close()


@asynccontextmanager
async def held_rows(
    storage: LogStorage, stream_id: str, after_version: int, rows: Sequence[bytes]
) -> AsyncIterator[int]:
    """A transaction appending ``rows`` to ``stream_id`` after ``after_version``, as another
    replica would, held uncommitted while the block runs and committed after it: an append at
    the same version waits for it, then conflicts. Yields the transaction's backend pid."""
    connection = await asyncpg.connect(POSTGRES_DSN)
    try:
        async with connection.transaction():
            await connection.executemany(
                f'INSERT INTO "{storage.schema}".events (stream_id, version, recorded_at, data)'
                " VALUES ($1, $2, extract(epoch FROM now()), $3)",
                [(stream_id, after_version + n, row) for n, row in enumerate(rows, start=1)],
            )
            yield int(await connection.fetchval("SELECT pg_backend_pid()"))
    finally:
        await connection.close()


async def refused_once_contended(
    storage: LogStorage,
    server: SpadesServer,
    repository: Repository[Any, Any, Any],
    aggregate_id: str,
    foreign: Callable[[Any], Any],
    call: Callable[[], Awaitable[object]],
) -> grpc.aio.AioRpcError:
    """The error of ``call`` made while another replica appends what ``foreign(aggregate)``
    decided to the aggregate's stream (the server deciding once); no event of its own
    written."""
    aggregate = await repository.load(aggregate_id)
    rows = repository.kind.rows(foreign(aggregate))
    repository.decide_attempts = 1
    async with held_rows(
        storage, repository.stream_of(aggregate_id), aggregate.version, rows
    ) as holder:
        made = asyncio.ensure_future(call())
        await waiting_on(holder)
    head = await head_position(server.log)
    error = await rpc_error(made)
    assert await head_position(server.log) == head, "a refusal writes nothing"
    return error


def act(client: Client, token: str, action: actions_pb2.Action, sequence: int, action_id: str):  # type: ignore[no-untyped-def]
    request = play_pb2.ActRequest(
        action=play_pb2.ActionRequest(action_id=action_id, sequence=sequence, action=action)
    )
    return client.play.Act(request, metadata=((TOKEN_KEY, token),))


@pytest.mark.asyncio
async def test_an_action_that_keeps_meeting_another_replicas_append_is_table_busy_and_not_kept(
    shared_log: LogStorage,
) -> None:
    async with (
        running_server(shared_log) as server,
        running_server(shared_log) as replica,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
        grpc.aio.insecure_channel(f"127.0.0.1:{replica.port}") as replica_channel,
    ):
        client, other = Client(channel), Client(replica_channel)
        table_id = (await client.create_table(Rules())).table.table_id
        tokens = await client.seat_all(table_id)
        now = await current_view(client, table_id)
        seat, sequence = protocol.seat_from_proto(now.view.turn), now.sequence
        server.store.decide_attempts = 1
        action_id = uuid.uuid4().hex
        key = table_events.action_claim_key(seat, action_id)
        async with held_claim(shared_log, table_id, key) as holder:
            bidding = asyncio.ensure_future(act(client, tokens[seat], bid(3), sequence, action_id))
            await waiting_on(holder)  # the server decided on `sequence` and is appending
            # Another replica moves the table on meanwhile: the seat claims its extension.
            claimed = await act(other, tokens[seat], EXTENSION, sequence, uuid.uuid4().hex)
            assert claimed.result.accepted, claimed.result
        head = await head_position(server.log)
        refused = (await bidding).result
        assert_action_refused(refused, Code.ABORTED, "TABLE_BUSY")
        assert await head_position(server.log) == head, "a refusal writes nothing"
        # Not kept for the action id: the same action again is decided afresh, and accepted.
        again = await act(client, tokens[seat], bid(3), sequence + 1, action_id)
        assert again.result.accepted, again.result


@pytest.mark.asyncio
async def test_an_account_that_keeps_changing_under_a_call_is_account_contended(
    shared_log: LogStorage,
) -> None:
    async with (
        running_server(shared_log) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
    ):
        stub = account_pb2_grpc.AccountServiceStub(channel)
        created = await stub.CreateAccount(
            account_pb2.CreateAccountRequest(
                name="Contended Bot", kind=account_pb2.ACCOUNT_KIND_BOT
            )
        )
        key = (("authorization", f"Bearer {created.key}"),)
        ours = account_pb2.RuleManifest(players=[4])
        theirs = account_pb2.RuleManifest(players=[3])
        error = await refused_once_contended(
            shared_log,
            server,
            server.accounts,
            created.account.account_id,
            lambda account: accounts.decide_manifest(account, theirs),
            lambda: stub.SetManifest(account_pb2.SetManifestRequest(manifest=ours), metadata=key),
        )
        assert_call_refused(error, Code.ABORTED, "ACCOUNT_CONTENDED")
        # The other replica's manifest stands; the call made again is decided afresh.
        account = await server.accounts.load(created.account.account_id)
        assert account.manifest is not None and list(account.manifest.players) == [3]
        await stub.SetManifest(account_pb2.SetManifestRequest(manifest=ours), metadata=key)


@pytest.mark.asyncio
async def test_a_challenge_that_keeps_changing_under_a_call_is_challenge_contended(
    shared_log: LogStorage,
) -> None:
    async with (
        running_server(shared_log) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
    ):
        service = challenge_pb2_grpc.ChallengeServiceStub(channel)
        ada = bearer((await new_account(channel, "Ada", PERSON)).key)
        bea_id = (await new_account(channel, "Bea", PERSON)).account.account_id
        made = await service.CreateChallenge(
            challenge_pb2.CreateChallengeRequest(
                opponent_ids=[bea_id], rules=protocol.rules_to_proto(Rules())
            ),
            metadata=ada,
        )
        challenge_id = made.challenge.challenge_id
        bea = await server.accounts.load(bea_id)
        error = await refused_once_contended(
            shared_log,
            server,
            server.challenges.store,
            challenge_id,
            lambda challenge: challenges.decide_decline(
                challenge, bea, challenge_pb2.DECLINE_REASON_LATER, time.time()
            ),
            lambda: service.CancelChallenge(
                challenge_pb2.CancelChallengeRequest(challenge_id=challenge_id), metadata=ada
            ),
        )
        assert_call_refused(error, Code.ABORTED, "CHALLENGE_CONTENDED")


@pytest.mark.asyncio
async def test_a_tournament_that_keeps_changing_under_an_entry_is_tournament_contended(
    shared_log: LogStorage,
) -> None:
    async with (
        running_server(shared_log, operator_token=OPERATOR) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
    ):
        service = tournament_pb2_grpc.TournamentServiceStub(channel)
        settings = tournament_pb2.TournamentSettings(
            name="Contended Cup",
            format=tournament_pb2.TOURNAMENT_FORMAT_ROUND_ROBIN,
            rules=protocol.rules_to_proto(Rules()),
            boards=1,
            start_when_entrants=4,
        )
        created = await service.CreateTournament(
            tournament_pb2.CreateTournamentRequest(settings=settings),
            metadata=(("spades-operator-token", OPERATOR),),
        )
        tournament_id = created.tournament.tournament_id
        ada = bearer((await new_account(channel, "Ada", BOT)).key)
        bea_id = (await new_account(channel, "Bea", BOT)).account.account_id
        bea = await server.accounts.load(bea_id)
        error = await refused_once_contended(
            shared_log,
            server,
            server.tournaments,
            tournament_id,
            lambda tournament: tournaments.decide_entry(tournament, bea),
            lambda: service.EnterTournament(
                tournament_pb2.EnterTournamentRequest(tournament_id=tournament_id), metadata=ada
            ),
        )
        assert_call_refused(error, Code.ABORTED, "TOURNAMENT_CONTENDED")


@pytest.mark.asyncio
async def test_an_action_whose_append_loses_its_connection_is_log_unavailable_and_not_kept(
    shared_log: LogStorage,
) -> None:
    async with (
        running_server(shared_log) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
    ):
        client = Client(channel)
        table_id = (await client.create_table(Rules())).table.table_id
        tokens = await client.seat_all(table_id)
        now = await current_view(client, table_id)
        seat, sequence = protocol.seat_from_proto(now.view.turn), now.sequence
        action_id = uuid.uuid4().hex
        key = table_events.action_claim_key(seat, action_id)
        head = await head_position(server.log)
        async with held_claim(shared_log, table_id, key) as holder:
            bidding = asyncio.ensure_future(act(client, tokens[seat], bid(3), sequence, action_id))
            await waiting_on(holder)
            # The server's connection is cut mid-append, as when PostgreSQL goes away.
            connection = await asyncpg.connect(POSTGRES_DSN)
            try:
                cut = await connection.fetchval(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                    " WHERE $1 = ANY(pg_blocking_pids(pid))",
                    holder,
                )
            finally:
                await connection.close()
            assert cut == 1
            refused = (await bidding).result
        assert_action_refused(refused, Code.UNAVAILABLE, "LOG_UNAVAILABLE")
        assert await head_position(server.log) == head, "a refusal writes nothing"
        # Not kept for the action id: the same action again is decided afresh, and accepted.
        again = await act(client, tokens[seat], bid(3), sequence, action_id)
        assert again.result.accepted, again.result
