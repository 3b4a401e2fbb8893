"""Refusals surface as typed errors carrying the server's status and reason."""

from __future__ import annotations

import grpc
import pytest

from spades.client import (
    ActionResult,
    FailedPrecondition,
    NotFound,
    PermissionDenied,
    Prompt,
    SpadesClient,
    SpadesError,
    Unauthenticated,
)
from spades.engine import PLAY, Card, Rules
from tests.sdk.helpers import seat_bots


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
