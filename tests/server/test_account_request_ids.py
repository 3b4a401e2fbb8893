"""Client request ids on the account calls: a retried CreateAccount gets the same account and the
same working key (never NAME_TAKEN), a retried RotateKey the same new key (never a third one), on
the same server, after a restart that came between the commit and the reply, and through another
replica; the log keeps only the request id's digest, in the server's envelope."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import grpc
import pytest

from spades.client import SpadesClient
from spades.client.client import RETRY_DELAYS
from spades.v1 import account_pb2, account_pb2_grpc
from spades_server.app.server import SpadesServer
from spades_server.domain import accounts, tokens
from spades_server.eventlog.postgres import PostgresEventLog
from spades_server.ops.settings import Settings
from spades_server.store import account_store
from spades_server.v1 import log_pb2
from tests.support.accounts import BOT, PERSON, account_service, bearer, next_event
from tests.support.accounts import account_stub as stub
from tests.support.admin import OPERATOR_TOKEN, operator
from tests.support.backends import POSTGRES_DSN, Storages, drop_schema, schema_for
from tests.support.clients import Client, rpc_error
from tests.support.processes import free_port
from tests.support.refusals import assert_call_refused, nothing_written, refused_unchanged
from tests.support.servers import log_head, new_server
from tests.support.time import ManualClock, connected, wait_for_state

pytestmark = pytest.mark.asyncio

Code = grpc.StatusCode


def request_id() -> str:
    return uuid.uuid4().hex


def creation(name: str, request: str, kind: int = BOT) -> account_pb2.CreateAccountRequest:
    return account_pb2.CreateAccountRequest(name=name, kind=kind, request_id=request)  # type: ignore[arg-type]


def rotation(request: str, account_id: str = "") -> account_pb2.RotateKeyRequest:
    return account_pb2.RotateKeyRequest(request_id=request, account_id=account_id)


async def key_works(service: account_pb2_grpc.AccountServiceAsyncStub, key: str) -> bool:
    """Whether ``key`` opens the account's stream (which changes nothing)."""
    call = service.Connect(account_pb2.ConnectRequest(), metadata=bearer(key))
    try:
        return (await next_event(call)).event.sequence == 1
    except grpc.aio.AioRpcError as error:
        assert error.code() == Code.UNAUTHENTICATED, error
        return False
    finally:
        call.cancel()


async def rows_of(server: SpadesServer, account_id: str) -> list[log_pb2.AccountLogEntry]:
    stored = await server.log.read(account_store.stream_of(account_id))
    return [log_pb2.AccountLogEntry.FromString(row.data[1:]) for row in stored]


async def test_a_retried_create_account_gets_the_same_account_and_a_working_key(
    server: SpadesServer, client: Client
) -> None:
    service = stub(client)
    request = request_id()
    first = await service.CreateAccount(creation("Retrier", request))
    again = await service.CreateAccount(creation("retrier", request, PERSON))
    assert again.account == first.account and again.key == first.key
    assert first.account.kind == BOT  # the first call's kind decides, as the log says
    assert await key_works(service, again.key)
    rows = await rows_of(server, first.account.account_id)
    assert [row.event.WhichOneof("kind") for row in rows] == ["account_created", "key_issued"]
    # Only digests are stored, in the envelope: not the id, not the key, not in a public event.
    assert rows[0].request_id_sha256 == tokens.digest(request)
    for row in await server.log.read(account_store.stream_of(first.account.account_id)):
        assert request.encode() not in row.data and first.key.encode() not in row.data
    assert all(tokens.digest(request) not in row.event.SerializeToString() for row in rows)
    # Without a request id a second call is a second creation, refused: the name is taken.
    plain = account_pb2.CreateAccountRequest(name="Plain", kind=BOT)
    await service.CreateAccount(plain)
    await refused_unchanged(server, service.CreateAccount(plain), Code.ALREADY_EXISTS, "NAME_TAKEN")


async def test_a_request_id_is_one_call_on_an_account(server: SpadesServer, client: Client) -> None:
    service = stub(client)
    made_with = request_id()
    created = await service.CreateAccount(creation("Reuser", made_with))
    head = await log_head(server)
    # The creation's id sent again for a rotation, another's id for this name: refused, unwritten.
    async with nothing_written(server):
        error = await rpc_error(
            service.RotateKey(rotation(made_with), metadata=bearer(created.key))
        )
        assert_call_refused(error, Code.INVALID_ARGUMENT, "REQUEST_ID_REUSED")
    async with nothing_written(server):
        error = await rpc_error(service.CreateAccount(creation("Reuser", request_id())))
        assert_call_refused(error, Code.ALREADY_EXISTS, "NAME_TAKEN")
    assert await log_head(server) == head
    rotated_with = request_id()
    rotated = await service.RotateKey(rotation(rotated_with), metadata=bearer(created.key))
    head = await log_head(server)
    async with nothing_written(server):
        error = await rpc_error(service.CreateAccount(creation("REUSER", rotated_with)))
        assert_call_refused(error, Code.INVALID_ARGUMENT, "REQUEST_ID_REUSED")
    assert await log_head(server) == head
    assert await key_works(service, rotated.key)


