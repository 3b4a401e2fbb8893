"""Accounts in the tests: the account kinds, a key as call metadata, a new account, an
AccountService stub and a server to call it on, reading an account's Connect stream, and one
rated match played by accounts through the SDK."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

import grpc

from spades.bot import play_match
from spades.client import SpadesClient
from spades.engine import Rules
from spades.v1 import account_pb2, account_pb2_grpc
from spades_bots.registry import bot_class
from spades_server.app.server import SpadesServer
from spades_server.domain import ratings
from tests.support.backends import LogStorage
from tests.support.clients import Client
from tests.support.servers import running_server

BOT = account_pb2.ACCOUNT_KIND_BOT
PERSON = account_pb2.ACCOUNT_KIND_PERSON
#: Short rated matches: two hands (the pool ignores the match's length and clock).
SHORT_RATED = Rules(max_hands=2)


def bearer(key: str, table_id: str = "", seat: str = "") -> tuple[tuple[str, str], ...]:
    """An account's key as the metadata of a call; with the table (and the seat, for an
    account holding several there) whose Play stream the call opens."""
    metadata: list[tuple[str, str]] = [("authorization", f"Bearer {key}")]
    if table_id:
        metadata.append(("spades-table-id", table_id))
    if seat:
        metadata.append(("spades-seat", seat))
    return tuple(metadata)


def account_stub(client: Client) -> account_pb2_grpc.AccountServiceAsyncStub:
    return account_pb2_grpc.AccountServiceStub(client.channel)


async def new_account(
    channel: grpc.aio.Channel, name: str, kind: account_pb2.AccountKind.ValueType = BOT
) -> account_pb2.CreateAccountResponse:
    """A new account (a bot unless ``kind`` says otherwise) made through CreateAccount: the
    account and its key."""
    return await account_pb2_grpc.AccountServiceStub(channel).CreateAccount(
        account_pb2.CreateAccountRequest(name=name, kind=kind)
    )


@asynccontextmanager
async def account_service(
    storage: LogStorage, **settings: object
) -> AsyncIterator[tuple[SpadesServer, account_pb2_grpc.AccountServiceAsyncStub]]:
    """A running server on ``storage`` and an AccountService stub to it."""
    async with (
        running_server(storage, **settings) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
    ):
        yield server, account_stub(Client(channel))


async def next_event(call: Any) -> account_pb2.ConnectResponse:
    """The next message of an account's Connect stream."""
    message = await call.read()
    assert isinstance(message, account_pb2.ConnectResponse), message
    return message


async def play_rated_match(
    server: SpadesServer,
    sides: dict[str, tuple[str, str]],
    rules: Rules = SHORT_RATED,
) -> str:
    """One rated match: each key of ``sides`` (an account key) plays ``(bot kind, seats)``
    through the SDK; returns the table id once the match is rated."""
    address = f"127.0.0.1:{server.port}"
    async with SpadesClient(address) as lobby:
        table_id = (await lobby.create_table("rated", rules, rated=True)).table_id
    clients = []
    plays = []
    for key, (kind, seats) in sides.items():
        client = SpadesClient(address, account_key=key)
        clients.append(client)
        for seat in seats.split(","):
            ticket = await client.join_table(table_id, "ignored", seat=seat)
            plays.append(play_match(client, bot_class(kind)(), ticket.token))
    try:
        async with asyncio.timeout(120):
            await asyncio.gather(*plays)
            await server.ratings.idle()
            while table_id not in (await server.pools.load(ratings.PARTNERSHIP)).rated_tables:
                await asyncio.sleep(0.02)
                await server.ratings.idle()
    finally:
        for client in clients:
            await client.close()
    return table_id


@asynccontextmanager
async def stream_open(client: SpadesClient, wait: float = 20) -> AsyncIterator[None]:
    """The client's account stream (``Connect``), open (its first event read, so the server
    holds it) until the block ends."""
    first = asyncio.Event()

    async def follow() -> None:
        async for _ in client.connect():
            first.set()

    task = asyncio.create_task(follow())
    try:
        async with asyncio.timeout(wait):
            await first.wait()
        yield
    finally:
        task.cancel()
        with suppress(asyncio.CancelledError, Exception):
            await task
