"""A session's last use (address and time) through a real server, on both log backends: shown
by ListSessions, at sign-in until the session is used, recorded when it is used, at most once
per ``session_use_interval`` per session (not on every call), and kept across a restart."""

from __future__ import annotations

import grpc
import pytest

from spades.v1 import account_pb2, account_pb2_grpc
from tests.support.accounts import bearer
from tests.support.backends import Storages
from tests.support.servers import running_server

pytestmark = pytest.mark.asyncio
PASSWORD = "a long and secret passphrase"


async def sessions_of(
    service: account_pb2_grpc.AccountServiceAsyncStub, token: str
) -> dict[str, account_pb2.Session]:
    listed = await service.ListSessions(account_pb2.ListSessionsRequest(), metadata=bearer(token))
    return {session.session_id: session for session in listed.sessions}


async def test_each_use_is_recorded_when_the_interval_allows(storage: Storages) -> None:
    async with (
        running_server(storage("use"), session_use_interval=0) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
    ):
        service = account_pb2_grpc.AccountServiceStub(channel)
        up = await service.SignUp(account_pb2.SignUpRequest(name="Pat", password=PASSWORD))
        unused = await service.SignIn(account_pb2.SignInRequest(name="Pat", password=PASSWORD))
        first = (await sessions_of(service, up.session_token))[up.session.session_id]
        assert first.last_address == "127.0.0.1"
        assert first.last_use_time.ToNanoseconds() >= first.create_time.ToNanoseconds()
        listed = await sessions_of(service, up.session_token)
        second = listed[up.session.session_id]
        assert second.last_use_time.ToNanoseconds() >= first.last_use_time.ToNanoseconds()
        # A session not used since its sign-in: that address, at that time.
        idle = listed[unused.session.session_id]
        assert idle.last_use_time == idle.create_time and idle.last_address == "127.0.0.1"


async def test_uses_are_recorded_at_most_once_an_interval_and_kept(storage: Storages) -> None:
    where = storage("use-interval")
    async with (
        running_server(where, session_use_interval=3600) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
    ):
        service = account_pb2_grpc.AccountServiceStub(channel)
        up = await service.SignUp(account_pb2.SignUpRequest(name="Sam", password=PASSWORD))
        session_id, account_id = up.session.session_id, up.account.account_id
        # A use from elsewhere (as a call through a proxy would record it) ...
        await server.accounts.session_used(account_id, session_id, "203.0.113.9")
        shown = (await sessions_of(service, up.session_token))[session_id]
        assert shown.last_address == "203.0.113.9"
        recorded = shown.last_use_time.ToNanoseconds()
        assert recorded >= shown.create_time.ToNanoseconds()
        # ... and the uses after it within the hour (this listing's, another address's) are not
        # written: one record per session an interval.
        await server.accounts.session_used(account_id, session_id, "198.51.100.7")
        again = (await sessions_of(service, up.session_token))[session_id]
        assert again.last_address == "203.0.113.9"
        assert again.last_use_time.ToNanoseconds() == recorded
    async with (
        running_server(where, session_use_interval=3600) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
    ):
        service = account_pb2_grpc.AccountServiceStub(channel)
        # Kept in the log; a new process records its first use of the session.
        after = (await sessions_of(service, up.session_token))[session_id]
        assert after.last_address == "127.0.0.1"
        assert after.last_use_time.ToNanoseconds() >= recorded
