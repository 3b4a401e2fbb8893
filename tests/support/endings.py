"""Random positions for the solver's tests, made by the engine: short endings of real hands,
and short hands at the first trick (where the 2♣ lead and unbroken spades bite).

An *ending* is a real hand played at random by the engine until a few tricks are left (and a
few cards into the next trick), after random legal bids (Blind Nil offered every hand when the
rules have it) and random bags carried in. A *short hand* takes a hand at its first lead and
keeps only a few cards of each seat, the 2♣ with its holder when it must lead, with random
tricks already counted for the seats so that the score is not decided in advance. Both are
real :class:`MatchState` objects: the engine's legality and scoring apply unchanged.
"""

from __future__ import annotations

import random

from spades.engine import PLAY, Direction, MatchState, Phase, Rules, act, seated_match
from spades.engine.cards import iter_cards
from spades.engine.legal import legal_actions, play_mask

#: Every variation that changes play or the hand's score, alone and combined.
VARIATIONS: tuple[Rules, ...] = (
    Rules(),
    Rules(spades_must_be_broken=False),
    Rules(two_of_clubs_leads=True),
    Rules(jokers=True),
    Rules(blind_nil=True, blind_nil_deficit=0),
    Rules(blind_nil=True, blind_nil_deficit=0, blind_nil_pass_cards=2),
    Rules(nil_tricks_count_for_partner=True),
    Rules(bag_limit=5, bag_penalty=50),
    Rules(direction=Direction.COUNTER_CLOCKWISE),
    Rules(players=3),
    Rules(players=3, jokers=True),
    Rules(players=3, two_of_clubs_leads=True, direction=Direction.COUNTER_CLOCKWISE),
    Rules(jokers=True, direction=Direction.COUNTER_CLOCKWISE, spades_must_be_broken=False),
)


def dealt_and_bid(rules: Rules, rng: random.Random) -> MatchState:
    """A match at the first lead of its first hand, after random legal bids (and passes)."""
    state, _ = seated_match(rules, seed=rng.randbytes(32))
    while state.phase is not Phase.PLAYING:
        seat = state.seat_to_act()
        act(state, seat, rng.choice(legal_actions(state, seat)))
    state.bags = [rng.randrange(rules.bag_limit) for _ in state.bags]
    return state


def play_randomly(state: MatchState, cards: int, rng: random.Random) -> None:
    """Play ``cards`` random legal cards in place."""
    for _ in range(cards):
        seat = state.seat_to_act()
        act(state, seat, PLAY[rng.choice(list(iter_cards(play_mask(state, seat))))])


def ending(rules: Rules, tricks_left: int, rng: random.Random) -> MatchState:
    """A real hand with ``tricks_left`` tricks to go, up to a trick's cards into the next."""
    state = dealt_and_bid(rules, rng)
    played = (rules.hand_size - tricks_left) * rules.players
    play_randomly(state, played + rng.randrange(rules.players), rng)
    return state


def short_hand(rules: Rules, size: int, rng: random.Random) -> MatchState:
    """A hand at its first lead, cut to ``size`` cards a seat (so still at trick 1)."""
    state = dealt_and_bid(rules, rng)
    two_of_clubs = 1
    kept = []
    for hand in state.hands:
        cards = list(iter_cards(hand))
        rng.shuffle(cards)
        if hand & two_of_clubs and rules.two_of_clubs_leads:
            cards.remove(0)
            cards.insert(0, 0)
        mask = 0
        for number in cards[:size]:
            mask |= 1 << number
        kept.append(mask)
    state.hands = kept
    state.counts_before_play = (size,) * rules.players
    taken = [0] * rules.players
    for _ in range(rules.hand_size - size):
        taken[rng.randrange(rules.players)] += 1
    state.tricks_won = taken
    return state
