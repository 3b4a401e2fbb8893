"""What a turn's prompt offers beside its legal actions: the card pass to choose (how many, of
which cards), whether the seat may claim the clock's extension, and whether it may concede."""

from __future__ import annotations

from spades.engine import (
    ClaimExtension,
    Clock,
    Concede,
    Phase,
    Rules,
    apply,
    may_claim_extension,
    may_concede,
    new_match,
    pass_choice,
)

from .scenario import bid_round, card_pass, play, table

HANDS = {
    0: "2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC",
    2: "AS KS QS JS TS 9S 8S 7S 6S 5S 4S 3S 2S",
}


def test_the_pass_to_choose_is_the_seat_on_turns_and_only_while_passing() -> None:
    state = card_pass(Rules(blind_nil=True, blind_nil_deficit=0, blind_nil_pass_cards=2), HANDS)
    assert state.phase is Phase.PASSING and state.turn == 2
    assert pass_choice(state, 2) == (2, sorted(state.hand_of(2)))
    assert pass_choice(state, 0) is None  # the Blind Nil bidder passes second
    bidding = table(Rules(blind_nil=True, blind_nil_pass_cards=2), HANDS, dealer=3)
    assert bidding.phase is not Phase.PASSING
    assert pass_choice(bidding, bidding.seat_to_act()) is None


def test_the_extension_is_the_seat_on_turns_once_a_turn_when_the_clock_has_one() -> None:
    state = bid_round(table(Rules(), dealer=3))  # North leads
    assert may_claim_extension(state, 0)
    assert not any(may_claim_extension(state, seat) for seat in (1, 2, 3))
    claimed, _ = apply(state, 0, ClaimExtension())
    assert not may_claim_extension(claimed, 0)
    assert may_claim_extension(play(claimed, "2C"), 1)  # the next turn has its own
    no_extension = Rules(clock=Clock(turn_millis=30_000, extension_millis=0))
    assert not may_claim_extension(bid_round(table(no_extension, dealer=3)), 0)
    waiting, _ = new_match(Rules(), seed=bytes(32))
    assert not any(may_claim_extension(waiting, seat) for seat in range(4))


def test_a_seat_may_concede_while_the_match_is_played_only() -> None:
    waiting, _ = new_match(Rules(), seed=bytes(32))
    assert not may_concede(waiting)
    state = bid_round(table(Rules(), dealer=3))
    assert may_concede(state)
    ended, _ = apply(state, 0, Concede())
    assert ended.phase is Phase.ENDED and not may_concede(ended)
