"""A bot's illegal answer (or exception) is replaced by the clock's automatic action.

The first legal action used to stand in, which in bidding is Nil: the engine's automatic
choice bids 1 and plays the cheapest legal card instead.
"""

from __future__ import annotations

import asyncio
import logging

import pytest

from spades.bot import Bot, BotView, Decision, decide
from spades.engine import (
    BID,
    Card,
    MatchState,
    Phase,
    PlayCard,
    Rules,
    apply,
    automatic_action,
    legal_actions,
    seated_match,
)


class Broken(Bot):
    def bid(self, view: BotView) -> int:
        raise RuntimeError("no idea")

    def play(self, view: BotView) -> Card:
        return Card.parse("BJ")  # never in a default deck


def on_turn(state: MatchState) -> BotView:
    seat = state.seat_to_act()
    return BotView(state, seat, legal_actions(state, seat))


def test_a_raising_bid_is_replaced_by_a_bid_of_one_not_nil() -> None:
    state, _ = seated_match(Rules(), seed=bytes(32))
    view = on_turn(state)
    assert view.legal_actions[0] == BID[0]  # (what used to be played)
    assert asyncio.run(decide(Broken(), view)) == Decision(BID[1], True)


def test_an_illegal_card_is_replaced_by_the_clocks_card() -> None:
    state, _ = seated_match(Rules(), seed=bytes(32))
    while state.phase is not Phase.PLAYING:
        seat = state.seat_to_act()
        state, _ = apply(state, seat, BID[3])
    view = on_turn(state)
    action, replaced, note = asyncio.run(decide(Broken(), view))
    assert note == ""
    assert replaced and action == automatic_action(state)
    assert isinstance(action, PlayCard)


def test_a_raised_traceback_is_logged_once_then_a_line_a_repeat(
    caplog: pytest.LogCaptureFixture,
) -> None:
    state, _ = seated_match(Rules(), seed=bytes(32))
    view = on_turn(state)
    bot = Broken()
    with caplog.at_level(logging.ERROR, logger="spades.bot"):
        for _ in range(3):
            assert asyncio.run(decide(bot, view)) == Decision(BID[1], True)
    first, *repeats = [record for record in caplog.records if "Broken raised" in record.message]
    assert first.exc_info is not None and "Traceback" in caplog.text
    assert caplog.text.count("Traceback") == 1
    assert [record.exc_info for record in repeats] == [None, None]
    assert "Broken raised RuntimeError again at test_fallback.py:" in repeats[0].message
    assert "(3 times; traceback above): no idea; playing bid 1 instead" in repeats[1].message
    caplog.clear()
    with caplog.at_level(logging.ERROR, logger="spades.bot"):
        asyncio.run(decide(Broken(), view))  # another bot: its own first traceback
    assert caplog.text.count("Traceback") == 1
