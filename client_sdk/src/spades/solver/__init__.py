"""An exact double-dummy solver for Spades: the value of every legal card, every hand in view.

``solve(state, objective)`` takes an engine :class:`~spades.engine.MatchState` in play (or a
:class:`Position` read from one) and returns, for each card the player to act may play, the
value its side gets if everyone then plays perfectly with all the cards in view, under every
rule variation the engine plays. Two objectives (:class:`Objective`): the hand's points as the
engine scores them (the actor's side minus the other side; with :class:`MatchStakes`, as a step
of the match, winning or losing it counted) and the actor's side's tricks. With
three players (cutthroat) the two others are assumed to play together against the actor (the
paranoid assumption). The search is compiled C (``make solver``); see docs/solver.md.

A hand bid 3 all round, played by the clock's cheapest cards until three tricks are left:

>>> from spades.engine import BID, Rules, act, automatic_choice, legal_actions, seated_match
>>> state, _ = seated_match(Rules(), seed=bytes(32))
>>> for _ in range(4):
...     _ = act(state, state.seat_to_act(), BID[3])
>>> while len(state.completed_tricks) < 10:
...     seat = state.seat_to_act()
...     _ = act(state, seat, automatic_choice(state.rules, legal_actions(state, seat)))
>>> state.seat_to_act(), state.tricks_won  # East to play; East-West have 6 tricks
(1, [2, 3, 2, 3])
>>> solve(state, Objective.TRICKS)  # East-West's tricks in the whole hand
{Card.parse('9S'): 8, Card.parse('KS'): 9, Card.parse('AS'): 9}
>>> solve(state, Objective.POINTS)  # East-West's hand points minus North-South's
{Card.parse('9S'): 122, Card.parse('KS'): 123, Card.parse('AS'): 123}
"""

from spades.solver.position import Position, UnsolvablePosition
from spades.solver.search import solve
from spades.solver.values import MatchStakes, Objective, hand_value, leaf_table, match_value

__all__ = [
    "MatchStakes",
    "Objective",
    "Position",
    "UnsolvablePosition",
    "hand_value",
    "leaf_table",
    "match_value",
    "solve",
]
