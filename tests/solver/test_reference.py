"""The compiled solver against the engine's own minimax (tests/solver/reference.py), card by
card, on every position of random short endings and short first tricks, under every variation
of tests/support/endings.py and both objectives. Seeded: the same positions every run."""

from __future__ import annotations

import random

import pytest

from spades.engine import Rules
from spades.solver import Objective, solve
from tests.solver.reference import Reference, check_tree
from tests.support.endings import VARIATIONS, ending, short_hand


@pytest.mark.parametrize("rules", VARIATIONS, ids=lambda rules: ", ".join(rules.badges()))
def test_every_position_of_short_endings_matches_the_reference(rules: Rules) -> None:
    rng = random.Random(f"endings {rules.badges()}")
    checked = 0
    for round_number in range(4):
        tricks_left = 1 + round_number % 3
        for objective in Objective:
            checked += check_tree(ending(rules, tricks_left, rng), objective)
            checked += check_tree(short_hand(rules, tricks_left, rng), objective)
    assert checked >= 300


@pytest.mark.parametrize("rules", VARIATIONS, ids=lambda rules: ", ".join(rules.badges()))
def test_four_trick_endings_match_the_reference_at_their_root(rules: Rules) -> None:
    rng = random.Random(f"four tricks {rules.badges()}")
    for state, objective in (
        (ending(rules, 4, rng), Objective.POINTS),
        (short_hand(rules, 4, rng), Objective.TRICKS),
    ):
        assert solve(state, objective) == Reference(objective).card_values(state)
