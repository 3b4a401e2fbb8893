"""Valuing every legal card of a position with the compiled search (``_search.c``).

This module translates a :class:`~spades.solver.position.Position` into the search's terms
(cards as per-suit bit fields, the seat order, who maximises) and back into engine cards; the
values of the hand's possible ends come from :mod:`spades.solver.values`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from functools import lru_cache
from types import ModuleType

from spades.engine import CARDS, Bid, Card, MatchState, Rules
from spades.engine.cards import iter_cards
from spades.solver.position import Position
from spades.solver.values import MatchStakes, Objective, leaf_table

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
    position: Position | MatchState,
    objective: Objective = Objective.TRICKS,
    stakes: MatchStakes | None = None,
) -> dict[Card, int]:
    """The value of every legal card of the player to act, under ``objective``, for that
    player's side (see :class:`~spades.solver.values.Objective`), both sides playing
    perfectly with every card in view; lowest card first. With ``stakes`` (points only) the
    hand is valued as a step of the match (:class:`~spades.solver.values.MatchStakes`).

    With three players the two others play together against the player to act (the paranoid
    assumption). A state the solver cannot take raises
    :class:`~spades.solver.position.UnsolvablePosition`.
    """
    if isinstance(position, MatchState):
        position = Position.of(position)
    rules = position.rules
    code, back = _codes(rules)
    actor = position.to_play
    tricks = sum(position.tricks_won) + position.tricks_left
    # Partners: every position of the hand is searched from North-South's side (the game is
    # zero-sum between the sides), so that one context serves both sides' turns. Cutthroat:
    # the paranoid coalition is against the actor, so each actor has its own.
    reference = 0 if rules.players == 4 else actor
    context = _context(rules, reference, objective, position.bids, position.bags, tricks, stakes)
    base = tricks + 1
    wins_index = sum(won * base**seat for seat, won in enumerate(position.tricks_won))
    roots = [code[number] for number in iter_cards(position.legal)]
    values = _compiled().solve(
        context,
        tuple(_encode(hand, code) for hand in position.hands),
        tuple((play.seat, code[play.card]) for play in position.trick),
        position.leader,
        position.spades_broken,
        wins_index,
        roots,
    )
    if rules.seating.side_of(actor) != rules.seating.side_of(reference):
        # The other side: the opposite difference of points, the rest of the tricks.
        if objective is Objective.POINTS:
            values = [-value for value in values]
        else:
            values = [tricks - value for value in values]
    return {back[root]: value for root, value in zip(roots, values, strict=True)}


#: Each thread's recent search contexts, newest last: their transposition tables serve the
#: next positions of the same hand (the positions of one hand share most of their subtrees).
_recent = threading.local()
_RECENT_CONTEXTS = 2
#: The entries a new context's table may hold: 0 for the compiled search's most (about two
#: million, 80 MB). A small table is packed and emptied often, which must change no value
#: (tests/solver/test_contexts.py).
TABLE_ENTRIES = 0


def check_kept_tables() -> int:
    """Checks the layout of the tables of this thread's kept search contexts (every run of
    entries inside its pool, none overlapping another, every shape found where a lookup probes
    for it; ``AssertionError`` names a broken rule) and returns the entries they hold. For
    tests."""
    contexts: dict[tuple[object, ...], object] = getattr(_recent, "contexts", {})
    return sum(_compiled().check_table(context) for context in contexts.values())


def kept_table_counts() -> dict[str, int]:
    """How often the tables of this thread's kept search contexts were packed (``packs``), had
    the shapes of fewest tricks left dropped to make room (``drops``), or were emptied
    (``clears``), summed. For tests."""
    contexts: dict[tuple[object, ...], object] = getattr(_recent, "contexts", {})
    counts = {"packs": 0, "drops": 0, "clears": 0}
    for context in contexts.values():
        for name, count in _compiled().table_counts(context).items():
            counts[name] += count
    return counts


def _context(
    rules: Rules,
    reference: int,
    objective: Objective,
    bids: tuple[Bid, ...],
    bags: tuple[int, ...],
    tricks: int,
    stakes: MatchStakes | None = None,
) -> object:
    """The search context of a hand of ``tricks`` tricks with these bids and bags (and stakes),
    valued for ``reference``'s side: made once, then kept while it is among the thread's recent
    ones."""
    key = (rules, reference, objective, bids, bags, tricks, stakes, TABLE_ENTRIES)
    contexts: OrderedDict[tuple[object, ...], object] | None = getattr(_recent, "contexts", None)
    if contexts is None:
        contexts = _recent.contexts = OrderedDict()
    context = contexts.get(key)
    if context is not None:
        contexts.move_to_end(key)
        return context
    seating = rules.seating
    side = seating.side_of(reference)
    leaf = leaf_table(rules, reference, objective, bids, bags, (0,) * rules.players, tricks, stakes)
    context = _compiled().context(
        rules.players,
        tuple(seating.next(seat) for seat in seating.seats),
        tuple(int(seating.side_of(seat) == side) for seat in seating.seats),
        rules.spades_must_be_broken,
        tricks,
        leaf,
        objective is Objective.TRICKS,
        TABLE_ENTRIES,
    )
    contexts[key] = context
    while len(contexts) > _RECENT_CONTEXTS:
        contexts.popitem(last=False)
    return context
