"""People: sign up and sign in with a password (argon2id), sessions that expire and are listed
and revoked, sign-in limits, nothing secret logged or stored in clear; on both log backends,
through a real server."""

from __future__ import annotations

import asyncpg
import grpc
import pytest
import structlog
from google.rpc import error_details_pb2

from spades.engine import Rules
from spades.v1 import account_pb2, account_pb2_grpc, cards_pb2, lobby_pb2
from spades_server.app.server import SpadesServer
from spades_server.domain import passwords, sessions
from spades_server.domain.accounts import Account
from spades_server.store import account_store, codecs
from tests.support.accounts import bearer
from tests.support.backends import POSTGRES_DSN, LogStorage, Storages
from tests.support.clients import Client, rpc_error
from tests.support.refusals import (
    assert_call_refused,
    call_status,
    nothing_written,
    refused_unchanged,
)
from tests.support.servers import log_head, running_server

pytestmark = pytest.mark.asyncio

Code = grpc.StatusCode
PASSWORD = "correct horse battery staple"
OPERATOR_TOKEN = "f3c1b2a4d5e6f7a8b9c0d1e2f3a4b5c6"


def stub(client: Client) -> account_pb2_grpc.AccountServiceAsyncStub:
    return account_pb2_grpc.AccountServiceStub(client.channel)


async def sign_up(
    service: account_pb2_grpc.AccountServiceAsyncStub, name: str, password: str = PASSWORD
) -> account_pb2.SignUpResponse:
    return await service.SignUp(account_pb2.SignUpRequest(name=name, password=password))


async def sign_in(
    service: account_pb2_grpc.AccountServiceAsyncStub, name: str, password: str = PASSWORD
) -> account_pb2.SignInResponse:
    return await service.SignIn(account_pb2.SignInRequest(name=name, password=password))


async def test_a_person_signs_up_signs_in_and_a_session_works_as_a_key_does(
    server: SpadesServer, client: Client
) -> None:
    service = stub(client)
    signed_up = await sign_up(service, "Night Owl")
    person = signed_up.account
    assert person.kind == account_pb2.ACCOUNT_KIND_PERSON and person.name == "Night Owl"
    assert signed_up.session_token.startswith("sps.") and signed_up.session.current
    signed_in = await sign_in(service, "night OWL")
    assert signed_in.account.account_id == person.account_id
    session = signed_in.session
    assert session.expire_time.seconds > session.create_time.seconds
    assert session.last_address == "127.0.0.1"
    # The session takes a seat as the account, as its key would.
    table = (await client.create_table(Rules(max_hands=1))).table
    joined = await client.lobby.JoinTable(
        lobby_pb2.JoinTableRequest(table_id=table.table_id, seat=cards_pb2.SEAT_SOUTH),
        metadata=bearer(signed_in.session_token),
    )
    assert joined.account_id == person.account_id
    # Both sessions are listed, newest first, the caller's marked.
    listed = await service.ListSessions(
        account_pb2.ListSessionsRequest(), metadata=bearer(signed_in.session_token)
    )
    assert [s.session_id for s in listed.sessions] == [
        session.session_id,
        signed_up.session.session_id,
    ]
    assert [s.current for s in listed.sessions] == [True, False]
    # A signed-in person may give itself an account key (for spades-bot, spades-play).
    rotated = await service.RotateKey(
        account_pb2.RotateKeyRequest(), metadata=bearer(signed_in.session_token)
    )
    assert rotated.key.startswith("spk.") and not rotated.account.key_revoked


