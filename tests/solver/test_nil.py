"""Nil-heavy endings: the solver's points against the engine's own minimax
(tests/solver/reference.py) where a Nil is alive: the positions where the points search is
hardest, and the ones any Nil pruning rule (a Nil made once its seat can win nothing, say) must
be checked on.

The endings deal a Nil bidder mostly low cards, often from the low ranks only, so that the Nil is
made or set by a single card in many positions. Seeded: the same positions every run.
"""

from __future__ import annotations

import random

import pytest

from spades.engine import MatchState, Phase, Rules, act, seated_match
from spades.engine.actions import MakeBid
from spades.engine.cards import iter_cards
from spades.engine.legal import legal_actions
from spades.solver import Objective, solve
from tests.solver.reference import Reference, check_tree

NIL_RULES: tuple[Rules, ...] = (
    Rules(),
    Rules(spades_must_be_broken=False),
    Rules(nil_tricks_count_for_partner=True),
    Rules(bag_limit=5, bag_penalty=50),
    Rules(players=3),
)


def nil_ending(rules: Rules, size: int, rng: random.Random) -> MatchState:
    """A hand at its first lead cut to ``size`` cards a seat, one or two seats bid Nil and hold
    mostly low cards, the others' bids and the tricks already taken random (a Nil's seat has
    taken none, or now and then one: a Nil already set)."""
    players = rules.players
    nils = rng.sample(range(players), rng.choice((1, 1, 2)))
    state, _ = seated_match(rules, seed=rng.randbytes(32))
    while state.phase is not Phase.PLAYING:
        seat = state.seat_to_act()
        actions = legal_actions(state, seat)
        wanted = [
            action
            for action in actions
            if not isinstance(action, MakeBid)
            or ((action.tricks == 0) == (seat in nils) and action.tricks < 8)
        ]
        act(state, seat, rng.choice(wanted or actions))
    state.bags = [rng.randrange(rules.bag_limit) for _ in state.bags]
    # Often only the low ranks, so that the hands' cards interleave closely.
    ranks = rng.choice((5, 7, 13))
    dealt = [number for hand in state.hands for number in iter_cards(hand)]
    deck = [number for number in dealt if number % 13 < ranks]
    rng.shuffle(deck)
    hands = [0] * players
    for seat in [*nils, *(seat for seat in range(players) if seat not in nils)]:
        if seat in nils:
            low = sorted(deck, key=lambda number: number % 13)[: 3 * size]
            cards = rng.sample(low, size)
        else:
            cards = deck[:size]
        for number in cards:
            deck.remove(number)
            hands[seat] |= 1 << number
    state.hands = hands
    state.counts_before_play = (size,) * players
    taken = [0] * players
    others = [seat for seat in range(players) if seat not in nils or rng.random() < 0.1]
    for _ in range(rules.hand_size - size):
        taken[rng.choice(others)] += 1
    state.tricks_won = taken
    return state


@pytest.mark.parametrize("rules", NIL_RULES, ids=lambda rules: ", ".join(rules.badges()))
def test_every_position_of_nil_endings_matches_the_reference(rules: Rules) -> None:
    rng = random.Random(f"nil endings {rules.badges()}")
    checked = 0
    for round_number in range(40):
        checked += check_tree(nil_ending(rules, 2 + round_number % 2, rng), Objective.POINTS)
    assert checked >= 300


@pytest.mark.parametrize("rules", NIL_RULES, ids=lambda rules: ", ".join(rules.badges()))
def test_four_trick_nil_endings_match_the_reference_at_their_root(rules: Rules) -> None:
    rng = random.Random(f"four-trick nil endings {rules.badges()}")
    for _ in range(3):
        state = nil_ending(rules, 4, rng)
        assert solve(state, Objective.POINTS) == Reference(Objective.POINTS).card_values(state)
