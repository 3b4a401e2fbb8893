"""What the solver maximises: the two objectives, and each end of the hand's value under them.

The value of a way the remaining tricks fall comes from the engine's own scoring
(:func:`spades.engine.score_side`): the C search only reads the table built here, so a hand's
points are decided in one place.

* :attr:`Objective.POINTS`: the actor's side's hand points minus the other side's (with three
  players, minus the two others' together: the paranoid assumption), contracts, Nil and Blind
  Nil, bags and the bag penalty included, given the bags each side carried into the hand.
* :attr:`Objective.TRICKS`: the tricks the actor's side takes in the whole hand: those already
  taken plus those from the trick in progress on (DDS counts only the latter).

With :class:`MatchStakes` the points objective values the hand as a step of the match: each
side's *standing* (its score less every bag it carries at its share of the bag penalty, so the
penalty's drop is paid as the bags come) gained in the hand, the actor's side's less the others'
(their mean with three players), plus the stakes' ``win_points`` when the hand ends the match
with the actor's side the winner, less them when another side wins
(:func:`spades.engine.match_end`, the table's own rule). In a hand that may end the match a
side at 480 wins by making any contract, whatever its margin: hand points alone cannot see it.
"""

from __future__ import annotations

import itertools
from array import array
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache

from spades.engine import Bid, MatchState, Rules, match_end, score_side


class Objective(Enum):
    """What a card's value measures (see the module's docstring)."""

    POINTS = "points"
    TRICKS = "tricks"


@dataclass(frozen=True, slots=True)
class MatchStakes:
    """What the hand may decide besides its points: the match (see the module's docstring).

    ``scores``: each side's score before the hand (the bags carried in are the position's);
    ``hand_number``: the hand's number, for a hand limit; ``win_points``: what winning the
    match is worth, counted for a win and against a loss (the search bot's 300).
    """

    scores: tuple[int, ...]
    hand_number: int
    win_points: int

    @classmethod
    def of(cls, state: MatchState, win_points: int) -> MatchStakes:
        """The stakes of ``state``'s hand."""
        return cls(tuple(state.scores), state.hand_number, win_points)


def leaf_table(
    rules: Rules,
    actor: int,
    objective: Objective,
    bids: tuple[Bid, ...],
    bags: tuple[int, ...],
    tricks_won: tuple[int, ...],
    tricks_left: int,
    stakes: MatchStakes | None = None,
) -> bytes:
    """The value, for ``actor``, of every way the ``tricks_left`` tricks can fall: int32 values
    indexed by ``sum(wins[seat] * (tricks_left + 1) ** seat)`` (other indexes hold 0)."""
    if stakes is not None and objective is not Objective.POINTS:
        raise ValueError("match stakes value points: the tricks objective has none")
    return _leaf_table(rules, actor, objective, bids, bags, tricks_won, tricks_left, stakes)


@lru_cache(maxsize=256)
def _leaf_table(
    rules: Rules,
    actor: int,
    objective: Objective,
    bids: tuple[Bid, ...],
    bags: tuple[int, ...],
    tricks_won: tuple[int, ...],
    tricks_left: int,
    stakes: MatchStakes | None,
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
        if stakes is None:
            table[index] = hand_value(rules, actor_side, objective, bid_of, bags, final)
        else:
            table[index] = match_value(rules, actor_side, bid_of, bags, final, stakes)
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


def match_value(
    rules: Rules,
    actor_side: int,
    bids: dict[int, Bid],
    bags: tuple[int, ...],
    tricks: dict[int, int],
    stakes: MatchStakes,
) -> int:
    """The value of a finished hand for the side ``actor_side`` under ``stakes`` (see the
    module's docstring), to the nearest point."""
    bag_cost = rules.bag_penalty / rules.bag_limit
    gains = []
    scores = []
    for index, side in enumerate(rules.sides):
        before = stakes.scores[index]
        result = score_side(rules, side, bids, tricks, before, bags[index])
        scores.append(result.total_score)
        gains.append(result.total_score - before - bag_cost * (result.total_bags - bags[index]))
    others = [gain for index, gain in enumerate(gains) if index != actor_side]
    value = gains[actor_side] - sum(others) / len(others)
    ended = match_end(rules, scores, stakes.hand_number)
    if ended is not None:
        value += stakes.win_points if ended[1] == actor_side else -stakes.win_points
    return round(value)
