"""Bo Haglund's DDS (through the ``endplay`` package) on engine positions, for the solver's
comparison test and benchmark.

DDS plays bridge: four hands, clockwise, a trump suit, any suit led at any time. Spades
coincide with it when spades may be led any time, without jokers, with partners and clockwise
play, spades as trumps and the tricks objective: then the solver's trick counts must equal
DDS's. DDS counts the tricks of the side to play from the trick in progress on; the solver's
tricks objective adds the tricks that side took before.
"""

from __future__ import annotations

from endplay.dds import solve_board
from endplay.types import Card as DdsCard
from endplay.types import Deal, Denom, Player

from spades.engine import CARDS, Card, Direction
from spades.engine.cards import iter_cards
from spades.solver import Position

_RANKS = "23456789TJQKA"
_SUITS = "CDHS"


def coincides(position: Position) -> bool:
    """Whether DDS plays ``position`` by the same rules."""
    rules = position.rules
    return (
        rules.players == 4
        and not rules.jokers
        and not rules.spades_must_be_broken
        and rules.direction is Direction.CLOCKWISE
    )


def deal_of(position: Position) -> Deal:
    """The DDS deal of ``position``: spades trumps, the trick in progress played."""
    hands = list(position.hands)
    for play in position.trick:
        hands[play.seat] |= 1 << play.card
    pbn = "N:" + " ".join(_pbn_hand(hand) for hand in hands)
    deal = Deal.from_pbn(pbn)
    deal.trump = Denom.spades
    deal.first = Player(position.leader)
    for play in position.trick:
        deal.play(_dds_card(play.card))
    return deal


def dds_tricks(position: Position) -> dict[Card, int]:
    """DDS's tricks for the side to play, from the trick in progress on, per legal card (DDS
    lists every card of the hand to play that may be played)."""
    assert coincides(position)
    solved = solve_board(deal_of(position))
    return {_engine_card(card): tricks for card, tricks in solved}


def _pbn_hand(mask: int) -> str:
    suits = [[] for _ in range(4)]  # type: list[list[str]]
    for number in sorted(iter_cards(mask), reverse=True):
        suits[number // 13].append(_RANKS[number % 13])
    return ".".join("".join(suits[suit]) for suit in (3, 2, 1, 0))


def _dds_card(number: int) -> DdsCard:
    return DdsCard(_SUITS[number // 13] + _RANKS[number % 13])


def _engine_card(card: DdsCard) -> Card:
    text = str(card.rank.abbr) + "SHDC"[int(card.suit)]
    return CARDS[_SUITS.index(text[-1]) * 13 + _RANKS.index(text[:-1])]
