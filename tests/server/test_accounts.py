"""Accounts: created once per name, keys shown once and checked by digest, rotated and revoked,
on both log backends, through a real server (statuses) and a real log (reason codes)."""

from __future__ import annotations

import asyncio
import time

import grpc
import pytest

from spades.v1 import account_pb2, account_pb2_grpc, lobby_pb2
from spades_server.app import config
from spades_server.app.server import SpadesServer
from spades_server.domain import accounts, errors, tokens
from spades_server.store import account_store
from spades_server.store.account_store import AccountStore
from tests.support.accounts import BOT, PERSON, account_service, account_stub, bearer, next_event
from tests.support.admin import OPERATOR_TOKEN, operator
from tests.support.backends import Storages
from tests.support.clients import Client, rpc_error
from tests.support.refusals import assert_call_refused, nothing_written
from tests.support.servers import log_head, new_server

pytestmark = pytest.mark.asyncio

Code = grpc.StatusCode


async def create(
    accounts_: account_pb2_grpc.AccountServiceAsyncStub, name: str, kind: int = BOT
) -> account_pb2.CreateAccountResponse:
    return await accounts_.CreateAccount(account_pb2.CreateAccountRequest(name=name, kind=kind))  # type: ignore[arg-type]


async def test_an_account_is_created_once_and_found_by_id_or_any_case_of_its_name(
    server: SpadesServer, client: Client
) -> None:
    service = account_stub(client)
    created = await create(service, "  Night Owl ", PERSON)
    account = created.account
    assert account.name == "Night Owl" and account.kind == PERSON and not account.key_revoked
    assert created.key.startswith("spk.") and len(created.key.rpartition(".")[2]) >= 32
    by_id = await service.GetAccount(account_pb2.GetAccountRequest(account_id=account.account_id))
    by_name = await service.GetAccount(account_pb2.GetAccountRequest(name="NIGHT owl"))
    assert by_id.account == account == by_name.account
    # The key is not in the log: only its digest is.
    rows = await server.log.read(account_store.stream_of(account.account_id))
    assert rows and all(created.key.encode() not in row.data for row in rows)
    assert any(tokens.digest(created.key) in row.data for row in rows)
    # The lobby is not confused by the account's stream.
    listed = await client.lobby.ListTables(lobby_pb2.ListTablesRequest())
    assert list(listed.tables) == []


async def test_a_taken_name_in_any_case_is_refused_and_nothing_is_written(
    server: SpadesServer, client: Client
) -> None:
    service = account_stub(client)
    await create(service, "Heuristic One")
    head = await log_head(server)
    error = await rpc_error(create(service, "heuristic ONE", PERSON))
    assert error.code() == Code.ALREADY_EXISTS and "taken" in (error.details() or "")
    assert await log_head(server) == head


@pytest.mark.parametrize(
    ("name", "kind", "words"),
    [
        ("x" * 33, BOT, "at most 32"),
        ("   ", BOT, "required"),
        ("tab\there", BOT, "printable"),
        ("No Kind", account_pb2.ACCOUNT_KIND_UNSPECIFIED, "bot or a person"),
        ("Bad Kind", 7, "bot or a person"),
    ],
)
async def test_a_bad_name_or_kind_is_invalid_and_writes_nothing(
    server: SpadesServer, client: Client, name: str, kind: int, words: str
) -> None:
    head = await log_head(server)
    error = await rpc_error(create(account_stub(client), name, kind))
    assert error.code() == Code.INVALID_ARGUMENT and words in (error.details() or "")
    assert await log_head(server) == head


async def test_an_unknown_account_is_not_found(client: Client) -> None:
    service = account_stub(client)
    for request in (
        account_pb2.GetAccountRequest(account_id="0123456789abcdef0123"),
        account_pb2.GetAccountRequest(name="nobody here"),
    ):
        error = await rpc_error(service.GetAccount(request))
        assert error.code() == Code.NOT_FOUND, error
    error = await rpc_error(service.GetAccount(account_pb2.GetAccountRequest()))
    assert error.code() == Code.INVALID_ARGUMENT


async def test_a_rotated_key_stops_working_and_the_new_one_works(
    server: SpadesServer, client: Client
) -> None:
    service = account_stub(client)
    created = await create(service, "Rotator")
    rotated = await service.RotateKey(account_pb2.RotateKeyRequest(), metadata=bearer(created.key))
    assert rotated.key != created.key and rotated.account.account_id == created.account.account_id
    head = await log_head(server)
    error = await rpc_error(
        service.RotateKey(account_pb2.RotateKeyRequest(), metadata=bearer(created.key))
    )
    assert error.code() == Code.UNAUTHENTICATED and "revoked or replaced" in (error.details() or "")
    assert await log_head(server) == head
    again = await service.RotateKey(account_pb2.RotateKeyRequest(), metadata=bearer(rotated.key))
    assert again.key not in (created.key, rotated.key)


