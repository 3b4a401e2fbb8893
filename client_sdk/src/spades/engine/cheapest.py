"""The cheapest cards to give away: one order, used by the clock, the SDK and the bots.

Lowest rank first, and every card of another suit before any trump; trumps go last, weakest
first **by their power as trumps**, not by their printed rank. The difference shows with
jokers: the 2♠ is then the third-highest trump (above the A♠, below both jokers), so it is
among the last cards to give away, never the first. Ties between suits go to the lower suit
(clubs, diamonds, hearts). This is the order of RULES.md section 3 ("the lowest-ranked legal
card, avoiding spades") and of a Blind Nil pass's "lowest cards".

>>> from spades.engine.cards import parse_cards
>>> from spades.engine.rules import Rules
>>> [str(card) for card in cheapest_cards(Rules(), parse_cards("2S AS 3H 2D"))]
['2D', '3H', '2S', 'AS']
>>> [str(card) for card in cheapest_cards(Rules(jokers=True), parse_cards("2S AS BJ 3H 2D"))]
['2D', '3H', 'AS', '2S', 'BJ']
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from spades.engine.cards import CARDS, Card


class _Cheapness(Protocol):
    @property
    def cheapness(self) -> tuple[int, ...]: ...


class CompiledRules(Protocol):
    """A rule set with its compiled game (:class:`~spades.engine.rules.Rules`, named by its
    shape: ``rules`` compiles its game with this module's :func:`cheapness`)."""

    @property
    def game(self) -> _Cheapness: ...


def cheapness(trump_power: Sequence[int]) -> tuple[int, ...]:
    """Each card number's place in the giving-away order (lower is cheaper), given each card's
    power as a trump (0 for a non-trump; see :class:`~spades.engine.game.Game`)."""
    keys = [
        (1, power, 0) if power else (0, number % 13, number // 13)
        for number, power in enumerate(trump_power)
    ]
    order = sorted(range(len(keys)), key=keys.__getitem__)
    places = [0] * len(keys)
    for place, number in enumerate(order):
        places[number] = place
    return tuple(places)


def cheapest_cards(rules: CompiledRules, cards: Iterable[int]) -> list[Card]:
    """``cards`` ordered cheapest first under ``rules`` (see the module's docstring); take the
    first ``n`` to give away ``n``."""
    places = rules.game.cheapness
    return [CARDS[number] for number in sorted(cards, key=places.__getitem__)]
