"""What a seated player can do, and bids as values.

Actions are small immutable values; the common ones are interned (``PLAY[card]``, ``BID[n]``),
so legal-action lists cost no allocation in the engine's hot loop.

>>> Bid.parse("nil"), Bid.parse("4"), str(Bid.BLIND_NIL)
(Bid(tricks=0, blind=False), Bid(tricks=4, blind=False), 'blind nil')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Final

from spades.engine.cards import CARD_COUNT, CARDS, Card


@dataclass(frozen=True, slots=True)
class Bid:
    """A bid: ``tricks`` 1..18, or Nil (``tricks == 0``), or Blind Nil (``blind``)."""

    tricks: int
    blind: bool = False

    NIL: ClassVar[Bid]
    BLIND_NIL: ClassVar[Bid]

    @property
    def is_nil(self) -> bool:
        """True for Nil and Blind Nil."""
        return self.tricks == 0

    @staticmethod
    def parse(text: str) -> Bid:
        """Read ``"4"``, ``"nil"`` or ``"blind nil"``."""
        cleaned = " ".join(text.strip().lower().replace("_", " ").split())
        if cleaned in ("nil", "0"):
            return Bid.NIL
        if cleaned in ("blind nil", "blind"):
            return Bid.BLIND_NIL
        if cleaned.isdigit():
            return Bid(int(cleaned))
        raise ValueError(f"{text!r} is not a bid; write a number, 'nil' or 'blind nil'")

    def __str__(self) -> str:
        if self.tricks:
            return str(self.tricks)
        return "blind nil" if self.blind else "nil"


Bid.NIL = Bid(0)
Bid.BLIND_NIL = Bid(0, blind=True)


@dataclass(frozen=True, slots=True)
class ChooseBlindNil:
    """An eligible player's first decision of a hand: bid Blind Nil (True) or look (False)."""

    blind: bool

    def __str__(self) -> str:
        return "blind nil" if self.blind else "look"


@dataclass(frozen=True, slots=True)
class MakeBid:
    """Bid ``tricks`` tricks; 0 is Nil."""

    tricks: int

    def __str__(self) -> str:
        return f"bid {Bid(self.tricks)}"


@dataclass(frozen=True, slots=True)
class PassCards:
    """Hand cards to the partner in the Blind Nil card pass."""

    cards: tuple[Card, ...]

    def __str__(self) -> str:
        return "pass " + " ".join(str(card) for card in self.cards)


@dataclass(frozen=True, slots=True)
class PlayCard:
    """Play a card to the trick."""

    card: Card

    def __str__(self) -> str:
        return f"play {self.card}"


@dataclass(frozen=True, slots=True)
class Concede:
    """Give up the match; the other side wins."""

    def __str__(self) -> str:
        return "concede"


@dataclass(frozen=True, slots=True)
class ClaimExtension:
    """Take the turn's one extension of the clock (the server times turns; the engine only
    checks that the claim is the seat's, once per turn)."""

    def __str__(self) -> str:
        return "claim the extension"


Action = ChooseBlindNil | MakeBid | PassCards | PlayCard | Concede | ClaimExtension

#: Interned actions, so hot loops never allocate them.
PLAY: Final = tuple(PlayCard(CARDS[number]) for number in range(CARD_COUNT))
BID: Final = tuple(MakeBid(tricks) for tricks in range(19))
BLIND: Final = ChooseBlindNil(True)
LOOK: Final = ChooseBlindNil(False)
CONCEDE: Final = Concede()
CLAIM_EXTENSION: Final = ClaimExtension()


def pass_cards(*cards: int | str) -> PassCards:
    """A card pass from card numbers or strings, in a canonical order."""
    parsed = sorted(Card.parse(c) if isinstance(c, str) else CARDS[c] for c in cards)
    return PassCards(tuple(parsed))
