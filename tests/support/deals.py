"""Positions dealt by hand, for tests of what a bot plays in one situation."""

from __future__ import annotations

from spades.engine import BID, PLAY, Card, MatchState, Rules, apply, parse_cards, seated_match
from spades.engine.shuffle import first_dealer


def dealt_by_west(hands: dict[int, str], bids: list[int], *plays: str) -> MatchState:
    """West deals ``hands`` (the rest of the deck in order to fill them), North bids first and
    leads; the bids and cards are played in turn."""
    given = {seat: list(parse_cards(text)) for seat, text in hands.items()}
    rest = [n for n in range(52) if all(n not in cards for cards in given.values())]
    deal: list[list[int]] = []
    for seat in range(4):
        cards: list[int] = list(given.get(seat, []))
        while len(cards) < 13:
            cards.append(rest.pop(0))
        deal.append(cards)
    seed = next(bytes([b]) * 32 for b in range(256) if first_dealer(bytes([b]) * 32, 4) == 3)
    state, _ = seated_match(Rules(), seed, preset_deals=[deal])
    for bid in bids:
        state, _ = apply(state, state.seat_to_act(), BID[bid])
    for text in plays:
        state, _ = apply(state, state.seat_to_act(), PLAY[Card.parse(text)])
    return state


def nil_to_set() -> MatchState:
    """North bid Nil, East-West 12. West took the first trick and led the 5♥; North played the
    10♥, and East, to play, holds the 9♥ and every heart above the 10: the 9 sets North's Nil
    and East-West still take every other trick (they hold every spade)."""
    return dealt_by_west(
        {
            0: "2C TH 2D 3D 4D 5D 6D 7D 8D 2H 3H 4H 6H",
            1: "3C 9H JH QH KH AH AS KS QS JS TS 9S 8S",
            2: "4C 5C 6C 7C 8C 9C TC JC QC KC 9D TD JD",
            3: "AC 5H 7H 8H QD KD AD 2S 3S 4S 5S 6S 7S",
        },
        [0, 6, 1, 6],
        "2C",
        "3C",
        "4C",
        "AC",
        "5H",
        "TH",
    )