@pytest.mark.parametrize("bad", ["short", "x" * 65, "has space in it!!", "é" * 20])
async def test_a_malformed_request_id_is_refused_and_changes_nothing(
    server: SpadesServer, client: Client, bad: str
) -> None:
    service = stub(client)
    created = await service.CreateAccount(creation("Careful", request_id()))
    head = await log_head(server)
    for call in (
        service.CreateAccount(creation("Someone", bad)),
        service.RotateKey(rotation(bad), metadata=bearer(created.key)),
    ):
        error = await rpc_error(call)
        assert error.code() is Code.INVALID_ARGUMENT  # REQUEST_ID_INVALID or FIELD_TOO_LONG
        assert "request_id" in (error.details() or "")
    assert await log_head(server) == head
    assert await key_works(service, created.key)


async def test_a_retried_rotation_gets_the_same_new_key_and_issues_no_third(
    server: SpadesServer, client: Client
) -> None:
    service = stub(client)
    created = await service.CreateAccount(creation("Rotor", request_id()))
    request = request_id()
    first = await service.RotateKey(rotation(request), metadata=bearer(created.key))
    # The retry sends the key the lost reply replaced (all the client has), or the new one.
    again = await service.RotateKey(rotation(request), metadata=bearer(created.key))
    third = await service.RotateKey(rotation(request), metadata=bearer(first.key))
    assert again.key == first.key == third.key != created.key
    assert again.account == first.account
    assert await key_works(service, first.key)
    assert not await key_works(service, created.key)
    kinds = [
        row.event.WhichOneof("kind") for row in await rows_of(server, created.account.account_id)
    ]
    assert kinds == ["account_created", "key_issued", "key_issued"]
    # The replaced key serves that retry only: another call with it is refused as revoked.
    for call in (
        service.RotateKey(rotation(request_id()), metadata=bearer(created.key)),
        service.RevokeKey(account_pb2.RevokeKeyRequest(), metadata=bearer(created.key)),
    ):
        await refused_unchanged(server, call, Code.UNAUTHENTICATED, "KEY_REVOKED")
    # After a newer rotation the old retry still answers its own outcome, and issues nothing.
    newer = await service.RotateKey(rotation(request_id()), metadata=bearer(first.key))
    head = await log_head(server)
    late = await service.RotateKey(rotation(request), metadata=bearer(created.key))
    assert late.key == first.key and await log_head(server) == head
    assert await key_works(service, newer.key) and not await key_works(service, first.key)


async def test_the_operators_retried_rotation_gets_the_same_key(storage: Storages) -> None:
    async with account_service(storage(), operator_token=OPERATOR_TOKEN) as (server, service):
        created = await service.CreateAccount(creation("Lost Key", request_id(), PERSON))
        await service.RevokeKey(account_pb2.RevokeKeyRequest(), metadata=bearer(created.key))
        account_id, request = created.account.account_id, request_id()
        first = await service.RotateKey(rotation(request, account_id), metadata=operator())
        again = await service.RotateKey(rotation(request, account_id), metadata=operator())
        assert again.key == first.key and not again.account.key_revoked
        assert await key_works(service, again.key)
        assert len(await rows_of(server, account_id)) == 4  # created, issued, revoked, issued


async def test_calls_committed_before_a_restart_are_answered_after_it(storage: Storages) -> None:
    """The server went away after the commit and before the client read the reply."""
    database = storage()
    create_request, rotate_request = request_id(), request_id()
    async with account_service(database) as (_, service):
        created = await service.CreateAccount(creation("Survivor", create_request))
        rotated = await service.RotateKey(rotation(rotate_request), metadata=bearer(created.key))
    async with account_service(database) as (server, service):
        head = await log_head(server)
        again = await service.CreateAccount(creation("Survivor", create_request))
        assert again.account == created.account and again.key == created.key
        rerotated = await service.RotateKey(rotation(rotate_request), metadata=bearer(created.key))
        assert rerotated.key == rotated.key
        assert await log_head(server) == head
        assert await key_works(service, rerotated.key)


async def test_one_request_through_two_replicas_at_once_has_one_outcome(
    tmp_path: Path, postgres: None
) -> None:
    from tests.support.clients import clients
    from tests.support.servers import replicas

    async with replicas(tmp_path, 2) as servers, clients(servers) as (a, b):
        first, second = stub(a), stub(b)
        request = request_id()
        made = await asyncio.gather(
            first.CreateAccount(creation("Twin", request)),
            second.CreateAccount(creation("Twin", request)),
        )
        assert made[0].account == made[1].account and made[0].key == made[1].key
        account_id, key = made[0].account.account_id, made[0].key
        rotate_request = request_id()
        rotated = await asyncio.gather(
            first.RotateKey(rotation(rotate_request), metadata=bearer(key)),
            second.RotateKey(rotation(rotate_request), metadata=bearer(key)),
        )
        assert rotated[0].key == rotated[1].key != key
        assert len(await rows_of(servers[0], account_id)) == 3
        assert await key_works(second, rotated[0].key) and await key_works(first, rotated[1].key)


