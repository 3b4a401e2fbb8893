"""The search contexts a thread keeps (spades.solver.search): one serves every position of a hand
scored alike, and never a position scored otherwise. Positions of one hand, solved one after the
other, reuse the context's transposition table; the same cards with other bags carried in (near
the bag limit, where one more bag costs the penalty) or seen from the other side must not.
Checked against the engine's own minimax (tests/solver/reference.py). Seeded."""

from __future__ import annotations

import random
from collections import Counter

import pytest

import spades.solver.search as solver_search
from spades.engine import PLAY, MatchState, Phase, Rules, act
from spades.engine.cards import iter_cards
from spades.engine.legal import play_mask
from spades.solver import Objective, solve
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


def _values_along(
    state: MatchState, rng: random.Random, counts: Counter[str] | None = None
) -> list[dict[str, int]]:
    """Every card's value, both objectives, at every position of ``state`` played out at
    random from here (in place), the kept tables' layout checked after each; ``counts`` adds
    up the kept tables' packs, drops and clears after each (a context kept over several calls
    is counted again each time: in cutthroat each actor has its own, so a hand's contexts do
    not last to its end)."""
    values = []
    while state.phase is Phase.PLAYING:
        for objective in Objective:
            values.append({str(card): value for card, value in solve(state, objective).items()})
            solver_search.check_kept_tables()  # runs inside the pool, none overlapping
            if counts is not None:
                counts.update(solver_search.kept_table_counts())
        seat = state.seat_to_act()
        act(state, seat, PLAY[rng.choice(list(iter_cards(play_mask(state, seat))))])
    return values


@pytest.mark.parametrize(
    "rules", [Rules(), Rules(players=3)], ids=lambda rules: ", ".join(rules.badges())
)
def test_a_table_that_fills_drops_its_shallowest_shapes_and_no_value_changes(
    rules: Rules, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A context's table that fills has its runs of entries packed to the front of its pool,
    and when they would still fill most of it the shapes of fewest tricks left are dropped
    (emptied only when nothing would be kept). With room for 128 entries, packs and drops both
    happen in these endings of eight tricks; every value must be the one the full table gives."""
    seeds = [random.Random(f"small table {rules.badges()} {n}") for n in range(3)]
    endings = [ending(rules, 8, seed) for seed in seeds]
    full = [_values_along(state.clone(), random.Random(n)) for n, state in enumerate(endings)]
    monkeypatch.setattr(solver_search, "TABLE_ENTRIES", 128)
    counts: Counter[str] = Counter()
    small = [
        _values_along(state.clone(), random.Random(n), counts) for n, state in enumerate(endings)
    ]
    assert small == full
    assert counts["packs"] > counts["drops"] > 0, counts


def test_a_table_of_negative_size_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """A context whose table may hold fewer than no entries is refused, and the error says which
    setting is wrong; nothing is kept for it."""
    state = ending(Rules(), 2, random.Random("negative table"))
    monkeypatch.setattr(solver_search, "TABLE_ENTRIES", -1)
    before = solver_search.check_kept_tables()
    with pytest.raises(ValueError, match="max_entries must not be negative"):
        solve(state, Objective.POINTS)
    assert solver_search.check_kept_tables() == before