async def test_keys_that_are_missing_malformed_or_not_the_accounts_are_unauthenticated(
    server: SpadesServer, client: Client
) -> None:
    service = account_stub(client)
    created = await create(service, "Guarded")
    forged = created.key[:-4] + ("AAAA" if not created.key.endswith("AAAA") else "BBBB")
    head = await log_head(server)
    cases = [
        ((), "Bearer"),
        ((("authorization", created.key),), "Bearer <account key>"),
        (bearer("not-a-key"), "not valid"),
        (bearer(forged), "not valid"),
        (bearer("spk.0123456789abcdef0123.abcdefghijklmnopqrstuvwxyz"), "not valid"),
    ]
    for metadata, words in cases:
        error = await rpc_error(
            service.RevokeKey(account_pb2.RevokeKeyRequest(), metadata=metadata)
        )
        assert error.code() == Code.UNAUTHENTICATED, (metadata, error)
        assert words in (error.details() or ""), (words, error.details())
    # Naming an account is the operator's, and this server has no operator token.
    error = await rpc_error(
        service.RevokeKey(
            account_pb2.RevokeKeyRequest(account_id=created.account.account_id),
            metadata=bearer(created.key),
        )
    )
    assert error.code() == Code.PERMISSION_DENIED
    assert await log_head(server) == head


async def test_a_key_works_after_a_restart_and_a_revoked_one_never(storage: Storages) -> None:
    settings = {"operator_token": OPERATOR_TOKEN}
    async with account_service(storage(), **settings) as (_, service):
        kept = await create(service, "Keeper")
        lost = await create(service, "Loser", PERSON)
        revoked = await service.RevokeKey(account_pb2.RevokeKeyRequest(), metadata=bearer(lost.key))
        assert revoked.account.key_revoked
    async with account_service(storage(), **settings) as (_, service):
        rotated = await service.RotateKey(account_pb2.RotateKeyRequest(), metadata=bearer(kept.key))
        assert rotated.account.name == "Keeper" and not rotated.account.key_revoked
        for call in (
            service.RotateKey(account_pb2.RotateKeyRequest(), metadata=bearer(lost.key)),
            service.RevokeKey(account_pb2.RevokeKeyRequest(), metadata=bearer(lost.key)),
        ):
            error = await rpc_error(call)
            assert error.code() == Code.UNAUTHENTICATED, error
        # The operator may give the account a key again; the revoked one stays dead.
        reissued = await service.RotateKey(
            account_pb2.RotateKeyRequest(account_id=lost.account.account_id),
            metadata=operator(),
        )
        assert not reissued.account.key_revoked
        error = await rpc_error(
            service.RotateKey(account_pb2.RotateKeyRequest(), metadata=bearer(lost.key))
        )
        assert error.code() == Code.UNAUTHENTICATED
        await service.RevokeKey(account_pb2.RevokeKeyRequest(), metadata=bearer(reissued.key))
        # The name stays taken after a restart.
        error = await rpc_error(create(service, "KEEPER"))
        assert error.code() == Code.ALREADY_EXISTS


async def test_operator_only_registration_needs_the_operator_token(storage: Storages) -> None:
    async with account_service(
        storage(), operator_token=OPERATOR_TOKEN, registration="operator"
    ) as (server, service):
        head = await log_head(server)
        async with nothing_written(server):
            error = await rpc_error(create(service, "Walk In"))
            assert_call_refused(error, Code.UNAUTHENTICATED, "REGISTRATION_CLOSED")
        assert "operator only" in (error.details() or "")
        async with nothing_written(server):
            wrong = await rpc_error(
                service.CreateAccount(
                    account_pb2.CreateAccountRequest(name="Walk In", kind=BOT),
                    metadata=(("spades-operator-token", "x" * 32),),
                )
            )
            assert_call_refused(wrong, Code.UNAUTHENTICATED, "REGISTRATION_CLOSED")
        assert await log_head(server) == head
        made = await service.CreateAccount(
            account_pb2.CreateAccountRequest(name="Walk In", kind=BOT), metadata=operator()
        )
        assert made.account.name == "Walk In"


# ------------------------------------------------------------------ the store, on a real log


async def refusal_code(awaitable: object) -> str:
    try:
        await awaitable  # type: ignore[misc]
    except errors.RequestError as error:
        return error.reason_code
    raise AssertionError("no refusal")


