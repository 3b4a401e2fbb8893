"""The compiled solver against the engine's own minimax (tests/solver/reference.py), card by
card, on every position of random short endings and short first tricks, under every variation
of tests/support/endings.py and both objectives. Seeded: the same positions every run."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from spades.engine import PLAY, MatchState, Phase, Rules, act
from spades.engine.cards import iter_cards
from spades.engine.legal import play_mask
from spades.solver import Objective, solve
from tests.solver.reference import Reference
from tests.support.endings import VARIATIONS, ending, short_hand


def positions_of(state: MatchState) -> Iterator[MatchState]:
    """Every position of the tree below ``state`` (``state`` included) until the hand ends."""
    yield state
    seat = state.seat_to_act()
    for number in iter_cards(play_mask(state, seat)):
        child = state.clone()
        act(child, seat, PLAY[number])
        # (after a real hand's last trick the engine is bidding the next hand; after a short
        # hand's, the hands are empty)
        if child.phase is Phase.PLAYING and any(child.hands):
            yield from positions_of(child)


def _check_tree(state: MatchState, objective: Objective) -> int:
    reference = Reference(objective)
    checked = 0
    for position in positions_of(state):
        assert solve(position, objective) == reference.card_values(position), (
            state.rules.badges(),
            objective,
            position.hands,
            position.trick,
        )
        checked += 1
    return checked


@pytest.mark.parametrize("rules", VARIATIONS, ids=lambda rules: ", ".join(rules.badges()))
def test_every_position_of_short_endings_matches_the_reference(rules: Rules) -> None:
    rng = random.Random(f"endings {rules.badges()}")
    checked = 0
    for round_number in range(4):
        tricks_left = 1 + round_number % 3
        for objective in Objective:
            checked += _check_tree(ending(rules, tricks_left, rng), objective)
            checked += _check_tree(short_hand(rules, tricks_left, rng), objective)
    assert checked >= 300


@pytest.mark.parametrize("rules", VARIATIONS, ids=lambda rules: ", ".join(rules.badges()))
def test_four_trick_endings_match_the_reference_at_their_root(rules: Rules) -> None:
    rng = random.Random(f"four tricks {rules.badges()}")
    for state, objective in (
        (ending(rules, 4, rng), Objective.POINTS),
        (short_hand(rules, 4, rng), Objective.TRICKS),
    ):
        assert solve(state, objective) == Reference(objective).card_values(state)
