"""Valuing every legal card of a position with the compiled search (``_search.c``).

This module translates a :class:`~spades.solver.position.Position` into the search's terms
(cards as per-suit bit fields, the seat order, who maximises) and back into engine cards; the
values of the hand's possible ends come from :mod:`spades.solver.values`.
"""

from __future__ import annotations

from functools import lru_cache
from types import ModuleType

from spades.engine import CARDS, Card, MatchState, Rules
from spades.engine.cards import iter_cards
from spades.solver.position import Position
from spades.solver.values import Objective, leaf_table

_SPADE_FIELD = 3 * 16


def _compiled() -> ModuleType:
    try:
        import spades.solver._search as compiled_search
    except ImportError as error:  # pragma: no cover - depends on the build
        raise ImportError(
            "the solver's compiled search is not built: run `make solver` (it compiles "
            "client_sdk/src/spades/solver/_search.c with the machine's C compiler)"
        ) from error
    return compiled_search


@lru_cache(maxsize=16)
def _codes(rules: Rules) -> tuple[tuple[int, ...], dict[int, Card]]:
    """Each engine card's code in the search (suit * 16 + strength), and back."""
    code = [-1] * len(CARDS)
    for number in range(52):
        code[number] = (number // 13) * 16 + number % 13
    for strength, number in enumerate(rules.trump_order()):
        code[number] = _SPADE_FIELD + strength
    back = {value: CARDS[number] for number, value in enumerate(code) if value >= 0}
    return tuple(code), back


def _encode(mask: int, code: tuple[int, ...]) -> int:
    encoded = 0
    for number in iter_cards(mask):
        encoded |= 1 << code[number]
    return encoded


def solve(
    position: Position | MatchState, objective: Objective = Objective.TRICKS
) -> dict[Card, int]:
    """The value of every legal card of the player to act, under ``objective``, for that
    player's side (see :class:`~spades.solver.values.Objective`), both sides playing
    perfectly with every card in view; lowest card first.

    With three players the two others play together against the player to act (the paranoid
    assumption). A state the solver cannot take raises
    :class:`~spades.solver.position.UnsolvablePosition`.
    """
    if isinstance(position, MatchState):
        position = Position.of(position)
    rules = position.rules
    code, back = _codes(rules)
    seating = rules.seating
    actor = position.to_play
    actor_side = seating.side_of(actor)
    tricks_left = position.tricks_left
    leaf = leaf_table(
        rules,
        actor,
        objective,
        position.bids,
        position.bags,
        position.tricks_won,
        tricks_left,
    )
    roots = [code[number] for number in iter_cards(position.legal)]
    values = _compiled().solve(
        rules.players,
        tuple(seating.next(seat) for seat in seating.seats),
        tuple(int(seating.side_of(seat) == actor_side) for seat in seating.seats),
        tuple(_encode(hand, code) for hand in position.hands),
        tuple((play.seat, code[play.card]) for play in position.trick),
        position.leader,
        rules.spades_must_be_broken,
        position.spades_broken,
        tricks_left,
        leaf,
        objective is Objective.TRICKS,
        roots,
    )
    return {back[root]: value for root, value in zip(roots, values, strict=True)}