async def test_the_store_refuses_with_stable_reason_codes(storage: Storages) -> None:
    log = storage().new_log()
    await log.open()
    try:
        store = AccountStore(log)
        account, key = await store.create("Coded", BOT)
        assert await refusal_code(store.create("CODED", PERSON)) == "NAME_TAKEN"
        assert await refusal_code(store.load("ffffffffffffffffffff")) == "ACCOUNT_NOT_FOUND"
        assert await refusal_code(store.authenticate("garbage")) == "KEY_NOT_VALID"
        assert (await store.authenticate(key)).account_id == account.account_id
        await store.execute(
            account.account_id, lambda a: accounts.decide_revocation(a, by_operator=False)
        )
        assert await refusal_code(store.authenticate(key)) == "KEY_REVOKED"
        # A second store on the same log (another replica) sees the same, and cannot create
        # the name again: the stream's expected version settles it.
        other = AccountStore(log)
        assert await refusal_code(other.authenticate(key)) == "KEY_REVOKED"
        assert await refusal_code(other.create("cOdEd", BOT)) == "NAME_TAKEN"
    finally:
        await log.close()


async def test_name_and_kind_checks_have_reason_codes() -> None:
    def code_of(check: object, value: object) -> str:
        try:
            check(value)  # type: ignore[operator]
        except errors.RequestError as error:
            return error.reason_code
        raise AssertionError("accepted")

    assert code_of(accounts.check_account_name, "y" * 33) == "FIELD_TOO_LONG"
    assert code_of(accounts.check_account_name, "  ") == "MISSING_FIELD"
    assert code_of(accounts.check_account_name, "a\x07b") == "INVALID_NAME"
    assert code_of(accounts.check_kind, 0) == "MISSING_FIELD"
    assert code_of(accounts.check_kind, 7) == "UNKNOWN_ACCOUNT_KIND"
    assert accounts.check_account_name("  Émile  ") == "Émile"
    assert accounts.account_id_for("ÉMILE") == accounts.account_id_for("émile")


async def test_registration_is_a_flag_and_a_variable_and_operator_needs_the_token() -> None:
    assert config.from_args([], environ={}).registration == "open"
    assert (
        config.from_args(
            [], environ={"SPADES_REGISTRATION": "operator", "SPADES_OPERATOR_TOKEN": OPERATOR_TOKEN}
        ).registration
        == "operator"
    )
    for argv, environ in (
        (["--registration", "operator"], {}),
        ([], {"SPADES_REGISTRATION": "closed"}),
    ):
        with pytest.raises(SystemExit) as exited:
            config.from_args(argv, environ=environ)
        assert exited.value.code == 2


async def test_connect_resumes_by_sequence_and_ends_when_its_key_is_replaced(
    client: Client,
) -> None:
    service = account_stub(client)
    created = await create(service, "Streamer")
    rotated = await service.RotateKey(account_pb2.RotateKeyRequest(), metadata=bearer(created.key))
    # From sequence 1: the first key, then the rotation's (opened with the new key: it stays).
    call = service.Connect(
        account_pb2.ConnectRequest(after_sequence=1), metadata=bearer(rotated.key)
    )
    first, second = await next_event(call), await next_event(call)
    assert [first.event.sequence, second.event.sequence] == [2, 3]
    assert [first.event.WhichOneof("kind"), second.event.WhichOneof("kind")] == ["key_issued"] * 2
    # The key is revoked: the stream tells it, then ends as the key's.
    await service.RevokeKey(account_pb2.RevokeKeyRequest(), metadata=bearer(rotated.key))
    revoked = await asyncio.wait_for(next_event(call), 10)
    assert revoked.event.WhichOneof("kind") == "key_revoked" and revoked.event.sequence == 4
    with pytest.raises(grpc.aio.AioRpcError) as ended:
        await asyncio.wait_for(call.read(), 10)
    assert ended.value.code() == Code.UNAUTHENTICATED
    error = await rpc_error(
        service.Connect(account_pb2.ConnectRequest(), metadata=bearer(rotated.key)).read()
    )
    assert error.code() == Code.UNAUTHENTICATED


async def test_connect_streams_end_with_unavailable_when_the_server_stops(
    storage: Storages,
) -> None:
    server = new_server(storage(), shutdown_grace=20.0)
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            service = account_stub(Client(channel))
            created = await create(service, "Until Shutdown")
            ahead = await rpc_error(
                service.Connect(
                    account_pb2.ConnectRequest(after_sequence=9), metadata=bearer(created.key)
                ).read()
            )
            assert ahead.code() == Code.OUT_OF_RANGE
            call = service.Connect(account_pb2.ConnectRequest(), metadata=bearer(created.key))
            assert (await next_event(call)).event.WhichOneof("kind") == "account_created"
            await call.read()
            started = time.monotonic()
            await server.stop()
            with pytest.raises(grpc.aio.AioRpcError) as ended:
                await asyncio.wait_for(call.read(), 10)
            assert ended.value.code() == Code.UNAVAILABLE
            assert time.monotonic() - started < 10, "the stream ended at once, not at the grace"
    finally:
        if not server.log_health.stopped:
            await server.stop()
