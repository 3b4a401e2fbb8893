"""The rule set of a match: every variation of RULES.md section 2, validated, with derived tables.

``Rules()`` is the default game (the quick-match rules). Variations are keyword arguments;
an impossible combination raises :class:`~spades.engine.errors.InvalidRules` naming the field.

>>> Rules(target_score=300, jokers=True).badges()
['to 300', 'big joker, little joker']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property

from spades.engine.cards import BIG_JOKER, JOKER_MASK, LITTLE_JOKER, SUIT_MASKS, Suit
from spades.engine.errors import InvalidRules
from spades.engine.game import Game
from spades.engine.seating import Seating
from spades.engine.variations import VARIATIONS

TWO_OF_CLUBS = 0
TWO_OF_HEARTS = Suit.HEARTS * 13
TWO_OF_SPADES = Suit.SPADES * 13
#: The most cards any rule set deals one player (cutthroat with jokers), so the highest bid.
MAX_HAND_SIZE = 18
#: The cards of a Blind Nil card pass, when the rule set has one.
PASS_SIZE = 2


#: The cached_property names of :class:`Rules` (compiled facts, not fields).
_COMPILED = ("seating", "game")


class Direction(Enum):
    """Which way bidding, play and the deal go round the table."""

    CLOCKWISE = "clockwise"
    COUNTER_CLOCKWISE = "counter-clockwise"


@dataclass(frozen=True, slots=True)
class Clock:
    """A turn's time limit and its one extension, in milliseconds (enforced by the server)."""

    turn_millis: int = 30_000
    extension_millis: int = 30_000


@dataclass(frozen=True)
class Rules:
    """Every variation a table may play; the defaults are the standard partnership game."""

    players: int = 4
    target_score: int = 500
    nil_allowed: bool = True
    nil_tricks_count_for_partner: bool = False
    blind_nil: bool = False
    blind_nil_deficit: int = 100
    blind_nil_pass_cards: int = 0
    two_of_clubs_leads: bool = False
    jokers: bool = False
    minimum_team_bid: int = 0
    bag_limit: int = 10
    bag_penalty: int = 100
    spades_must_be_broken: bool = True
    loss_threshold: int | None = None
    max_hands: int | None = None
    direction: Direction = Direction.CLOCKWISE
    clock: Clock = field(default_factory=Clock)

    def __post_init__(self) -> None:
        self._validate()

    def _validate(self) -> None:
        if self.players not in (3, 4):
            raise InvalidRules("players", "a table has 4 players (partners) or 3 (cutthroat)")
        if not 100 <= self.target_score <= 1000:
            raise InvalidRules("target_score", "the target score must be between 100 and 1000")
        if self.blind_nil and not self.nil_allowed:
            raise InvalidRules("blind_nil", "Blind Nil needs Nil to be allowed")
        if self.blind_nil_deficit < 0:
            raise InvalidRules("blind_nil_deficit", "the Blind Nil deficit cannot be negative")
        if self.blind_nil_pass_cards not in (0, PASS_SIZE):
            raise InvalidRules(
                "blind_nil_pass_cards", f"the Blind Nil card pass is 0 or {PASS_SIZE} cards"
            )
        if self.blind_nil_pass_cards and not self.blind_nil:
            raise InvalidRules("blind_nil_pass_cards", "the card pass needs Blind Nil to be on")
        if self.blind_nil_pass_cards and self.players != 4:
            raise InvalidRules("blind_nil_pass_cards", "the card pass needs partners (4 players)")
        if self.nil_tricks_count_for_partner and not self.nil_allowed:
            raise InvalidRules("nil_tricks_count_for_partner", "this needs Nil to be allowed")
        if self.nil_tricks_count_for_partner and self.players != 4:
            raise InvalidRules("nil_tricks_count_for_partner", "this needs partners (4 players)")
        if self.jokers and self.two_of_clubs_leads:
            raise InvalidRules(
                "two_of_clubs_leads", "the two of clubs leaves the deck when jokers are played"
            )
        if not 0 <= self.minimum_team_bid <= 13:
            raise InvalidRules("minimum_team_bid", "the minimum team bid must be 0..13")
        if self.minimum_team_bid and self.players != 4:
            raise InvalidRules("minimum_team_bid", "a minimum team bid needs partners (4 players)")
        if self.bag_limit < 1:
            raise InvalidRules("bag_limit", "the bag limit must be at least 1")
        if self.bag_penalty < 0:
            raise InvalidRules("bag_penalty", "the bag penalty cannot be negative")
        if self.loss_threshold is not None and self.loss_threshold >= 0:
            raise InvalidRules("loss_threshold", "the loss threshold must be below zero")
        if self.max_hands is not None and self.max_hands < 1:
            raise InvalidRules("max_hands", "the hand limit must be at least 1")
        if self.clock.turn_millis < 1:
            raise InvalidRules("clock.turn_millis", "a turn must last at least 1 ms")
        if self.clock.extension_millis < 0:
            raise InvalidRules("clock.extension_millis", "the extension cannot be negative")

    # Derived facts the engine uses in its hot paths.

    @property
    def deck_mask(self) -> int:
        """The cards in play, as a bitmask."""
        mask = SUIT_MASKS[0] | SUIT_MASKS[1] | SUIT_MASKS[2] | SUIT_MASKS[3]
        if self.jokers:
            mask |= JOKER_MASK
            if self.players == 4:
                mask &= ~((1 << TWO_OF_CLUBS) | (1 << TWO_OF_HEARTS))
        return mask

    @property
    def hand_size(self) -> int:
        """Cards dealt to each player: 13, or 17 (18 with jokers) in cutthroat."""
        if self.players == 4:
            return 13
        return 18 if self.jokers else 17

    @property
    def partnerships(self) -> bool:
        return self.players == 4

    @property
    def sides(self) -> tuple[tuple[int, ...], ...]:
        """The scoring sides: North-South and East-West, or each player alone."""
        return self.seating.sides

    @property
    def step(self) -> int:
        """+1 when play goes clockwise, -1 when it goes counter-clockwise."""
        return 1 if self.direction is Direction.CLOCKWISE else -1

    # Compiled once per Rules object, on first use (a frozen dataclass still has a __dict__
    # for cached_property; equality and hashing see only the fields).

    def __getstate__(self) -> dict[str, object]:
        # Pickle the fields only: the compiled facts are compiled again on first use, so an
        # unpickled game is never built from rules whose fields are not restored yet.
        return {name: value for name, value in vars(self).items() if name not in _COMPILED}

    @cached_property
    def seating(self) -> Seating:
        """Who plays after whom, partners and sides at this table."""
        return Seating(self.players, self.step)

    @cached_property
    def game(self) -> Game:
        """The facts these rules imply, compiled for the engine's hot paths."""
        return Game(self, self.seating)

    def trump_order(self) -> list[int]:
        """Trumps from lowest to highest."""
        spades = [Suit.SPADES * 13 + index for index in range(13)]
        if not self.jokers:
            return spades
        return [*spades[1:], TWO_OF_SPADES, LITTLE_JOKER, BIG_JOKER]

    def badges(self) -> list[str]:
        """Short labels for every variation that differs from the default game."""
        default = Rules()
        badges = (
            variation.badge_of(self) for variation in VARIATIONS if variation.in_use(self, default)
        )
        return [badge for badge in badges if badge is not None]
