"""The search contexts a thread keeps (spades.solver.search): one serves every position of a hand
scored alike, and never a position scored otherwise. Positions of one hand, solved one after the
other, reuse the context's transposition table; the same cards with other bags carried in (near
the bag limit, where one more bag costs the penalty) or seen from the other side must not.
Checked against the engine's own minimax (tests/solver/reference.py). Seeded."""

from __future__ import annotations

import random

import pytest

from spades.engine import Rules
from spades.solver import Objective
from tests.solver.reference import check_tree
from tests.support.endings import ending


@pytest.mark.parametrize(
    "rules", [Rules(), Rules(players=3)], ids=lambda rules: ", ".join(rules.badges())
)
def test_positions_scored_otherwise_get_their_own_values(rules: Rules) -> None:
    rng = random.Random(f"contexts {rules.badges()}")
    last = rules.bag_limit - 1
    for _ in range(6):
        state = ending(rules, 2, rng)
        sides = len(state.bags)
        for carried in ((0,) * sides, (last,) * sides, (0, *(last,) * (sides - 1))):
            state.bags = list(carried)
            for objective in Objective:
                check_tree(state, objective)
