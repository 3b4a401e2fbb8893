"""Properties of the solver's values on random endings (hypothesis): a card's value is the
value of the position it leads to, seen from the same side (so no card beats the best of the
position before it), and positions that differ only in which cards are gone agree."""

from __future__ import annotations

import dataclasses
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from spades.engine import CARDS, PLAY, Phase, Play, Rules, act
from spades.engine.cards import iter_cards
from spades.solver import Objective, Position, solve
from tests.support.endings import VARIATIONS, ending

PARTNERSHIPS = [rules for rules in VARIATIONS if rules.players == 4]
NO_JOKERS = [rules for rules in VARIATIONS if not rules.jokers]


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    rules=st.sampled_from(PARTNERSHIPS),
    tricks_left=st.integers(1, 5),
    objective=st.sampled_from(Objective),
)
def test_a_cards_value_is_the_best_of_the_position_it_leads_to(
    seed: int, rules: Rules, tricks_left: int, objective: Objective
) -> None:
    state = ending(rules, tricks_left, random.Random(seed))
    seat = state.seat_to_act()
    values = solve(state, objective)
    best = max(values.values())
    for card, value in values.items():
        assert value <= best
        child = state.clone()
        act(child, seat, PLAY[card])
        if child.phase is not Phase.PLAYING:
            continue  # the hand is over: the reference test checks the last cards
        following = max(solve(child, objective).values())
        if child.side_of(child.seat_to_act()) == state.side_of(seat):
            assert value == following
        elif objective is Objective.POINTS:
            assert value == -following  # the two sides' differences are opposite
        else:
            assert value == state.rules.hand_size - following  # the sides share the tricks


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    rules=st.sampled_from(NO_JOKERS),
    tricks_left=st.integers(1, 6),
    objective=st.sampled_from(Objective),
)
def test_positions_with_the_same_cards_ranked_alike_agree(
    seed: int, rules: Rules, tricks_left: int, objective: Objective
) -> None:
    """Move every card still out to the lowest ranks of its suit, keeping their order: only
    which cards are gone differs, so every card's value is the same (the transposition
    table's keys rely on it)."""
    state = ending(rules, tricks_left, random.Random(seed))
    position = Position.of(state)
    out = sorted(
        {*(card for hand in position.hands for card in iter_cards(hand))}
        | {int(play.card) for play in position.trick}
    )
    moved: dict[int, int] = {}
    for suit in range(4):
        in_suit = [card for card in out if card // 13 == suit]
        for rank, card in enumerate(in_suit):
            moved[card] = suit * 13 + rank

    def move(mask: int) -> int:
        return sum(1 << moved[card] for card in iter_cards(mask))

    lowered = dataclasses.replace(
        position,
        hands=tuple(move(hand) for hand in position.hands),
        trick=tuple(Play(play.seat, CARDS[moved[play.card]]) for play in position.trick),
        legal=move(position.legal),
    )
    values = solve(position, objective)
    assert solve(lowered, objective) == {
        CARDS[moved[card]]: value for card, value in values.items()
    }
