"""The solver's trick counts against DDS (Bo Haglund's double-dummy solver, via endplay) where
the rules coincide: partners, clockwise, spades trumps and led any time, no jokers.

Most positions are the short endings of randomly played deals (every position of their last
four tricks); a few are long endings (every position of the trick with eight tricks left).
Full 13-card deals are left to the benchmark (make bench-solver), which compares the two at
the first lead: they take the solver seconds each, too long for this suite. Seeded: the same
positions every run.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from spades.engine import PLAY, MatchState, Phase, Rules, act
from spades.engine.cards import iter_cards
from spades.engine.legal import play_mask
from spades.solver import Objective, Position, solve
from tests.support.dds import coincides, dds_tricks
from tests.support.endings import dealt_and_bid

RULES = Rules(spades_must_be_broken=False)


def played_positions(state: MatchState, rng: random.Random) -> Iterator[Position]:
    """Every position of one hand played out at random from ``state``."""
    while state.phase is Phase.PLAYING:
        yield Position.of(state)
        seat = state.seat_to_act()
        act(state, seat, PLAY[rng.choice(list(iter_cards(play_mask(state, seat))))])


def assert_agrees(position: Position) -> None:
    assert coincides(position)
    taken = position.tricks_taken_by_side(position.to_play)
    ours = {card: value - taken for card, value in solve(position, Objective.TRICKS).items()}
    assert ours == dds_tricks(position), (position.hands, position.trick)


def test_ten_thousand_short_endings_agree_with_dds() -> None:
    rng = random.Random("dds endings")
    compared = 0
    while compared < 10_000:
        for position in played_positions(dealt_and_bid(RULES, rng), rng):
            if position.tricks_left <= 4:
                assert_agrees(position)
                compared += 1
    assert compared >= 10_000


def test_long_endings_agree_with_dds() -> None:
    rng = random.Random("dds long endings")
    compared = 0
    for _ in range(4):
        for position in played_positions(dealt_and_bid(RULES, rng), rng):
            if position.tricks_left == 8:
                assert_agrees(position)
                compared += 1
    assert compared == 16
