"""Which states the solver takes, and the errors that name why it refuses the others."""

from __future__ import annotations

import random

import pytest

from spades.engine import BID, MatchState, Rules, act, redact, seated_match
from spades.solver import Objective, Position, UnsolvablePosition, solve
from tests.support.endings import dealt_and_bid


def test_a_hand_still_being_bid_is_refused_in_words() -> None:
    state, _ = seated_match(Rules(), seed=bytes(32))
    with pytest.raises(UnsolvablePosition, match=r"needs a hand in play.*'bidding'"):
        solve(state, Objective.TRICKS)


def test_a_missing_bid_is_named() -> None:
    state = dealt_and_bid(Rules(), random.Random(1))
    state.bids[2] = None
    with pytest.raises(UnsolvablePosition, match="South has not bid"):
        Position.of(state)


def test_a_seats_view_is_refused_for_its_hidden_hands() -> None:
    state, events = seated_match(Rules(), seed=bytes(32))
    for _ in range(4):
        events += act(state, state.seat_to_act(), BID[3])
    seen = MatchState.from_events(redact(event, 0) for event in events)
    with pytest.raises(UnsolvablePosition, match="East's cards are hidden"):
        Position.of(seen)


def test_a_position_records_what_the_score_needs() -> None:
    state = dealt_and_bid(Rules(players=3), random.Random(2))
    position = Position.of(state)
    assert position.tricks_left == 17
    assert position.bids == tuple(state.bids)
    assert position.bags == tuple(state.bags)
    assert position.side_of(1) == (1,)
