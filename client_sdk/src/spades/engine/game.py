"""The game: the facts a rule set implies, compiled once (deck, seating, trump power).

A :class:`Game` is what the engine's hot paths read instead of re-deriving from
:class:`~spades.engine.rules.Rules`: the deck as a list, each card's power as a trump, the
giving-away order and the seating. Each ``Rules`` compiles its game once, on first use
(``rules.game``); a match state reaches it as ``state.game``.

>>> from spades.engine.rules import Rules
>>> game = Rules(jokers=True).game
>>> game.hand_size, len(game.deck), game.seating.next(3)
(13, 52, 0)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from spades.engine.cards import iter_cards
from spades.engine.cheapest import cheapness
from spades.engine.seating import Seating
from spades.engine.tricks import Play, effective_suit


class RuleFacts(Protocol):
    """What a game is compiled from: a :class:`~spades.engine.rules.Rules` (named by its shape,
    so that this module, which ``rules`` imports to compile its game, need not import it)."""

    @property
    def players(self) -> int: ...
    @property
    def hand_size(self) -> int: ...
    @property
    def deck_mask(self) -> int: ...
    @property
    def two_of_clubs_leads(self) -> bool: ...
    @property
    def spades_must_be_broken(self) -> bool: ...
    @property
    def game(self) -> Game: ...
    def trump_order(self) -> list[int]: ...


class Game:
    """Immutable facts of one rule set, for the hot paths (build one with ``rules.game``)."""

    __slots__ = (
        "cheapness",
        "deck",
        "deck_mask",
        "hand_size",
        "next_seat",
        "players",
        "rules",
        "seating",
        "sides",
        "spades_must_be_broken",
        "trump_power",
        "two_of_clubs_leads",
    )

    def __init__(self, rules: RuleFacts, seating: Seating) -> None:
        self.rules = rules
        self.seating = seating
        self.players = rules.players
        self.hand_size = rules.hand_size
        self.deck_mask = rules.deck_mask
        self.deck = list(iter_cards(self.deck_mask))
        self.sides = seating.sides
        #: The lead rules, read on every lead (here, not on the rules: a native attribute).
        self.two_of_clubs_leads: bool = rules.two_of_clubs_leads
        self.spades_must_be_broken: bool = rules.spades_must_be_broken
        #: ``seating.next`` as a table: the fold of every card played reads it.
        self.next_seat: tuple[int, ...] = tuple(map(seating.next, seating.seats))
        power = [0] * 54
        for order, number in enumerate(rules.trump_order()):
            power[number] = 100 + order
        #: Per card number: its strength as a trump (higher wins), 0 for a non-trump.
        self.trump_power: tuple[int, ...] = tuple(power)
        #: Per card number: its place in the order of cheapest cards to give away.
        self.cheapness = cheapness(self.trump_power)

    def __reduce__(self) -> tuple[Callable[[RuleFacts], Game], tuple[RuleFacts]]:
        # A game pickles as its rules and unpickles as their compiled game (spelled out: the
        # mypyc build's native class has no default pickling).
        return game_of, (self.rules,)

    def card_power(self, card: int, led: int) -> int:
        """A card's strength in a trick whose led suit is ``led`` (see
        :func:`~spades.engine.tricks.effective_suit`): the highest power wins; 0 cannot win."""
        # A trump beats every other suit; otherwise only the led suit can win, by rank.
        return self.trump_power[card] or (card % 13 + 1 if card // 13 == led else 0)

    def trick_winner(self, plays: Sequence[Play]) -> Play:
        """The play that wins a full trick."""
        led = effective_suit(plays[0].card)
        trump_power = self.trump_power
        best = plays[0]
        best_power = -1
        for play in plays:
            number: int = play.card  # (a plain int: native arithmetic in the compiled build)
            # (card_power, inlined: this runs for every card of every trick)
            power = trump_power[number] or (number % 13 + 1 if number // 13 == led else 0)
            if power > best_power:
                best_power = power
                best = play
        return best


def game_of(rules: RuleFacts) -> Game:
    """The game of ``rules``, compiled once (``rules.game``)."""
    return rules.game


def trump_power(rules: RuleFacts, card: int) -> int:
    """A card's strength as a trump under ``rules`` (higher wins), or 0 for a non-trump."""
    return rules.game.trump_power[card]


def card_power(rules: RuleFacts, card: int, led: int) -> int:
    """A card's strength in a trick whose led suit is ``led`` (see
    :func:`~spades.engine.tricks.effective_suit`): the card with the highest power wins the
    trick; 0 means it cannot win it."""
    return rules.game.card_power(card, led)
