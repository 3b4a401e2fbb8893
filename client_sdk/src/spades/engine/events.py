"""The domain events of a match, mirroring ``spades.v1`` events one for one.

The engine's only way to change a match state is to fold one of these into it, so a state
rebuilt from a table's events is exactly the state that produced them. Cards are
:class:`~spades.engine.cards.Card` values; seats are ints (0 North .. 3 West). Hidden fields
are ``None`` in a redacted copy (see :mod:`spades.engine.views`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from spades.engine.actions import Action, Bid
from spades.engine.cards import Card
from spades.engine.rules import Rules


@dataclass(frozen=True, slots=True)
class TableCreated:
    rules: Rules
    seed_commitment: bytes
    shuffle_version: str
    #: Secret until the match ends; ``None`` in every view.
    seed: bytes | None
    #: Operator-given deals, one per hand from the first (each a hand per seat); secret too.
    preset_deals: tuple[tuple[tuple[Card, ...], ...], ...] | None = ()


@dataclass(frozen=True, slots=True)
class SeatTaken:
    seat: int
    name: str
    bot: bool


@dataclass(frozen=True, slots=True)
class SeatLeft:
    seat: int


@dataclass(frozen=True, slots=True)
class HandStarted:
    hand_number: int
    dealer: int
    blind_nil_eligible: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class CardsDealt:
    seat: int
    #: ``None`` where the viewer may not see them.
    cards: tuple[Card, ...] | None
    card_count: int
    face_down: bool


@dataclass(frozen=True, slots=True)
class BlindNilChosen:
    seat: int
    blind: bool


@dataclass(frozen=True, slots=True)
class CardsShown:
    seat: int
    cards: tuple[Card, ...] | None


@dataclass(frozen=True, slots=True)
class BidMade:
    seat: int
    bid: Bid


@dataclass(frozen=True, slots=True)
class CardsPassed:
    from_seat: int
    to_seat: int
    cards: tuple[Card, ...] | None
    card_count: int


@dataclass(frozen=True, slots=True)
class CardPlayed:
    seat: int
    card: Card


@dataclass(frozen=True, slots=True)
class TrickWon:
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
class HandScored:
    hand_number: int
    sides: tuple[SideResult, ...]
    #: The seats that had a turn timed out, or a substitute playing, during the hand.
    automatic_play: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class TurnTimedOut:
    seat: int
    automatic_action: Action


@dataclass(frozen=True, slots=True)
class ExtensionClaimed:
    seat: int


class SubstitutionReason(Enum):
    TIMEOUTS = "consecutive timeouts"
    DISCONNECTED = "disconnected"


@dataclass(frozen=True, slots=True)
class SeatSubstituted:
    """A substitute (a house bot) plays the seat until its player takes it back."""

    seat: int
    reason: SubstitutionReason


@dataclass(frozen=True, slots=True)
class SeatReclaimed:
    """The seat's player took it back from its substitute."""

    seat: int


@dataclass(frozen=True, slots=True)
class Conceded:
    seat: int


class EndReason(Enum):
    TARGET_SCORE = "target score"
    LOSS_THRESHOLD = "loss threshold"
    MAX_HANDS = "hand limit"
    CONCESSION = "concession"
    CLOSED = "closed by the operator"


@dataclass(frozen=True, slots=True)
class MatchEnded:
    reason: EndReason
    winners: tuple[int, ...]
    final_scores: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class SeedRevealed:
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
