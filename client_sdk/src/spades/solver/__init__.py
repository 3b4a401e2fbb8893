"""An exact double-dummy solver for Spades: the value of every legal card, every hand in view.

``solve(state, objective)`` takes an engine :class:`~spades.engine.MatchState` in play (or a
:class:`Position` read from one) and returns, for each card the player to act may play, the
value its side gets if everyone then plays perfectly with all the cards in view, under every
rule variation the engine plays. Two objectives (:class:`Objective`): the hand's points as the
engine scores them (the actor's side minus the other side) and the actor's side's tricks. With
three players (cutthroat) the two others are assumed to play together against the actor (the
paranoid assumption). The search is compiled C (``make solver``); see docs/solver.md.
"""

from spades.solver.position import Position, UnsolvablePosition
from spades.solver.search import solve
from spades.solver.values import Objective, hand_value, leaf_table

__all__ = ["Objective", "Position", "UnsolvablePosition", "hand_value", "leaf_table", "solve"]
