"""Refusals surface as typed errors carrying the server's status and reason."""

from __future__ import annotations

import grpc
import pytest
from prometheus_client import REGISTRY

from spades.client import (
    ActionResult,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Prompt,
    SpadesClient,
    SpadesError,
    Unauthenticated,
)
from spades.engine import PLAY, Card, Rules
from spades_bots.random_bot import RandomBot
from tests.support.backends import Storages
from tests.support.bot_matches import play_all, seat_bots
from tests.support.servers import running_server


@pytest.mark.asyncio
async def test_joining_a_full_table_is_a_failed_precondition(client: SpadesClient) -> None:
    table_id, _ = await seat_bots(client, Rules())
    with pytest.raises(FailedPrecondition) as raised:
        await client.join_table(table_id, "late")
    assert raised.value.code is grpc.StatusCode.FAILED_PRECONDITION
    assert raised.value.reason == "the match at this table has already started"


@pytest.mark.asyncio
async def test_taking_a_taken_seat_names_it(client: SpadesClient) -> None:
    created = await client.create_table("two want north")
    await client.join_table(created.table_id, "first", seat="north")
    with pytest.raises(FailedPrecondition, match="North is already taken"):
        await client.join_table(created.table_id, "second", seat="north")


@pytest.mark.asyncio
async def test_unknown_table_private_table_and_bad_token(client: SpadesClient) -> None:
    with pytest.raises(NotFound) as missing:
        await client.get_table("no-such-table")
    assert "no-such-table" in missing.value.reason
    private = await client.create_table("secret", private=True)
    assert private.join_code and private.table.private
    with pytest.raises(PermissionDenied, match="join code"):
        await client.join_table(private.table_id, "guest")
    ticket = await client.join_table(private.table_id, "guest", join_code=private.join_code)
    assert ticket.table_id == private.table_id
    with pytest.raises(Unauthenticated):
        await client.play("not-a-token")
    left = await client.leave_table(ticket.token)
    assert left.seat == ticket.seat
    with pytest.raises(SpadesError) as gone:  # the token died with the seat
        await client.leave_table(ticket.token)
    assert gone.value.code is grpc.StatusCode.UNAUTHENTICATED


@pytest.mark.asyncio
async def test_an_illegal_action_is_refused_with_the_reason(client: SpadesClient) -> None:
    _, tokens = await seat_bots(client, Rules())
    for token in tokens:
        connection = await client.play(token, latest=True)
        assert connection.snapshot is not None
        if connection.snapshot.view.legal_actions:
            break
        await connection.close()
    prompt = await anext(m async for m in connection if isinstance(m, Prompt))
    await connection.send(PLAY[Card.parse("AS")], prompt.sequence, "too-early")
    result = await anext(m async for m in connection if isinstance(m, ActionResult))
    await connection.close()
    assert not result.accepted
    assert result.code is grpc.StatusCode.FAILED_PRECONDITION
    assert result.reason == "it is time for bidding, not to play AS"
    assert result.reason_code == "WRONG_PHASE"


@pytest.mark.asyncio
async def test_typed_errors_carry_the_reason_code_and_the_field(client: SpadesClient) -> None:
    with pytest.raises(NotFound) as missing:
        await client.get_table("no-such-table")
    assert missing.value.reason_code == "TABLE_NOT_FOUND"
    assert missing.value.field == "" and missing.value.retry_delay is None
    with pytest.raises(InvalidArgument) as bad:
        await client.join_table("t" * 30_000, "guest")
    assert (bad.value.reason_code, bad.value.field) == ("FIELD_TOO_LONG", "table_id")
    assert bad.value.metadata == {"field": "table_id", "max_length": "64"}
    created = await client.create_table("two want north")
    await client.join_table(created.table_id, "first", seat="north")
    with pytest.raises(FailedPrecondition) as taken:
        await client.join_table(created.table_id, "second", seat="north")
    assert taken.value.reason_code == "SEAT_TAKEN"
    with pytest.raises(Unauthenticated) as forged:
        await client.leave_table("not-a-token")
    assert forged.value.reason_code == "SEAT_TOKEN_INVALID"


@pytest.mark.asyncio
async def test_the_runner_waits_the_retry_delay_of_a_rate_limit(storage: Storages) -> None:
    # Two actions a second per seat (bursts of 4): four bots playing a hand as fast as they
    # can are rate limited many times; each time the runner waits RetryInfo's delay and sends
    # the action again, so the match finishes, every action the bots' own.
    async with (
        running_server(storage(), seat_action_rate=2.0) as server,
        SpadesClient(f"127.0.0.1:{server.port}") as client,
    ):
        table_id, tokens = await seat_bots(client, Rules(max_hands=1))
        limited_before = rate_limited()
        outcomes = await play_all(client, [RandomBot(seed) for seed in range(4)], tokens, table_id)
        assert rate_limited() - limited_before >= 4, "the bots were rate limited"
        assert all(outcome.end is not None for outcome in outcomes)
        assert sum(outcome.fallbacks for outcome in outcomes) == 0


def rate_limited() -> float:
    return REGISTRY.get_sample_value("spades_errors_total", {"code": "RESOURCE_EXHAUSTED"}) or 0.0


@pytest.mark.asyncio
async def test_lobby_listing_and_records(client: SpadesClient) -> None:
    created = await client.create_table("listed", Rules(target_score=300, jokers=True))
    page = await client.list_tables("waiting")
    listed = {table.table_id: table for table in page.tables}
    assert listed[created.table_id].rules == Rules(target_score=300, jokers=True)
    assert "to 300" in listed[created.table_id].badges
    assert not listed[created.table_id].seats[0].occupied
    record = await client.get_record(created.table_id)
    assert record.table_id == created.table_id and not record.seed
    ticket = await client.quick_match("queued")
    assert (await client.get_table(ticket.table_id)).quick_match
