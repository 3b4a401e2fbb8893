"""The solver's reference: plain minimax on the engine itself, for small endings only.

Every move is the engine's (``legal.play_mask`` and ``MatchState.act`` on a clone), every
trick's winner is the engine's ``TrickWon``, and every finished hand is scored by the engine:
its own ``HandScored`` when the hand really ends, else ``score_side`` with the state's bids,
tricks and bags (the shortened hands of :mod:`tests.support.endings`). No pruning, no card
equivalence: slow and obviously right. Values are memoised per (position, side of the actor).

:func:`check_tree` holds the solver to it at every position below a state.
"""

from __future__ import annotations

from collections.abc import Iterator

from spades.engine import PLAY, Card, MatchState, Phase, Rules, act, score_side
from spades.engine import events as ev
from spades.engine.cards import CARDS, iter_cards
from spades.engine.legal import play_mask
from spades.solver import Objective, solve

#: (hands, trick, turn, tricks won, spades broken, first trick) of a node.
NodeKey = tuple[tuple[int, ...], tuple[tuple[int, int], ...], int, tuple[int, ...], bool, bool]


class Reference:
    """Exhaustive minimax from the positions of one ending (one rule set, one objective)."""

    def __init__(self, objective: Objective) -> None:
        self.objective = objective
        self._memo: dict[tuple[NodeKey, int], int] = {}

    def card_values(self, state: MatchState) -> dict[Card, int]:
        """The value of each legal card of the seat to play, for that seat's side."""
        seat = state.turn
        assert seat is not None
        actor_side = state.rules.seating.side_of(seat)
        tricks = tuple(state.tricks_won)
        values: dict[Card, int] = {}
        for number in iter_cards(play_mask(state, seat)):
            child, scored = _play(state, seat, number)
            values[CARDS[number]] = self._value(child, scored, actor_side, tricks)
        return values

    def _value(
        self,
        state: MatchState,
        scored: ev.HandScored | None,
        actor_side: int,
        tricks: tuple[int, ...],
    ) -> int:
        rules = state.rules
        if scored is not None or not any(state.hands):
            return self._leaf(state, scored, actor_side)
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

    def _leaf(self, state: MatchState, scored: ev.HandScored | None, actor_side: int) -> int:
        rules = state.rules
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


def _scored_by_engine(rules: Rules, state: MatchState) -> list[int]:
    bids = {seat: bid for seat, bid in enumerate(state.bids) if bid is not None}
    tricks = dict(enumerate(state.tricks_won))
    return [
        score_side(rules, side, bids, tricks, 0, state.bags[index]).hand_points
        for index, side in enumerate(rules.sides)
    ]


def _play(state: MatchState, seat: int, number: int) -> tuple[MatchState, ev.HandScored | None]:
    child = state.clone()
    events = act(child, seat, PLAY[number])
    scored = next((event for event in events if isinstance(event, ev.HandScored)), None)
    return child, scored


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


def check_tree(state: MatchState, objective: Objective) -> int:
    """Asserts the solver's values equal the reference's at every position below ``state``
    (``state`` included); returns how many positions it checked."""
    reference = Reference(objective)
    checked = 0
    for position in positions_of(state):
        assert solve(position, objective) == reference.card_values(position), (
            state.rules.badges(),
            objective,
            position.hands,
            position.trick,
        )
        checked += 1
    return checked
