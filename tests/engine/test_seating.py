"""Seating: the order of play, partners and sides, checked against the table written out."""

from __future__ import annotations

import pickle

import pytest

from spades.engine import Direction, Rules, Seating, legal_actions, seated_match


def test_partnership_clockwise() -> None:
    seating = Seating(players=4, step=1)
    assert [seating.next(seat) for seat in range(4)] == [1, 2, 3, 0]
    assert [seating.partner(seat) for seat in range(4)] == [2, 3, 0, 1]
    assert [seating.side_of(seat) for seat in range(4)] == [0, 1, 0, 1]
    assert seating.sides == ((0, 2), (1, 3))
    assert seating.order_after(3) == (0, 1, 2, 3)
    assert seating.order_after(1) == (2, 3, 0, 1)
    assert seating.opponents(0) == (1, 3) and seating.opponents(3) == (0, 2)


def test_partnership_counter_clockwise() -> None:
    seating = Seating(players=4, step=-1)
    assert [seating.next(seat) for seat in range(4)] == [3, 0, 1, 2]
    assert [seating.partner(seat) for seat in range(4)] == [2, 3, 0, 1]
    assert seating.order_after(0) == (3, 2, 1, 0)


@pytest.mark.parametrize(("step", "after_zero"), [(1, (1, 2, 0)), (-1, (2, 1, 0))])
def test_cutthroat_has_no_partners_and_one_side_per_player(
    step: int, after_zero: tuple[int, ...]
) -> None:
    seating = Seating(players=3, step=step)
    assert seating.order_after(0) == after_zero
    assert seating.next(0) == after_zero[0]
    assert [seating.partner(seat) for seat in range(3)] == [None, None, None]
    assert seating.sides == ((0,), (1,), (2,))
    assert [seating.side_of(seat) for seat in range(3)] == [0, 1, 2]
    assert seating.opponents(1) == (0, 2)


def test_the_rules_and_the_state_share_one_seating() -> None:
    rules = Rules(players=3, direction=Direction.COUNTER_CLOCKWISE)
    state, _ = seated_match(rules, seed=bytes(32))
    assert state.seating is rules.seating is state.game.seating
    assert rules.sides == rules.seating.sides
    # Bidding goes round from the dealer's next seat, the way the seating says.
    dealer = state.dealer
    assert dealer is not None
    assert state.turn == rules.seating.order_after(dealer)[0] == (dealer - 1) % 3


def test_a_rule_set_compiles_its_game_once() -> None:
    rules = Rules(jokers=True)
    assert rules.game is rules.game
    assert rules.game.seating is rules.seating
    state, _ = seated_match(rules, seed=bytes(32))
    assert state.game is rules.game


def test_a_compiled_rule_set_and_a_state_survive_pickling() -> None:
    # The arena sends rules to worker processes; the compiled game travels with them.
    rules = Rules(jokers=True)
    state, _ = seated_match(rules, seed=bytes(32))
    copied = pickle.loads(pickle.dumps(state))
    assert copied.rules == rules and copied.game.rules is copied.rules
    assert copied.game.trump_power == rules.game.trump_power
    seat = copied.seat_to_act()
    assert legal_actions(copied, seat) == legal_actions(state, seat)
