"""Feeds without gRPC: a real table store on a SQLite file, and what each feed sends."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
import pytest_asyncio
import structlog

from spades.engine import Action, legal_actions
from spades.v1 import play_pb2
from spades_server.domain import errors, tokens
from spades_server.domain.decisions import (
    ActionRequest,
    AlreadyAnswered,
    decide_action,
)
from spades_server.domain.table_events import Entry
from spades_server.domain.tables import Decided, Table
from spades_server.store.table_store import TableStore
from spades_server.streams.feeds import (
    Outbox,
    Outgoing,
    SeatFeed,
    SeatSession,
    SpectatorFeed,
)
from tests.support.stores import TOKENS, client_side_open, sqlite_table_store, table_seated_in_store


@pytest_asyncio.fixture
async def store(tmp_path: Path) -> AsyncIterator[TableStore]:
    async with sqlite_table_store(tmp_path / "feeds.db") as opened:
        yield opened


def parsed(message: Outgoing) -> play_pb2.PlayResponse:
    """A feed's message as the client reads it (events go out pre-serialised)."""
    if isinstance(message, bytes):
        return play_pb2.PlayResponse.FromString(message)
    return message


async def take(feed: AsyncIterator[Outgoing], count: int) -> list[str]:
    kinds = []
    for _ in range(count):
        message = parsed(await asyncio.wait_for(anext(feed), 5))
        kinds.append(str(message.WhichOneof("kind")))
    return kinds


@pytest.mark.asyncio
async def test_a_spectator_feed_sends_snapshot_catch_up_then_ends_on_shutdown(
    store: TableStore,
) -> None:
    table_id = (await table_seated_in_store(store)).table_id
    version = store.cached(table_id).version
    shutdown = asyncio.Event()
    feed = aiter(SpectatorFeed(store, table_id, 1, shutdown))
    kinds = await take(feed, version)
    assert kinds == ["snapshot"] + ["event"] * (version - 1)
    shutdown.set()
    store.wake_all()
    with pytest.raises(errors.RequestError) as ended:
        await asyncio.wait_for(anext(feed), 5)
    assert ended.value.code is grpc.StatusCode.UNAVAILABLE


@pytest.mark.asyncio
async def test_a_seat_feed_prompts_its_seat_and_ends_when_superseded(store: TableStore) -> None:
    table_id = (await table_seated_in_store(store)).table_id
    table = store.cached(table_id)
    seat = table.state.seat_to_act()
    superseded = asyncio.Event()
    session = SeatSession(
        table_id, seat, tokens.digest(TOKENS[seat]), False, superseded, structlog.get_logger()
    )
    actions = asyncio.create_task(client_side_open())
    outbox = Outbox(16)

    async def reclaim() -> None:
        raise AssertionError("nothing to reclaim")

    feed = aiter(
        SeatFeed(
            store, session, None, asyncio.Event(), outbox=outbox, actions=actions, reclaim=reclaim
        )
    )
    assert await take(feed, 2) == ["snapshot", "prompt"]
    outbox.begin().settle(play_pb2.ActionResult(action_id="a"))
    store.poke(table_id)
    assert await take(feed, 1) == ["action_result"]
    superseded.set()
    store.poke(table_id)
    with pytest.raises(errors.RequestError) as ended:
        await asyncio.wait_for(anext(feed), 5)
    assert ended.value.code is grpc.StatusCode.ABORTED
    actions.cancel()


@pytest.mark.asyncio
async def test_a_seat_feed_refuses_a_token_that_is_not_the_seats(store: TableStore) -> None:
    table_id = (await table_seated_in_store(store)).table_id
    session = SeatSession(
        table_id, 0, b"not the seat's", False, asyncio.Event(), structlog.get_logger()
    )
    actions = asyncio.create_task(client_side_open())
    feed = SeatFeed(
        store,
        session,
        0,
        asyncio.Event(),
        outbox=Outbox(16),
        actions=actions,
        reclaim=asyncio.sleep,  # type: ignore[arg-type]
    )
    with pytest.raises(errors.RequestError) as refused:
        await anext(aiter(feed))
    assert refused.value.code is grpc.StatusCode.UNAUTHENTICATED
    actions.cancel()


def _first_legal_action(table: Table) -> tuple[int, Action]:
    seat = table.state.turn
    assert seat is not None
    return seat, legal_actions(table.state, seat)[0]


@pytest.mark.asyncio
async def test_a_command_whose_caller_is_cancelled_mid_append_is_still_folded(
    store: TableStore,
) -> None:
    """The append reaches the log before the caller goes: what it stored is folded into the
    table (and its waiters woken), so the next command decides on it, not on a stale cache."""
    table_id = (await table_seated_in_store(store)).table_id
    table = store.cached(table_id)
    before = table.version
    seat, action = _first_legal_action(table)
    request = ActionRequest(
        seat, tokens.digest(TOKENS[seat]), False, action, "gone-1", table.version
    )
    woken = store.changed(table_id)
    decided = asyncio.Event()

    def decide(latest: Table) -> Decided | None:
        try:
            return decide_action(latest, request)
        finally:
            decided.set()

    command = asyncio.ensure_future(store.execute(table_id, decide))
    # Decided: the command runs on, without a pause, to the append it then waits for (this
    # task resumes only once the command waits), so the append is on its way.
    await decided.wait()
    assert not command.done()
    command.cancel()
    await asyncio.wait_for(woken, 5)  # woken by the fold, with no caller left
    assert command.cancelled()
    assert table.version > before
    assert table.answered_actions[(seat, "gone-1")] == before + 1
    # The next command sees it: the same id is answered from the table, not decided again.
    with pytest.raises(AlreadyAnswered):
        await store.execute(table_id, lambda latest: decide_action(latest, request))


@pytest.mark.asyncio
async def test_an_actions_result_is_handed_over_before_the_tables_waiters_wake(
    store: TableStore,
) -> None:
    table_id = (await table_seated_in_store(store)).table_id
    table = store.cached(table_id)
    seat, action = _first_legal_action(table)
    request = ActionRequest(seat, tokens.digest(TOKENS[seat]), False, action, "a-1", table.version)
    seen: list[str] = []
    woken = store.changed(table_id)
    woken.add_done_callback(lambda _: seen.append("woken"))

    def stored(entries: list[Entry]) -> None:
        assert not woken.done()  # not yet: the result comes first
        seen.append(f"stored {entries[0].sequence}")

    await store.execute(table_id, lambda latest: decide_action(latest, request), stored)
    await asyncio.wait_for(woken, 5)
    assert [step.split()[0] for step in seen] == ["stored", "woken"]
