"""Cards at the edges: parsing every spelling, printing, numbering and bitmask helpers."""

from __future__ import annotations

import pytest

from spades.engine import CARDS, Card, Suit, card, cards_of, format_cards, parse_cards
from spades.engine.cards import LITTLE_JOKER, iter_cards, mask_of


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("QS", 3 * 13 + 10),
        ("Q♠", 3 * 13 + 10),
        ("qs", 3 * 13 + 10),
        (" q♠ ", 3 * 13 + 10),
        ("10H", 2 * 13 + 8),
        ("TH", 2 * 13 + 8),
        ("10♥", 2 * 13 + 8),
        ("th", 2 * 13 + 8),
        ("2C", 0),
        ("2♣", 0),
        ("AC", 12),
        ("3D", 13 + 1),
        ("K♦", 13 + 11),
        ("AS", 51),
        ("2S", 39),
        ("LJ", 52),
        ("lj", 52),
        ("BJ", 53),
        ("bj", 53),
    ],
)
def test_parse(text: str, number: int) -> None:
    assert Card.parse(text) == number
    assert card(text) == number
    assert Card.parse(text) is CARDS[number]


@pytest.mark.parametrize("text", ["", "Q", "S", "1H", "11S", "10", "QX", "JJ", "QSS", "AS KS"])
def test_parse_refuses_what_is_not_a_card(text: str) -> None:
    with pytest.raises(ValueError, match="is not a card"):
        Card.parse(text)


def test_every_card_round_trips_through_its_text_and_symbol() -> None:
    for number in range(54):
        this = CARDS[number]
        assert Card.parse(str(this)) == number
        assert Card.parse(this.symbol) == number


def test_numbering_suit_and_rank() -> None:
    queen = card("QS")
    assert queen == Suit.SPADES * 13 + 12 - 2
    assert (queen.suit, queen.rank, queen.is_joker) == (Suit.SPADES, 12, False)
    assert (card("2C").suit, card("2C").rank) == (Suit.CLUBS, 2)
    assert (card("AD").suit, card("AD").rank) == (Suit.DIAMONDS, 14)
    assert (card("LJ").suit, card("LJ").rank, card("LJ").is_joker) == (None, 15, True)
    assert (card("BJ").suit, card("BJ").rank, card("BJ").is_joker) == (None, 16, True)
    assert [suit.letter for suit in Suit] == ["C", "D", "H", "S"]
    assert [suit.symbol for suit in Suit] == ["♣", "♦", "♥", "♠"]


def test_text_and_symbols() -> None:
    assert (str(card("10H")), card("10H").symbol) == ("TH", "10♥")
    assert (str(card("Q♠")), card("QS").symbol) == ("QS", "Q♠")
    assert (str(card("BJ")), card("BJ").symbol, str(card("LJ"))) == ("BJ", "BJ", "LJ")
    assert repr(card("QS")) == "Card.parse('QS')"


def test_lists_and_masks() -> None:
    cards = parse_cards("AS, KS 2C  BJ")
    assert cards == [card("AS"), card("KS"), card("2C"), card("BJ")]
    mask = mask_of(cards)
    assert mask.bit_count() == 4
    assert cards_of(mask) == sorted(cards)
    assert list(iter_cards(mask)) == sorted(int(c) for c in cards)
    assert format_cards(cards) == "BJ AS KS 2C"
    assert format_cards(cards, symbols=True) == "BJ A♠ K♠ 2♣"
    assert cards_of(0) == []
    assert LITTLE_JOKER == 52
