"""The cards of each hand: from the table's seed through the shuffle, or from preset deals.

An operator may give a table its first hands' cards (duplicate tournaments, tests); each
preset deal is checked here to deal the rule set's deck out exactly as the shuffle would.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from spades.engine.cards import CARDS, Card, mask_of
from spades.engine.errors import InvalidRules
from spades.engine.game import Game
from spades.engine.rules import Rules
from spades.engine.seating import SEAT_NAMES
from spades.engine.shuffle import deal
from spades.reasons import Reason

PresetDeals = tuple[tuple[tuple[Card, ...], ...], ...]


def check_preset_deals(
    rules: Rules, preset_deals: Sequence[Sequence[Iterable[int]]]
) -> PresetDeals:
    """The deals as sorted cards per seat; :class:`InvalidRules` names the first one that
    does not deal the deck's cards out (one hand per seat, the hand size, no card twice)."""
    return tuple(
        _check_preset_deal(rules, number, hands) for number, hands in enumerate(preset_deals, 1)
    )


def _check_preset_deal(
    rules: Rules, number: int, hands: Sequence[Iterable[int]]
) -> tuple[tuple[Card, ...], ...]:
    cards = tuple(tuple(sorted(CARDS[n] for n in hand)) for hand in hands)
    where = f"preset deal {number}"
    if len(cards) != rules.players:
        raise InvalidRules(
            where, f"deal one hand to each of the {rules.players} seats", Reason.INVALID_DEALS
        )
    seen = 0
    for seat, hand in enumerate(cards):
        mask = mask_of(hand)
        if len(hand) != rules.hand_size or mask.bit_count() != rules.hand_size:
            raise InvalidRules(
                where,
                f"{SEAT_NAMES[seat]} must get {rules.hand_size} different cards",
                Reason.INVALID_DEALS,
            )
        if mask & ~rules.deck_mask:
            raise InvalidRules(
                where,
                f"{SEAT_NAMES[seat]} holds a card this deck does not have",
                Reason.INVALID_DEALS,
            )
        if mask & seen:
            raise InvalidRules(where, "a card is dealt twice", Reason.INVALID_DEALS)
        seen |= mask
    return cards


def hands_of_deal(
    game: Game, seed: bytes, number: int, preset_deals: PresetDeals
) -> Sequence[Sequence[int]]:
    """Each seat's cards in hand ``number`` (from 1): the preset deal if there is one, else
    the shuffle of the table's seed."""
    if number <= len(preset_deals):
        return preset_deals[number - 1]
    return deal(seed, number, game.deck, game.players, game.hand_size)
