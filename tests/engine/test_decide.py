"""decide() is pure: the events of an action, the state left as it was; apply folds them."""

from __future__ import annotations

import random

import pytest

from spades.engine import (
    IllegalAction,
    MatchState,
    Rules,
    apply,
    decide,
    legal_actions,
    seated_match,
    view,
)
from spades.engine import events as ev


def snapshot(state: MatchState) -> tuple[object, ...]:
    return (view(state, None), tuple(state.hands), tuple(state.trick), state.timeout_streaks)


def test_decide_changes_nothing_and_apply_is_decide_then_evolve() -> None:
    state, events = seated_match(Rules(max_hands=2), seed=bytes(range(32)))
    rng = random.Random(4)
    while not state.is_over:
        seat = state.seat_to_act()
        action = rng.choice(legal_actions(state, seat))
        before = snapshot(state)
        decided = decide(state, seat, action)
        assert snapshot(state) == before
        new, applied = apply(state, seat, action)
        assert decided == applied
        events += applied
        folded = MatchState.from_events(events)
        assert snapshot(folded) == snapshot(new)
        state = new
    assert isinstance(events[-1], ev.SeedRevealed)


def test_decide_refuses_without_changing_the_state() -> None:
    state, _ = seated_match(Rules(), seed=bytes(32))
    seat = state.seat_to_act()
    other = state.seating.next(seat)
    before = snapshot(state)
    with pytest.raises(IllegalAction, match="turn"):
        decide(state, other, legal_actions(state, seat)[0])
    assert snapshot(state) == before
