"""Shared checks for the SDK tests: seating bots, and auditing a finished table's record."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence

from spades import protocol
from spades.bot import Bot, MatchOutcome, play_match
from spades.client import SpadesClient
from spades.engine import MatchState, Rules
from spades.engine import events as ev


async def seat_bots(
    client: SpadesClient, rules: Rules, count: int | None = None
) -> tuple[str, list[str]]:
    created = await client.create_table("sdk test", rules)
    tokens = []
    for index in range(count if count is not None else rules.players):
        ticket = await client.join_table(created.table_id, f"bot {index}", seat=index)
        tokens.append(ticket.token)
    return created.table_id, tokens


async def play_all(
    client: SpadesClient, bots: Sequence[Bot], tokens: Sequence[str], table_id: str
) -> list[MatchOutcome]:
    return list(
        await asyncio.wait_for(
            asyncio.gather(
                *(
                    play_match(client, bot, token, table_id=table_id)
                    for bot, token in zip(bots, tokens, strict=True)
                )
            ),
            timeout=60,
        )
    )


def actor(event: ev.Event) -> int | None:
    """The seat whose decision an event records (the first event of each action)."""
    if isinstance(event, ev.BlindNilChosen | ev.BidMade | ev.CardPlayed):
        return event.seat
    if isinstance(event, ev.CardsPassed):
        return event.from_seat
    return None


async def audit(
    client: SpadesClient, table_id: str, outcomes: Sequence[MatchOutcome]
) -> MatchState:
    """The record replays to a finished match in which every seat's actions were applied once:
    as many decisions per seat as the seat saw accepted, and no clock ever acted for anyone."""
    record = await client.get_record(table_id)
    events = [protocol.event_from_proto(message) for message in record.events]
    final = MatchState.from_events(events)
    assert final.is_over
    assert not any(isinstance(event, ev.TurnTimedOut) for event in events)
    decisions: Counter[int] = Counter()
    for index, event in enumerate(events):
        seat = actor(event)
        # A Blind Nil choice is followed by its BidMade in the same action: count it once.
        if seat is not None and not (
            isinstance(event, ev.BidMade)
            and event.bid.blind
            and isinstance(events[index - 1], ev.BlindNilChosen)
        ):
            decisions[seat] += 1
    for outcome in outcomes:
        assert outcome.end == final.end
        assert len(outcome.applied_action_ids) == decisions[outcome.seat], outcome.seat
        assert outcome.view.scores == tuple(final.scores)
    return final
