"""Helpers for the abuse tests: a server with given settings, statuses, the log unchanged."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import grpc

from spades import protocol
from spades.engine import MatchState, Rules, new_match, view
from spades.engine.shuffle import deal
from spades.v1 import admin_pb2_grpc, events_pb2
from spades_server.app.server import SpadesServer
from tests.support.backends import Storages
from tests.support.clients import Client, current_view
from tests.support.servers import log_events, running_server

Code = grpc.StatusCode
OPERATOR_TOKEN = "operator-secret-for-tests"
OPERATOR_KEY = "spades-operator-token"
#: A separate TCP connection per channel (channels to one target may otherwise share one).
OWN_CONNECTION = (("grpc.use_local_subchannel_pool", 1),)


@asynccontextmanager
async def serving(
    storage: Storages, **settings: object
) -> AsyncIterator[tuple[SpadesServer, Client]]:
    """A server on the test's default log storage with ``settings``, and one client of it."""
    async with (
        running_server(storage(), **settings) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}", options=OWN_CONNECTION) as channel,
    ):
        yield server, Client(channel)


def admin_stub(client: Client) -> admin_pb2_grpc.AdminServiceAsyncStub:
    return admin_pb2_grpc.AdminServiceStub(client.channel)


def raw(channel: grpc.aio.Channel) -> Any:
    """The channel untyped, for calls with raw bytes (grpc-stubs insist on serializers)."""
    return channel


def operator(token: str = OPERATOR_TOKEN) -> tuple[tuple[str, str]]:
    return ((OPERATOR_KEY, token),)


async def assert_log_replays(server: SpadesServer, client: Client) -> int:
    """Every table's log replays (engine events from the stored protobuf) to the state the
    server serves: its in-memory state for every seat and the spectator, and the public view
    sent over the wire. Returns how many tables were checked."""
    table_ids = list(server.projection.tables)
    for table_id in table_ids:
        logged = await log_events(server, table_id)
        replayed = MatchState.from_events(protocol.event_from_proto(event) for event in logged)
        served = (await server.store.load(table_id)).state
        for viewer in (None, *range(replayed.players_count)):
            assert protocol.view_to_proto(view(replayed, viewer)) == protocol.view_to_proto(
                view(served, viewer)
            ), (table_id, viewer)
        wire = await asyncio.wait_for(current_view(client, table_id), 10)
        if wire.sequence == len(logged):
            assert wire.view == protocol.view_to_proto(view(replayed, None)), table_id
    return len(table_ids)


def deals_of(seed: bytes, hands: int, rules: Rules | None = None) -> list[list[list[int]]]:
    """``hands`` deals made with the shuffle of another seed (any valid deals will do)."""
    rules = rules or Rules()
    state, _ = new_match(rules, seed=seed)
    tables = state.game
    return [
        [list(hand) for hand in deal(seed, number, tables.deck, tables.players, tables.hand_size)]
        for number in range(1, hands + 1)
    ]


def deal_messages(deals: list[list[list[int]]]) -> list[events_pb2.Deal]:
    return [
        events_pb2.Deal(
            hands=[events_pb2.DealtHand(cards=protocol.cards_to_proto(hand)) for hand in hands]
        )
        for hands in deals
    ]