async def test_revoking_a_session_signs_it_out_and_it_is_refused_as_revoked(
    server: SpadesServer, client: Client
) -> None:
    service = stub(client)
    first = (await sign_up(service, "Ada")).session_token
    second = (await sign_in(service, "Ada")).session_token
    other_id = sessions.session_of_token(first)[1]  # type: ignore[index]
    # Revoke another session by id, then sign out (the current one).
    await service.RevokeSession(
        account_pb2.RevokeSessionRequest(session_id=other_id), metadata=bearer(second)
    )
    async with nothing_written(server):
        error = await rpc_error(
            service.ListSessions(account_pb2.ListSessionsRequest(), metadata=bearer(first))
        )
        assert_call_refused(error, Code.UNAUTHENTICATED, "SESSION_REVOKED")
    signed_out = await service.RevokeSession(
        account_pb2.RevokeSessionRequest(), metadata=bearer(second)
    )
    assert signed_out.session_id == sessions.session_of_token(second)[1]  # type: ignore[index]
    async with nothing_written(server):
        error = await rpc_error(
            service.ListSessions(account_pb2.ListSessionsRequest(), metadata=bearer(second))
        )
        assert_call_refused(error, Code.UNAUTHENTICATED, "SESSION_REVOKED")
    # A token of no session, and a session the account never had.
    forged = first[: first.rindex(".")] + ".AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
    async with nothing_written(server):
        error = await rpc_error(
            service.ListSessions(account_pb2.ListSessionsRequest(), metadata=bearer(forged))
        )
        assert_call_refused(error, Code.UNAUTHENTICATED, "SESSION_NOT_VALID")
    third = (await sign_in(service, "Ada")).session_token
    async with nothing_written(server):
        error = await rpc_error(
            service.RevokeSession(
                account_pb2.RevokeSessionRequest(session_id="0123456789abcdef"),
                metadata=bearer(third),
            )
        )
        assert_call_refused(error, Code.NOT_FOUND, "SESSION_NOT_FOUND", "session_id")


async def test_an_expired_session_is_refused_as_expired(storage: Storages) -> None:
    # A session working for a few microseconds: expired by the next call.
    async with (
        running_server(storage(), session_days=1e-10) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
    ):
        service = stub(Client(channel))
        token = (await sign_up(service, "Brief")).session_token
        async with nothing_written(server):
            error = await rpc_error(
                service.ListSessions(account_pb2.ListSessionsRequest(), metadata=bearer(token))
            )
            assert_call_refused(error, Code.UNAUTHENTICATED, "SESSION_EXPIRED")


async def test_every_bad_sign_in_has_its_reason_and_changes_nothing(
    server: SpadesServer, client: Client
) -> None:
    service = stub(client)
    await sign_up(service, "Grace")
    await client.channel.channel_ready()
    bot_key = (
        await service.CreateAccount(
            account_pb2.CreateAccountRequest(name="Key Bot", kind=account_pb2.ACCOUNT_KIND_BOT)
        )
    ).key
    assert bot_key
    head = await log_head(server)
    cases = [
        (
            sign_in(service, "Grace", "not the password"),
            Code.UNAUTHENTICATED,
            "WRONG_PASSWORD",
            "password",
        ),
        (sign_in(service, "Nobody"), Code.NOT_FOUND, "ACCOUNT_NOT_FOUND", None),
        (sign_in(service, "Key Bot"), Code.FAILED_PRECONDITION, "NO_PASSWORD", None),
        (sign_in(service, "Grace", ""), Code.INVALID_ARGUMENT, "MISSING_FIELD", "password"),
        (
            sign_up(service, "Hopper", "short"),
            Code.INVALID_ARGUMENT,
            "PASSWORD_TOO_SHORT",
            "password",
        ),
        (sign_up(service, "grace"), Code.ALREADY_EXISTS, "NAME_TAKEN", None),
        (sign_up(service, "House Cat"), Code.INVALID_ARGUMENT, "NAME_RESERVED", "name"),
        (
            service.RevokeSession(account_pb2.RevokeSessionRequest(), metadata=bearer(bot_key)),
            Code.INVALID_ARGUMENT,
            "SESSION_REQUIRED",
            "session_id",
        ),
    ]
    for call, code, reason, field in cases:
        await refused_unchanged(server, call, code, reason, field)
    assert await log_head(server) == head
    # The password is not in the error's words.
    error = await rpc_error(sign_in(service, "Grace", "hunter2-secret-guess"))
    assert "hunter2" not in (error.details() or "")


