"""Tricks: who played which card, in play order, and the suit a card follows.

A trick is a sequence of :class:`Play` (a seat and its card); a finished one is a
:class:`CompletedTrick` with its winner. Storing the seat with each card means nobody rebuilds
"who played this" by counting seats round the table.

>>> from spades.engine.cards import card
>>> trick = CompletedTrick((Play(0, card("QH")), Play(1, card("AH"))), winner=1)
>>> trick.leader, [str(c) for c in trick.cards]
(0, ['QH', 'AH'])
"""

from __future__ import annotations

from typing import Final, NamedTuple

from spades.engine.cards import CARDS, Card
from spades.engine.seating import Seat


def effective_suit(card: int) -> int:
    """The suit a card counts as: its own, or spades for a joker."""
    return _SPADES if card >= _LITTLE_JOKER else card // 13


# Suit.SPADES and cards.LITTLE_JOKER as constants of this module: the compiled build reads
# them without a lookup in another module (tests/engine/test_tricks.py checks they agree).
_SPADES: Final = 3
_LITTLE_JOKER: Final = 52


class Play(NamedTuple):
    """One card of a trick and the seat that played it."""

    seat: Seat
    card: Card


#: Every possible play, interned: plays are immutable and on the engine's hot path.
PLAYS: Final = tuple(tuple(Play(seat, CARDS[number]) for number in range(54)) for seat in range(4))


class CompletedTrick(NamedTuple):
    """A finished trick: its plays in order (the first one led) and who won it (a named tuple,
    like :class:`Play`: thirteen are made a hand on the engine's hot path)."""

    plays: tuple[Play, ...]
    winner: Seat

    @property
    def leader(self) -> Seat:
        return self.plays[0].seat

    @property
    def cards(self) -> tuple[Card, ...]:
        """The cards in play order."""
        return tuple(play.card for play in self.plays)
