"""What the solver maximises: the two objectives, and each end of the hand's value under them.

The value of a way the remaining tricks fall comes from the engine's own scoring
(:func:`spades.engine.score_side`): the C search only reads the table built here, so a hand's
points are decided in one place.

* :attr:`Objective.POINTS`: the actor's side's hand points minus the other side's (with three
  players, minus the two others' together: the paranoid assumption), contracts, Nil and Blind
  Nil, bags and the bag penalty included, given the bags each side carried into the hand.
* :attr:`Objective.TRICKS`: the tricks the actor's side takes in the whole hand: those already
  taken plus those from the trick in progress on (DDS counts only the latter).
"""

from __future__ import annotations

import itertools
from array import array
from enum import Enum
from functools import lru_cache

from spades.engine import Bid, Rules, score_side


class Objective(Enum):
    """What a card's value measures (see the module's docstring)."""

    POINTS = "points"
    TRICKS = "tricks"


def leaf_table(
    rules: Rules,
    actor: int,
    objective: Objective,
    bids: tuple[Bid, ...],
    bags: tuple[int, ...],
    tricks_won: tuple[int, ...],
    tricks_left: int,
) -> bytes:
    """The value, for ``actor``, of every way the ``tricks_left`` tricks can fall: int32 values
    indexed by ``sum(wins[seat] * (tricks_left + 1) ** seat)`` (other indexes hold 0)."""
    return _leaf_table(rules, actor, objective, bids, bags, tricks_won, tricks_left)


@lru_cache(maxsize=256)
def _leaf_table(
    rules: Rules,
    actor: int,
    objective: Objective,
    bids: tuple[Bid, ...],
    bags: tuple[int, ...],
    tricks_won: tuple[int, ...],
    tricks_left: int,
) -> bytes:
    players = rules.players
    base = tricks_left + 1
    table = array("i", bytes(4 * base**players))
    actor_side = rules.seating.side_of(actor)
    bid_of = dict(enumerate(bids))
    for first in itertools.product(range(base), repeat=players - 1):
        last = tricks_left - sum(first)
        if last < 0:
            continue
        wins = (*first, last)
        final = {seat: tricks_won[seat] + wins[seat] for seat in range(players)}
        index = sum(count * base**seat for seat, count in enumerate(wins))
        table[index] = hand_value(rules, actor_side, objective, bid_of, bags, final)
    return table.tobytes()


def hand_value(
    rules: Rules,
    actor_side: int,
    objective: Objective,
    bids: dict[int, Bid],
    bags: tuple[int, ...],
    tricks: dict[int, int],
) -> int:
    """The value of a finished hand for the side ``actor_side`` (an index into
    ``rules.sides``), given each seat's bid and tricks for the whole hand."""
    sides = rules.sides
    if objective is Objective.TRICKS:
        return sum(tricks[seat] for seat in sides[actor_side])
    value = 0
    for index, side in enumerate(sides):
        points = score_side(rules, side, bids, tricks, 0, bags[index]).hand_points
        value += points if index == actor_side else -points
    return value
