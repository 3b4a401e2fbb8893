"""Four SDK bots play whole matches against a real server."""

from __future__ import annotations

import asyncio

import pytest

from spades.bot import Bot, BotView
from spades.client import Snapshot, SpadesClient, StreamEvent
from spades.engine import Card, Rules
from spades.engine import events as ev
from spades_bots.random_bot import RandomBot
from tests.support.bot_matches import audit, play_all, seat_bots

RULE_SETS = [
    Rules(max_hands=2),
    Rules(players=3, jokers=True, max_hands=2),
    Rules(blind_nil=True, blind_nil_deficit=0, blind_nil_pass_cards=2, max_hands=2),
    Rules(two_of_clubs_leads=True, max_hands=2),
]


class CheckingBot(RandomBot):
    """A random bot that checks its view at every turn against what the rules imply."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.hands_seen: list[int] = []

    def play(self, view: BotView) -> Card:
        assert view.turn == view.seat
        assert set(view.legal_cards) <= set(view.hand)
        out = set(view.cards_still_out())
        assert not out & set(view.hand) and not out & view.played_cards
        sizes = view.hand_sizes()
        assert sizes[view.seat] == len(view.hand)
        undealt = view.rules.deck_mask.bit_count() - view.rules.hand_size * view.player_count
        assert sum(sizes) - sizes[view.seat] == len(out) - undealt
        for seat, suits in view.voids().items():
            if seat == view.seat:
                assert not {card.suit for card in view.hand} & suits - {None}
        return super().play(view)

    def on_hand_end(self, result: ev.HandScored, view: BotView) -> None:
        self.hands_seen.append(result.hand_number)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "rules", RULE_SETS, ids=["default", "cutthroat-jokers", "blind-nil-pass", "two-of-clubs"]
)
async def test_sdk_bots_play_a_whole_match(client: SpadesClient, rules: Rules) -> None:
    table_id, tokens = await seat_bots(client, rules)
    bots = [CheckingBot(seed) for seed in range(rules.players)]
    outcomes = await play_all(client, bots, tokens, table_id)
    final = await audit(client, table_id, outcomes)
    assert [outcome.seat for outcome in outcomes] == list(range(rules.players))
    assert all(outcome.fallbacks == 0 and outcome.reconnects == 0 for outcome in outcomes)
    # Two hands, or more when the scores tie at the top after the hand limit (the rules play
    # on until the tie is broken: one cutthroat match in a few hundred).
    assert final.hand_number >= 2
    assert [bot.hands_seen for bot in bots] == [
        list(range(1, final.hand_number + 1))
    ] * rules.players
    assert {outcome.won for outcome in outcomes} == {True, False}
    table = await client.get_table(table_id)
    assert table.status == "finished" and table.scores == tuple(final.scores)


class Stubborn(Bot):
    """Bids 99 and plays its highest card: often illegal, yet it never stalls the table."""

    def bid(self, view: BotView) -> int:
        return 99

    def play(self, view: BotView) -> Card:
        return max(view.hand)


@pytest.mark.asyncio
async def test_an_illegal_choice_falls_back_to_a_legal_action(client: SpadesClient) -> None:
    rules = Rules(max_hands=1)
    table_id, tokens = await seat_bots(client, rules)
    bots: list[Bot] = [Stubborn(), RandomBot(1), RandomBot(2), RandomBot(3)]
    outcomes = await play_all(client, bots, tokens, table_id)
    await audit(client, table_id, outcomes)
    assert outcomes[0].fallbacks >= 1


@pytest.mark.asyncio
async def test_a_spectator_watches_the_public_events(client: SpadesClient) -> None:
    rules = Rules(max_hands=1)
    table_id, tokens = await seat_bots(client, rules)
    seen: list[object] = []

    async def watch() -> None:
        async for message in client.watch(table_id, after_sequence=1):
            seen.append(message)
            if isinstance(message, StreamEvent) and isinstance(message.event, ev.MatchEnded):
                return

    watching = asyncio.ensure_future(watch())
    outcomes = await play_all(client, [RandomBot(seed) for seed in range(4)], tokens, table_id)
    await asyncio.wait_for(watching, 10)
    assert isinstance(seen[0], Snapshot) and seen[0].sequence == 1
    events = [message for message in seen if isinstance(message, StreamEvent)]
    assert [message.sequence for message in events] == list(range(2, len(events) + 2))
    dealt = [message.event for message in events if isinstance(message.event, ev.CardsDealt)]
    assert len(dealt) == 4 and all(event.cards is None for event in dealt)
    assert events[-1].event == outcomes[0].end
