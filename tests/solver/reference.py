"""The solver's reference: plain minimax on the engine itself, for small endings only.

Every move is the engine's (``legal.play_mask`` and ``MatchState.act`` on a clone), every
trick's winner is the engine's ``TrickWon``, and every finished hand is scored by the engine:
its own ``HandScored`` when the hand really ends, else ``score_side`` with the state's bids,
tricks and bags (the shortened hands of :mod:`tests.support.endings`). With match stakes (real
hands only) a hand's end is valued from the engine's own ``HandScored`` and ``MatchEnded``:
each side's score and bags after it, and the match's winners. No pruning, no card
equivalence: slow and obviously right. Values are memoised per (position, side of the actor).

:func:`check_tree` holds the solver to it at every position below a state.
"""

from __future__ import annotations

from collections.abc import Iterator

from spades.engine import PLAY, Card, MatchState, Phase, Rules, act, score_side
from spades.engine import events as ev
from spades.engine.cards import CARDS, iter_cards
from spades.engine.legal import play_mask
from spades.solver import MatchStakes, Objective, solve

#: (hands, trick, turn, tricks won, spades broken, first trick) of a node.
NodeKey = tuple[tuple[int, ...], tuple[tuple[int, int], ...], int, tuple[int, ...], bool, bool]


class Reference:
    """Exhaustive minimax from the positions of one ending (one rule set, one objective)."""

    def __init__(self, objective: Objective, stakes: MatchStakes | None = None) -> None:
        self.objective = objective
        self.stakes = stakes
        self._memo: dict[tuple[NodeKey, int], int] = {}
        self._carried: tuple[int, ...] = ()  # the bags carried into the hand

    def card_values(self, state: MatchState) -> dict[Card, int]:
        """The value of each legal card of the seat to play, for that seat's side."""
        seat = state.turn
        assert seat is not None
        actor_side = state.rules.seating.side_of(seat)
        tricks = tuple(state.tricks_won)
        self._carried = tuple(state.bags)
        values: dict[Card, int] = {}
        for number in iter_cards(play_mask(state, seat)):
            child, end = _play(state, seat, number)
            values[CARDS[number]] = self._value(child, end, actor_side, tricks)
        return values

    def _value(
        self,
        state: MatchState,
        end: list[ev.Event],
        actor_side: int,
        tricks: tuple[int, ...],
    ) -> int:
        rules = state.rules
        if end or not any(state.hands):
            return self._leaf(state, end, actor_side)
        key = (_key(state), actor_side)
        known = self._memo.get(key)
        if known is not None:
            return known
        seat = state.turn
        assert seat is not None
        maximizing = rules.seating.side_of(seat) == actor_side
        values = [
            self._value(*_play(state, seat, number), actor_side, tricks)
            for number in iter_cards(play_mask(state, seat))
        ]
        value = max(values) if maximizing else min(values)
        self._memo[key] = value
        return value

    def _leaf(self, state: MatchState, end: list[ev.Event], actor_side: int) -> int:
        rules = state.rules
        scored = next((event for event in end if isinstance(event, ev.HandScored)), None)
        if self.stakes is not None:
            assert scored is not None, "match stakes value real hands only"
            return self._match_leaf(rules, scored, end, actor_side)
        if scored is not None:
            tricks = [0] * rules.players
            for side in scored.sides:
                for result in side.seat_results:
                    tricks[result.seat] = result.tricks
            points = [side.hand_points for side in scored.sides]
        else:
            tricks = list(state.tricks_won)
            points = _scored_by_engine(state.rules, state)
        if self.objective is Objective.TRICKS:
            return sum(tricks[seat] for seat in rules.sides[actor_side])
        return sum(value if index == actor_side else -value for index, value in enumerate(points))

    def _match_leaf(
        self, rules: Rules, scored: ev.HandScored, end: list[ev.Event], actor_side: int
    ) -> int:
        """Each side's standing gained (score less bags at their share of the penalty), the
        actor's side's less the others' mean, and the match won or lost, as the engine ended
        it."""
        assert self.stakes is not None
        bag_cost = rules.bag_penalty / rules.bag_limit
        gains = [
            side.total_score
            - self.stakes.scores[index]
            - bag_cost * (side.total_bags - self._carried[index])
            for index, side in enumerate(scored.sides)
        ]
        others = [gain for index, gain in enumerate(gains) if index != actor_side]
        value = gains[actor_side] - sum(others) / len(others)
        ended = next((event for event in end if isinstance(event, ev.MatchEnded)), None)
        if ended is not None:
            mine = set(rules.sides[actor_side])
            won = bool(mine & set(ended.winners))
            value += self.stakes.win_points if won else -self.stakes.win_points
        return round(value)


def _scored_by_engine(rules: Rules, state: MatchState) -> list[int]:
    bids = {seat: bid for seat, bid in enumerate(state.bids) if bid is not None}
    tricks = dict(enumerate(state.tricks_won))
    return [
        score_side(rules, side, bids, tricks, 0, state.bags[index]).hand_points
        for index, side in enumerate(rules.sides)
    ]


def _play(state: MatchState, seat: int, number: int) -> tuple[MatchState, list[ev.Event]]:
    """The position after ``number`` is played, and the events of the hand's end if it ended
    (empty otherwise)."""
    child = state.clone()
    events = act(child, seat, PLAY[number])
    ended = any(isinstance(event, ev.HandScored) for event in events)
    return child, events if ended else []


def _key(state: MatchState) -> NodeKey:
    assert state.turn is not None
    return (
        tuple(state.hands),
        tuple((play.seat, int(play.card)) for play in state.trick),
        state.turn,
        tuple(state.tricks_won),
        state.spades_broken,
        not state.completed_tricks,
    )


def positions_of(state: MatchState) -> Iterator[MatchState]:
    """Every position of the tree below ``state`` (``state`` included) until the hand ends."""
    yield state
    seat = state.seat_to_act()
    for number in iter_cards(play_mask(state, seat)):
        child = state.clone()
        act(child, seat, PLAY[number])
        # (after a real hand's last trick the engine is bidding the next hand; after a short
        # hand's, the hands are empty)
        if child.phase is Phase.PLAYING and any(child.hands):
            yield from positions_of(child)


def check_tree(state: MatchState, objective: Objective, stakes: MatchStakes | None = None) -> int:
    """Asserts the solver's values equal the reference's at every position below ``state``
    (``state`` included), with ``stakes`` if given; returns how many positions it checked."""
    reference = Reference(objective, stakes)
    checked = 0
    for position in positions_of(state):
        assert solve(position, objective, stakes) == reference.card_values(position), (
            state.rules.badges(),
            objective,
            position.hands,
            position.trick,
        )
        checked += 1
    return checked