async def test_sign_ins_are_limited_per_account_and_per_address(storage: Storages) -> None:
    async with (
        running_server(storage(), sign_ins_per_account=2, sign_ins_per_address=6) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
    ):
        service = stub(Client(channel))
        await sign_up(service, "Target")  # 1 from the address
        for _ in range(2):  # 2 for the account, 3 from the address
            await refused_unchanged(
                server,
                sign_in(service, "Target", "guess guess"),
                Code.UNAUTHENTICATED,
                "WRONG_PASSWORD",
                "password",
            )
        # Even the right password waits now: the account's attempts are spent.
        async with nothing_written(server):
            error = await rpc_error(sign_in(service, "Target"))
            details = assert_call_refused(error, Code.RESOURCE_EXHAUSTED, "TOO_MANY_SIGN_INS")
        assert details.metadata["per"] == "account"
        retry = error_details_pb2.RetryInfo()
        assert any(detail.Unpack(retry) for detail in call_status(error).details)
        assert retry.retry_delay.seconds + retry.retry_delay.nanos > 0
        # Other accounts from the same address: the address's attempts run out (4, 5, 6).
        for name in ("Other One", "Other Two", "Other Three"):
            await refused_unchanged(
                server, sign_in(service, name), Code.NOT_FOUND, "ACCOUNT_NOT_FOUND"
            )
        async with nothing_written(server):
            error = await rpc_error(sign_in(service, "Other Four"))
            details = assert_call_refused(error, Code.RESOURCE_EXHAUSTED, "TOO_MANY_SIGN_INS")
        assert details.metadata["per"] == "address"


async def test_sign_up_follows_the_registration_setting(storage: Storages) -> None:
    async with (
        running_server(storage(), registration="operator", operator_token=OPERATOR_TOKEN) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
    ):
        service = stub(Client(channel))
        async with nothing_written(server):
            error = await rpc_error(sign_up(service, "Walk In"))
            assert_call_refused(error, Code.UNAUTHENTICATED, "REGISTRATION_CLOSED")
        admitted = await service.SignUp(
            account_pb2.SignUpRequest(name="Invited", password=PASSWORD),
            metadata=(("spades-operator-token", OPERATOR_TOKEN),),
        )
        # Once admitted, the person signs in without the operator.
        signed_in = await sign_in(service, "Invited")
        assert signed_in.account.account_id == admitted.account.account_id


async def raw_storage_bytes(storage: LogStorage) -> bytes:
    """Every byte the log's storage holds: the SQLite file and its journal, or every row of
    every table of the PostgreSQL schema as text."""
    if storage.backend == "sqlite":
        files = storage.database.parent.glob(storage.database.name + "*")
        return b"".join(path.read_bytes() for path in sorted(files))
    connection = await asyncpg.connect(POSTGRES_DSN)
    try:
        tables = await connection.fetch(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = $1",
            storage.schema,
        )
        assert tables
        dumped = []
        for row in tables:
            name = f'"{storage.schema}"."{row["table_name"]}"'
            dumped += [str(r[0]) for r in await connection.fetch(f"SELECT t::text FROM {name} t")]
        return "\n".join(dumped).encode()
    finally:
        await connection.close()


async def test_no_password_or_token_is_logged_or_stored_in_clear(storage: Storages) -> None:
    where = storage()
    with structlog.testing.capture_logs() as logged:
        async with (
            running_server(where) as server,
            grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
        ):
            service = stub(Client(channel))
            signed_up = await sign_up(service, "Careful")
            signed_in = await sign_in(service, "Careful")
            await rpc_error(sign_in(service, "Careful", "a wrong password too"))
            account_id = signed_up.account.account_id
            rows = await server.log.read(account_store.stream_of(account_id))
            account = Account(account_id)
            for row in rows:
                account.fold(codecs.decode_account(row))
    secrets = [PASSWORD, "a wrong password too", signed_up.session_token, signed_in.session_token]
    # What the server logged names the account and the session ids, never a secret.
    text = repr(logged)
    assert "signed in" in text and account_id in text
    assert not [secret for secret in secrets if secret in text]
    # What it stored: the password's argon2id hash (salted) and the tokens' digests only.
    assert account.password_hash.startswith("$argon2id$")
    assert passwords.verify_password(account.password_hash, PASSWORD)
    stored = await raw_storage_bytes(where)
    assert account.password_hash.encode() in stored or where.backend == "postgres"
    assert not [secret for secret in secrets if secret.encode() in stored]
    for token in (signed_up.session_token, signed_in.session_token):
        secret_part = token.rpartition(".")[2]
        assert secret_part.encode() not in stored
