"""The domain events of a match, mirroring ``spades.v1`` events one for one.

The engine's only way to change a match state is to fold one of these into it, so a state
rebuilt from a table's events is exactly the state that produced them. Cards are
:class:`~spades.engine.cards.Card` values; seats are ints (0 North .. 3 West). Hidden fields
are ``None`` in a redacted copy (see :mod:`spades.engine.views`).

Every event has an ``actor``: the seat whose own action it records (a bid, a card, a pass, a
seat taken, a concession, an extension claimed), or ``None`` when no seat acted (the deal, a
trick won, the clock, a substitution, the end).

>>> BidMade(2, Bid(4)).actor, CardsPassed(0, 2, None, 2).actor, TrickWon(1, 3, None).actor
(2, 0, None)
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from spades.engine.actions import Action, Bid
from spades.engine.cards import Card
from spades.engine.rules import Rules
from spades.engine.seating import Seat


class _NoActor:
    """An event that records no seat's own action."""

    __slots__ = ()

    @property
    def actor(self) -> Seat | None:
        """The seat whose action this event records: none."""
        return None


class _SeatActs:
    """An event that records the action of its ``seat``."""

    __slots__ = ()
    seat: Seat

    @property
    def actor(self) -> Seat | None:
        """The seat whose action this event records."""
        return self.seat


@dataclass(frozen=True, slots=True)
class TableCreated(_NoActor):
    rules: Rules
    seed_commitment: bytes
    shuffle_version: str
    #: Secret until the match ends; ``None`` in every view.
    seed: bytes | None
    #: Operator-given deals, one per hand from the first (each a hand per seat); secret too.
    preset_deals: tuple[tuple[tuple[Card, ...], ...], ...] | None = ()


@dataclass(frozen=True, slots=True)
class SeatTaken(_SeatActs):
    seat: int
    name: str
    bot: bool


@dataclass(frozen=True, slots=True)
class SeatLeft(_SeatActs):
    seat: int


@dataclass(frozen=True, slots=True)
class HandStarted(_NoActor):
    hand_number: int
    dealer: int
    blind_nil_eligible: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class CardsDealt(_NoActor):
    seat: int
    #: ``None`` where the viewer may not see them.
    cards: tuple[Card, ...] | None
    card_count: int
    face_down: bool


@dataclass(frozen=True, slots=True)
class BlindNilChosen(_SeatActs):
    seat: int
    blind: bool


@dataclass(frozen=True, slots=True)
class CardsShown(_NoActor):
    seat: int
    cards: tuple[Card, ...] | None


@dataclass(frozen=True, slots=True)
class BidMade(_SeatActs):
    seat: int
    bid: Bid


@dataclass(frozen=True, slots=True)
class CardsPassed:
    from_seat: int
    to_seat: int
    cards: tuple[Card, ...] | None
    card_count: int

    @property
    def actor(self) -> Seat | None:
        """The seat that passed the cards."""
        return self.from_seat


@dataclass(frozen=True, slots=True)
class CardPlayed(_SeatActs):
    seat: int
    card: Card


@dataclass(frozen=True, slots=True)
class TrickWon(_NoActor):
    trick_number: int
    winner: int
    winning_card: Card


@dataclass(frozen=True, slots=True)
class NilResult:
    seat: int
    blind: bool
    tricks: int
    made: bool
    points: int


@dataclass(frozen=True, slots=True)
class SeatResult:
    seat: int
    bid: Bid
    tricks: int


@dataclass(frozen=True, slots=True)
class SideResult:
    seats: tuple[int, ...]
    seat_results: tuple[SeatResult, ...]
    contract: int
    contract_tricks: int
    contract_made: bool
    contract_points: int
    nil_results: tuple[NilResult, ...]
    bags: int
    bag_penalty_points: int
    hand_points: int
    total_score: int
    total_bags: int


@dataclass(frozen=True, slots=True)
class HandScored(_NoActor):
    hand_number: int
    sides: tuple[SideResult, ...]
    #: The seats that had a turn timed out, or a substitute playing, during the hand.
    automatic_play: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class TurnTimedOut(_NoActor):
    seat: int
    automatic_action: Action


@dataclass(frozen=True, slots=True)
class ExtensionClaimed(_SeatActs):
    seat: int


class SubstitutionReason(Enum):
    TIMEOUTS = "consecutive timeouts"
    DISCONNECTED = "disconnected"


@dataclass(frozen=True, slots=True)
class SeatSubstituted(_NoActor):
    """A substitute (a house bot) plays the seat until its player takes it back."""

    seat: int
    reason: SubstitutionReason


@dataclass(frozen=True, slots=True)
class SeatReclaimed(_NoActor):
    """The seat's player took it back from its substitute."""

    seat: int


@dataclass(frozen=True, slots=True)
class Conceded(_SeatActs):
    seat: int


class EndReason(Enum):
    TARGET_SCORE = "target score"
    LOSS_THRESHOLD = "loss threshold"
    MAX_HANDS = "hand limit"
    CONCESSION = "concession"
    CLOSED = "closed by the operator"


@dataclass(frozen=True, slots=True)
class MatchEnded(_NoActor):
    reason: EndReason
    winners: tuple[int, ...]
    final_scores: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class SeedRevealed(_NoActor):
    seed: bytes


Event = (
    TableCreated
    | SeatTaken
    | SeatLeft
    | HandStarted
    | CardsDealt
    | BlindNilChosen
    | CardsShown
    | BidMade
    | CardsPassed
    | CardPlayed
    | TrickWon
    | HandScored
    | TurnTimedOut
    | ExtensionClaimed
    | SeatSubstituted
    | SeatReclaimed
    | Conceded
    | MatchEnded
    | SeedRevealed
)