async def test_the_sdk_retries_an_unanswered_creation_with_its_request_id(
    storage: Storages,
) -> None:
    port = free_port()
    server = new_server(storage(), listen=f"127.0.0.1:{port}", house_bots=0)
    clock = ManualClock()
    async with SpadesClient(f"127.0.0.1:{port}", sleep=clock.sleep) as client:
        creating = asyncio.ensure_future(client.create_account("Patient", kind="person"))
        await clock.sleeping()  # the first try found no server: the client waits to retry
        assert not creating.done()
        await server.start()
        try:
            await wait_for_state(connected(client), "the client's channel reaches the server")
            clock.advance(RETRY_DELAYS[0])  # the retry
            created = await asyncio.wait_for(creating, 15)
            assert created.account.name == "Patient" and created.account.kind == "person"
            # The same id again (a retry the SDK makes) gets the same key, as does a rotation's.
            request = request_id()
            made = await client.create_account("Twice", request_id=request)
            assert await client.create_account("Twice", request_id=request) == made
            client.account_key = made.key
            rotate_request = request_id()
            rotated = await client.rotate_key(request_id=rotate_request)
            assert client.account_key == rotated.key != made.key
            assert await client.rotate_key(request_id=rotate_request) == rotated
        finally:
            await server.stop()


async def test_a_creations_request_id_sent_for_another_name_is_refused_and_makes_nothing(
    storage: Storages,
) -> None:
    database = storage()
    request = request_id()
    async with account_service(database) as (server, service):
        first = await service.CreateAccount(creation("First Name", request))
        head = await log_head(server)
        async with nothing_written(server):
            error = await rpc_error(service.CreateAccount(creation("Second Name", request)))
            assert_call_refused(error, Code.INVALID_ARGUMENT, "REQUEST_ID_REUSED")
        assert await log_head(server) == head
        missing = await rpc_error(
            service.GetAccount(account_pb2.GetAccountRequest(name="Second Name"))
        )
        assert missing.code() is Code.NOT_FOUND
        # The first call's retry still gets its account and key.
        again = await service.CreateAccount(creation("First Name", request))
        assert again.account == first.account and again.key == first.key
    async with account_service(database) as (server, service):  # kept in the log
        head = await log_head(server)
        async with nothing_written(server):
            error = await rpc_error(service.CreateAccount(creation("Third Name", request)))
            assert_call_refused(error, Code.INVALID_ARGUMENT, "REQUEST_ID_REUSED")
        assert await log_head(server) == head
        assert not await server.log.read(
            account_store.stream_of(accounts.account_id_for("Third Name"))
        )


async def test_one_request_id_for_two_names_through_two_replicas_makes_one_account(
    tmp_path: Path, postgres: None
) -> None:
    from tests.support.clients import clients
    from tests.support.servers import replicas

    async with replicas(tmp_path, 2) as servers, clients(servers) as (a, b):
        request = request_id()
        outcomes = await asyncio.gather(
            stub(a).CreateAccount(creation("Left Twin", request)),
            stub(b).CreateAccount(creation("Right Twin", request)),
            return_exceptions=True,
        )
        made = [o for o in outcomes if isinstance(o, account_pb2.CreateAccountResponse)]
        refused = [o for o in outcomes if isinstance(o, grpc.aio.AioRpcError)]
        assert len(made) == 1 and len(refused) == 1, outcomes
        assert_call_refused(refused[0], Code.INVALID_ARGUMENT, "REQUEST_ID_REUSED")
        other = "Right Twin" if made[0].account.name == "Left Twin" else "Left Twin"
        assert not await servers[0].log.read(
            account_store.stream_of(accounts.account_id_for(other))
        )
        # Sent to the other replica afterwards, the other name is refused too.
        for service in (stub(a), stub(b)):
            await refused_unchanged(
                servers[0],
                service.CreateAccount(creation(other, request)),
                Code.INVALID_ARGUMENT,
                "REQUEST_ID_REUSED",
            )


async def test_replicas_needing_them_together_make_each_house_account_once(
    tmp_path: Path, postgres: None
) -> None:
    schema = schema_for(tmp_path)
    servers = [
        SpadesServer(
            Settings(
                listen="127.0.0.1:0", metrics="off", web="off", house_bots=4, rated_fill_after=30
            ),
            PostgresEventLog(POSTGRES_DSN, schema=schema, pool_size=4),
        )
        for _ in range(2)
    ]
    try:
        await asyncio.gather(*(server.start() for server in servers))
        houses = await asyncio.gather(
            *(server.house_bots.ensure_house_accounts() for server in servers)
        )
        assert houses[0].keys() == houses[1].keys() == {"heuristic", "search", "random"}
        for kind, account in houses[0].items():
            assert houses[1][kind].account_id == account.account_id and account.house
            rows = await servers[0].log.read(account_store.stream_of(account.account_id))
            assert len(rows) == 1  # one creation (and no key)
    finally:
        for server in servers:
            await server.stop()
        await drop_schema(schema)
