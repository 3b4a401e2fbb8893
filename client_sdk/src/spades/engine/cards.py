"""Cards: compact integers inside the engine, friendly objects and strings at the edges.

A card is an int 0..53. Suited cards are ``suit * 13 + (rank - 2)`` with clubs 0, diamonds 1,
hearts 2, spades 3 and ranks 2..14 (ace high); the Little Joker is 52 and the Big Joker 53.
A set of cards is a bitmask with bit ``card`` set. :class:`Card` is an ``int`` subclass, so a
``Card`` works wherever the engine wants an int, and prints as ``"QS"`` (``card.symbol`` gives
``"Q♠"``).

>>> Card.parse("QS") == Card.parse("Q♠") == Card.parse("qs")
True
>>> str(Card.parse("10h")), Card.parse("BJ").symbol
('TH', 'BJ')
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from enum import IntEnum
from typing import Final


class Suit(IntEnum):
    """The four suits, in the order used by card numbers."""

    CLUBS = 0
    DIAMONDS = 1
    HEARTS = 2
    SPADES = 3

    @property
    def letter(self) -> str:
        return "CDHS"[self]

    @property
    def symbol(self) -> str:
        return "♣♦♥♠"[self]


RANK_LETTERS: Final = "23456789TJQKA"
LITTLE_JOKER_RANK: Final = 15
BIG_JOKER_RANK: Final = 16

LITTLE_JOKER: Final = 52
BIG_JOKER: Final = 53
CARD_COUNT: Final = 54

SUIT_MASKS: Final = tuple(0x1FFF << (13 * suit) for suit in range(4))
JOKER_MASK: Final = (1 << LITTLE_JOKER) | (1 << BIG_JOKER)
#: Every card that counts as a spade: the thirteen spades and both jokers.
TRUMP_MASK: Final = SUIT_MASKS[Suit.SPADES] | JOKER_MASK

_SUIT_BY_TEXT: Final = {
    "C": Suit.CLUBS,
    "D": Suit.DIAMONDS,
    "H": Suit.HEARTS,
    "S": Suit.SPADES,
    "♣": Suit.CLUBS,
    "♦": Suit.DIAMONDS,
    "♥": Suit.HEARTS,
    "♠": Suit.SPADES,
}


class Card(int):
    """One card. Use :meth:`parse` or :func:`card` to make one; compare and hash as an int."""

    __slots__ = ()

    @staticmethod
    def parse(text: str) -> Card:
        """Read ``"QS"``, ``"Q♠"``, ``"10H"``, ``"th"``, ``"BJ"`` or ``"LJ"``."""
        cleaned = text.strip().upper()
        if cleaned in ("BJ", "LJ"):
            return CARDS[BIG_JOKER if cleaned == "BJ" else LITTLE_JOKER]
        if len(cleaned) >= 2:
            rank_text, suit_text = cleaned[:-1], cleaned[-1]
            if rank_text == "10":
                rank_text = "T"
            suit = _SUIT_BY_TEXT.get(suit_text)
            if suit is not None and len(rank_text) == 1 and rank_text in RANK_LETTERS:
                return CARDS[suit * 13 + RANK_LETTERS.index(rank_text)]
        raise ValueError(f"{text!r} is not a card; write it like 'QS', 'Q♠', '10H' or 'BJ'")

    @property
    def is_joker(self) -> bool:
        return self >= LITTLE_JOKER

    @property
    def suit(self) -> Suit | None:
        """The printed suit; ``None`` for a joker (the rules treat jokers as spades)."""
        return None if self >= LITTLE_JOKER else Suit(self // 13)

    @property
    def rank(self) -> int:
        """2..14 for two to ace, 15 for the Little Joker, 16 for the Big Joker."""
        if self >= LITTLE_JOKER:
            return LITTLE_JOKER_RANK if self == LITTLE_JOKER else BIG_JOKER_RANK
        return self % 13 + 2

    @property
    def symbol(self) -> str:
        """``"Q♠"``, ``"10♥"``, ``"BJ"``."""
        if self >= LITTLE_JOKER:
            return str(self)
        rank = RANK_LETTERS[self % 13]
        return ("10" if rank == "T" else rank) + "♣♦♥♠"[self // 13]

    def __str__(self) -> str:
        if self >= LITTLE_JOKER:
            return "LJ" if self == LITTLE_JOKER else "BJ"
        return RANK_LETTERS[self % 13] + "CDHS"[self // 13]

    def __repr__(self) -> str:
        return f"Card.parse({str(self)!r})"


#: The 54 card objects, indexed by card number.
CARDS: Final = tuple(Card(number) for number in range(CARD_COUNT))


def card(text: str) -> Card:
    """Shorthand for :meth:`Card.parse`."""
    return Card.parse(text)


def cards_of(mask: int) -> list[Card]:
    """The cards in a bitmask, lowest number first."""
    found = []
    while mask:
        low = mask & -mask
        found.append(CARDS[low.bit_length() - 1])
        mask ^= low
    return found


def iter_cards(mask: int) -> Iterator[int]:
    """Card numbers in a bitmask, lowest first (plain ints, for hot loops)."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def mask_of(cards: Iterable[int]) -> int:
    """The bitmask of some cards."""
    mask = 0
    for number in cards:
        mask |= 1 << number
    return mask


def parse_cards(text: str) -> list[Card]:
    """Read cards separated by spaces or commas: ``"AS KS 2C"``."""
    return [Card.parse(part) for part in text.replace(",", " ").split()]


def format_cards(cards: Iterable[int], *, symbols: bool = False) -> str:
    """Cards as text, highest suit first and highest rank first within a suit."""
    ordered = sorted(cards, key=lambda number: (-(number // 13), -number))
    return " ".join(CARDS[n].symbol if symbols else str(CARDS[n]) for n in ordered)
