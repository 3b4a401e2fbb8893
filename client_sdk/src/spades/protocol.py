"""The one place that converts between engine values and ``spades.v1`` protobuf messages.

Every direction of every message lives here and nowhere else: cards, seats, rule sets, bids,
actions and events. There is no rules logic: a converted action may still be illegal, and the
engine says why when it is applied. Malformed input (an unknown card, a seat out of range, an
empty oneof) raises :class:`ProtocolError`, a :class:`ValueError` naming the offending field,
which a server answers with ``INVALID_ARGUMENT``.

>>> from spades.engine import Card, PlayCard
>>> message = action_to_proto(PlayCard(Card.parse("Q♠")))
>>> message.play_card.suit == cards_pb2.SUIT_SPADES, message.play_card.rank
(True, 12)
>>> action_from_proto(message)
PlayCard(card=Card.parse('QS'))
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from dataclasses import fields as dataclass_fields
from datetime import datetime
from operator import attrgetter
from typing import Any, Final

from google.protobuf.descriptor import EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message

from spades.engine import events as ev
from spades.engine.actions import (
    BID,
    BLIND,
    CLAIM_EXTENSION,
    CONCEDE,
    LOOK,
    PLAY,
    Action,
    Bid,
    ChooseBlindNil,
    ClaimExtension,
    Concede,
    MakeBid,
    PassCards,
    PlayCard,
)
from spades.engine.cards import BIG_JOKER, BIG_JOKER_RANK, CARDS, LITTLE_JOKER, LITTLE_JOKER_RANK
from spades.engine.cards import Card as EngineCard
from spades.engine.errors import InvalidRules
from spades.engine.rules import Rules
from spades.engine.state import Phase
from spades.engine.tricks import CompletedTrick, Play
from spades.engine.variations import VARIATIONS, Wire
from spades.engine.views import SeatView
from spades.v1 import actions_pb2, cards_pb2, events_pb2, rules_pb2, view_pb2

__all__ = [
    "ProtocolError",
    "action_from_proto",
    "action_to_proto",
    "bid_from_proto",
    "bid_to_proto",
    "card_from_proto",
    "card_to_proto",
    "cards_from_proto",
    "cards_to_proto",
    "deals_from_proto",
    "deals_to_proto",
    "event_from_proto",
    "event_to_proto",
    "rules_from_proto",
    "rules_to_proto",
    "seat_from_proto",
    "seat_to_proto",
    "stored_event",
    "view_from_proto",
    "view_to_proto",
]


class ProtocolError(ValueError):
    """A protobuf message the engine cannot take: ``field`` is its path, ``reason`` says why."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


# ---------------------------------------------------------------------------------- cards

_SUIT_NAMES: Final[dict[int, str]] = {
    cards_pb2.SUIT_CLUBS: "clubs",
    cards_pb2.SUIT_DIAMONDS: "diamonds",
    cards_pb2.SUIT_HEARTS: "hearts",
    cards_pb2.SUIT_SPADES: "spades",
}


def card_to_proto(card: int) -> cards_pb2.Card:
    """A card number (or :class:`~spades.engine.Card`) as a ``spades.v1.Card``."""
    if not 0 <= card < len(CARDS):
        raise ProtocolError("card", f"{card} is not a card number (0..53)")
    if card >= LITTLE_JOKER:
        rank = LITTLE_JOKER_RANK if card == LITTLE_JOKER else BIG_JOKER_RANK
        return cards_pb2.Card(rank=cards_pb2.Rank.ValueType(rank))
    return cards_pb2.Card(
        suit=cards_pb2.Suit.ValueType(card // 13 + 1),
        rank=cards_pb2.Rank.ValueType(card % 13 + 2),
    )


def card_from_proto(message: cards_pb2.Card, field: str = "card") -> EngineCard:
    """The engine card of a ``spades.v1.Card``; a joker has rank 15 or 16 and no suit."""
    suit, rank = int(message.suit), int(message.rank)
    if suit == cards_pb2.SUIT_UNSPECIFIED:
        if rank == LITTLE_JOKER_RANK:
            return CARDS[LITTLE_JOKER]
        if rank == BIG_JOKER_RANK:
            return CARDS[BIG_JOKER]
        raise ProtocolError(
            field, f"a card without a suit must be a joker (rank 15 or 16), not {rank}"
        )
    if suit not in _SUIT_NAMES:
        raise ProtocolError(field, f"unknown suit {suit}")
    if not 2 <= rank <= 14:
        if rank in (LITTLE_JOKER_RANK, BIG_JOKER_RANK):
            raise ProtocolError(field, "a joker has no suit: leave suit unspecified")
        raise ProtocolError(field, f"rank {rank} is not a card of {_SUIT_NAMES[suit]} (2..14)")
    return CARDS[(suit - 1) * 13 + rank - 2]


def cards_to_proto(cards: Iterable[int]) -> list[cards_pb2.Card]:
    """Cards as ``spades.v1.Card`` messages, in the same order."""
    return [card_to_proto(card) for card in cards]


def cards_from_proto(
    messages: Iterable[cards_pb2.Card], field: str = "cards"
) -> tuple[EngineCard, ...]:
    """Engine cards of ``spades.v1.Card`` messages, in the same order."""
    return tuple(
        card_from_proto(message, f"{field}[{index}]") for index, message in enumerate(messages)
    )


# ---------------------------------------------------------------------------------- seats


def seat_to_proto(seat: int) -> cards_pb2.Seat.ValueType:
    """An engine seat (0 North .. 3 West) as the ``spades.v1.Seat`` value (1 .. 4)."""
    if not 0 <= seat <= 3:
        raise ProtocolError("seat", f"{seat} is not a seat (0 North .. 3 West)")
    return cards_pb2.Seat.ValueType(seat + 1)


def seat_from_proto(value: int, field: str = "seat") -> int:
    """The engine seat of a ``spades.v1.Seat`` value; unspecified or unknown values are errors."""
    if value == cards_pb2.SEAT_UNSPECIFIED:
        raise ProtocolError(field, "no seat given")
    if not cards_pb2.SEAT_NORTH <= value <= cards_pb2.SEAT_WEST:
        raise ProtocolError(field, f"unknown seat {value}")
    return value - 1


def _seats_from_proto(values: Iterable[int], field: str) -> tuple[int, ...]:
    return tuple(seat_from_proto(value, f"{field}[{index}]") for index, value in enumerate(values))


# ---------------------------------------------------------------------------------- rules

# A rule set converts field by field as the table of variations says (spades.engine.variations):
# each Rules field, the RuleSet field that carries it, and how its value reads on the wire. Each
# field's two converters are built once, here, so a conversion is a loop over plain functions
# (every table, view, record and challenge carries its rules).

_DEFAULT_RULES: Final = Rules()
_RULE_FIELDS: Final = tuple(field for variation in VARIATIONS for field in variation.fields)
#: Engine rule fields whose ``spades.v1.RuleSet`` field has another name (and the opposite sense).
_RULE_FIELD_IN_PROTO: Final = {
    field.rules: field.proto for field in _RULE_FIELDS if field.rules != field.proto
}

_Write = Callable[[Any], Any]
_Read = Callable[[Message], Any]


def _enum_of(descriptor: FieldDescriptor) -> tuple[EnumDescriptor, str]:
    """The enum of a ``Wire.ENUM`` field, and what its values' names start with
    (``PLAY_DIRECTION_`` for ``PlayDirection``)."""
    enum = descriptor.enum_type
    if enum is None:
        raise TypeError(f"RuleSet.{descriptor.name} is not an enum, yet the table says ENUM")
    return enum, re.sub(r"(?<!^)(?=[A-Z])", "_", enum.name).upper() + "_"


def _same_reader(descriptor: FieldDescriptor, default: Any) -> _Read:
    name = descriptor.name
    if descriptor.has_presence:
        return lambda message: getattr(message, name) if message.HasField(name) else default
    return lambda message: getattr(message, name) or default


def _rule_converters(wire: Wire, descriptor: FieldDescriptor, default: Any) -> tuple[_Write, _Read]:
    """How one ``Rules`` value becomes its ``RuleSet`` field's value, and back."""
    name = descriptor.name
    if wire is Wire.NEGATED:
        return (lambda value: not value), (lambda message: not getattr(message, name))
    if wire is Wire.ZERO_IS_NONE:
        return (lambda value: value or 0), (lambda message: getattr(message, name) or None)
    if wire is Wire.ENUM:
        enum, prefix = _enum_of(descriptor)
        to_number = {
            member: enum.values_by_name[prefix + member.name].number for member in type(default)
        }
        from_number = {
            value.number: default
            if value.number == 0
            else type(default)[value.name.removeprefix(prefix)]
            for value in enum.values
        }
        words = prefix.replace("_", " ").lower().strip()

        def read_enum(message: Message) -> Any:
            number = getattr(message, name)
            if number not in from_number:
                raise InvalidRules(name, f"unknown {words} {int(number)}")
            return from_number[number]

        return to_number.__getitem__, read_enum
    if wire is Wire.MESSAGE:
        message = descriptor.message_type
        if message is None:
            raise TypeError(f"RuleSet.{name} is not a message, yet the table says MESSAGE")
        parts = [
            (
                part.name,
                _same_reader(message.fields_by_name[part.name], getattr(default, part.name)),
            )
            for part in dataclass_fields(default)
        ]
        dataclass_type = type(default)
        names = attrgetter(*(part for part, _ in parts))

        def write_message(value: Any) -> dict[str, Any]:  # the message's fields, as a dict
            return dict(zip((part for part, _ in parts), names(value), strict=True))

        def read_message(message: Message) -> Any:
            if not message.HasField(name):
                return default
            inner = getattr(message, name)
            return dataclass_type(**{part: read(inner) for part, read in parts})

        return write_message, read_message
    return (lambda value: value), _same_reader(descriptor, default)


_RULE_CONVERTERS: Final = tuple(
    (
        field,
        *_rule_converters(
            field.wire,
            rules_pb2.RuleSet.DESCRIPTOR.fields_by_name[field.proto],
            getattr(_DEFAULT_RULES, field.rules),
        ),
    )
    for field in _RULE_FIELDS
)


_RULE_VALUES: Final = attrgetter(*(field.rules for field in _RULE_FIELDS))
#: Each RuleSet field's name and its writer, None where the value is written as it is.
_RULE_WRITERS: Final = tuple(
    (field.proto, None if field.wire is Wire.SAME else write)
    for field, write, _ in _RULE_CONVERTERS
)


def rules_to_proto(rules: Rules) -> rules_pb2.RuleSet:
    """A rule set as ``spades.v1.RuleSet``, every value written out (no zero-means-default)."""
    values = {
        proto: value if write is None else write(value)
        for (proto, write), value in zip(_RULE_WRITERS, _RULE_VALUES(rules), strict=True)
    }
    try:
        return rules_pb2.RuleSet(**values)
    except ValueError as error:  # a value too large for its protobuf field
        raise ProtocolError("rules", str(error)) from error


def rules_from_proto(message: rules_pb2.RuleSet) -> Rules:
    """The engine rule set of a ``spades.v1.RuleSet``, reading zero values as its comments say.

    Raises :class:`~spades.engine.InvalidRules` naming the ``RuleSet`` field when the rule set
    cannot be played.
    """
    values = {field.rules: read(message) for field, _, read in _RULE_CONVERTERS}
    try:
        return Rules(**values)
    except InvalidRules as error:
        field = _RULE_FIELD_IN_PROTO.get(error.field, error.field)
        raise InvalidRules(field, error.reason) from error


# ---------------------------------------------------------------------------------- bids


def bid_to_proto(bid: Bid) -> actions_pb2.Bid:
    """A bid as ``spades.v1.Bid``: tricks, Nil or Blind Nil."""
    if bid.blind:
        return actions_pb2.Bid(kind=actions_pb2.Bid.KIND_BLIND_NIL)
    if bid.tricks == 0:
        return actions_pb2.Bid(kind=actions_pb2.Bid.KIND_NIL)
    return actions_pb2.Bid(kind=actions_pb2.Bid.KIND_TRICKS, tricks=bid.tricks)


def bid_from_proto(message: actions_pb2.Bid, field: str = "bid") -> Bid:
    """The engine bid of a ``spades.v1.Bid``."""
    kind = message.kind
    if kind == actions_pb2.Bid.KIND_TRICKS:
        if message.tricks == 0:
            raise ProtocolError(
                f"{field}.tricks", "a bid of tricks needs 1 or more; bid KIND_NIL for 0"
            )
        return Bid(message.tricks)
    if kind in (actions_pb2.Bid.KIND_NIL, actions_pb2.Bid.KIND_BLIND_NIL):
        if message.tricks:
            raise ProtocolError(f"{field}.tricks", "a Nil bid carries no number of tricks")
        return Bid.BLIND_NIL if kind == actions_pb2.Bid.KIND_BLIND_NIL else Bid.NIL
    if kind == actions_pb2.Bid.KIND_UNSPECIFIED:
        raise ProtocolError(f"{field}.kind", "no kind of bid given")
    raise ProtocolError(f"{field}.kind", f"unknown kind of bid {int(kind)}")


# ---------------------------------------------------------------------------------- actions


def action_to_proto(action: Action) -> actions_pb2.Action:
    """An engine action as ``spades.v1.Action``."""
    if isinstance(action, PlayCard):
        return actions_pb2.Action(play_card=card_to_proto(action.card))
    if isinstance(action, MakeBid):
        return actions_pb2.Action(bid=bid_to_proto(Bid(action.tricks)))
    if isinstance(action, ChooseBlindNil):
        return actions_pb2.Action(blind_nil_choice=actions_pb2.BlindNilChoice(blind=action.blind))
    if isinstance(action, PassCards):
        return actions_pb2.Action(
            card_pass=actions_pb2.CardPass(cards=cards_to_proto(action.cards))
        )
    if isinstance(action, Concede):
        return actions_pb2.Action(concession=actions_pb2.Concession())
    if isinstance(action, ClaimExtension):
        return actions_pb2.Action(extension_claim=actions_pb2.ExtensionClaim())
    raise TypeError(f"{action!r} is not an engine action")


def action_from_proto(message: actions_pb2.Action, field: str = "action") -> Action:
    """The engine action of a ``spades.v1.Action``.

    A Blind Nil bid sent as a bid is the Blind Nil choice (``ChooseBlindNil(True)``).
    """
    kind = message.WhichOneof("kind")
    if kind == "play_card":
        return PLAY[card_from_proto(message.play_card, f"{field}.play_card")]
    if kind == "bid":
        bid = bid_from_proto(message.bid, f"{field}.bid")
        if bid.blind:
            return BLIND
        return BID[bid.tricks] if bid.tricks < len(BID) else MakeBid(bid.tricks)
    if kind == "blind_nil_choice":
        return BLIND if message.blind_nil_choice.blind else LOOK
    if kind == "card_pass":
        return PassCards(cards_from_proto(message.card_pass.cards, f"{field}.card_pass.cards"))
    if kind == "concession":
        return CONCEDE
    if kind == "extension_claim":
        return CLAIM_EXTENSION
    raise ProtocolError(field, "no action given (the oneof 'kind' is empty)")


# ---------------------------------------------------------------------------------- events


def _optional_cards(cards: tuple[EngineCard, ...] | None) -> list[cards_pb2.Card]:
    return [] if cards is None else cards_to_proto(cards)


def _counted_cards(
    messages: Sequence[cards_pb2.Card], card_count: int, field: str
) -> tuple[EngineCard, ...] | None:
    # Hidden cards travel as an empty list; card_count still says how many there are.
    if not messages:
        return None
    if len(messages) != card_count:
        raise ProtocolError(
            f"{field}.cards", f"{len(messages)} cards but card_count is {card_count}"
        )
    return cards_from_proto(messages, f"{field}.cards")


_END_REASON_TO_PROTO: Final = {
    ev.EndReason.TARGET_SCORE: events_pb2.MATCH_END_REASON_TARGET_SCORE,
    ev.EndReason.LOSS_THRESHOLD: events_pb2.MATCH_END_REASON_LOSS_THRESHOLD,
    ev.EndReason.MAX_HANDS: events_pb2.MATCH_END_REASON_MAX_HANDS,
    ev.EndReason.CONCESSION: events_pb2.MATCH_END_REASON_CONCESSION,
    ev.EndReason.CLOSED: events_pb2.MATCH_END_REASON_CLOSED,
}
_END_REASON_FROM_PROTO: Final = {value: reason for reason, value in _END_REASON_TO_PROTO.items()}
_SUBSTITUTION_REASON_TO_PROTO: Final = {
    ev.SubstitutionReason.TIMEOUTS: events_pb2.SUBSTITUTION_REASON_TIMEOUTS,
    ev.SubstitutionReason.DISCONNECTED: events_pb2.SUBSTITUTION_REASON_DISCONNECTED,
}
_SUBSTITUTION_REASON_FROM_PROTO: Final = {
    value: reason for reason, value in _SUBSTITUTION_REASON_TO_PROTO.items()
}


def _side_to_proto(side: ev.SideResult) -> events_pb2.SideResult:
    return events_pb2.SideResult(
        seats=[seat_to_proto(seat) for seat in side.seats],
        seat_results=[
            events_pb2.SeatResult(
                seat=seat_to_proto(result.seat), bid=bid_to_proto(result.bid), tricks=result.tricks
            )
            for result in side.seat_results
        ],
        contract=side.contract,
        contract_tricks=side.contract_tricks,
        contract_made=side.contract_made,
        contract_points=side.contract_points,
        nil_results=[
            events_pb2.NilResult(
                seat=seat_to_proto(nil.seat),
                blind=nil.blind,
                tricks=nil.tricks,
                made=nil.made,
                points=nil.points,
            )
            for nil in side.nil_results
        ],
        bags=side.bags,
        bag_penalty_points=side.bag_penalty_points,
        hand_points=side.hand_points,
        total_score=side.total_score,
        total_bags=side.total_bags,
    )


def _side_from_proto(message: events_pb2.SideResult, field: str) -> ev.SideResult:
    return ev.SideResult(
        seats=_seats_from_proto(message.seats, f"{field}.seats"),
        seat_results=tuple(
            ev.SeatResult(
                seat_from_proto(result.seat, f"{field}.seat_results[{index}].seat"),
                bid_from_proto(result.bid, f"{field}.seat_results[{index}].bid"),
                result.tricks,
            )
            for index, result in enumerate(message.seat_results)
        ),
        contract=message.contract,
        contract_tricks=message.contract_tricks,
        contract_made=message.contract_made,
        contract_points=message.contract_points,
        nil_results=tuple(
            ev.NilResult(
                seat_from_proto(nil.seat, f"{field}.nil_results[{index}].seat"),
                nil.blind,
                nil.tricks,
                nil.made,
                nil.points,
            )
            for index, nil in enumerate(message.nil_results)
        ),
        bags=message.bags,
        bag_penalty_points=message.bag_penalty_points,
        hand_points=message.hand_points,
        total_score=message.total_score,
        total_bags=message.total_bags,
    )


def deals_to_proto(deals: Iterable[Iterable[Iterable[int]]]) -> list[events_pb2.Deal]:
    """Deals (each a hand of cards per seat) as ``Deal`` messages."""
    return [
        events_pb2.Deal(hands=[events_pb2.DealtHand(cards=cards_to_proto(hand)) for hand in deal])
        for deal in deals
    ]


def deals_from_proto(
    messages: Iterable[events_pb2.Deal], field: str = "deals"
) -> tuple[tuple[tuple[EngineCard, ...], ...], ...]:
    """``Deal`` messages as the engine's deals."""
    return tuple(
        tuple(
            cards_from_proto(hand.cards, f"{field}[{number}].hands[{seat}].cards")
            for seat, hand in enumerate(deal.hands)
        )
        for number, deal in enumerate(messages)
    )


# One codec per event type: the oneof field it travels in, and its two directions. Each
# direction sees only its own message (``body``); ``where`` names the field for errors.


def _table_created_to(event: ev.TableCreated) -> events_pb2.TableCreated:
    # The seed and preset deals are the server's secrets: spades.v1 has no field for them (the
    # server's log keeps them beside the event, see spades_server.store.journal).
    return events_pb2.TableCreated(
        rules=rules_to_proto(event.rules),
        seed_commitment=event.seed_commitment,
        shuffle_version=event.shuffle_version,
    )


def _table_created_from(body: events_pb2.TableCreated, where: str) -> ev.TableCreated:
    return ev.TableCreated(
        rules=rules_from_proto(body.rules),
        seed_commitment=body.seed_commitment,
        shuffle_version=body.shuffle_version,
        seed=None,
        preset_deals=None,
    )


def _seat_taken_to(event: ev.SeatTaken) -> events_pb2.SeatTaken:
    player = events_pb2.Player(seat=seat_to_proto(event.seat), name=event.name, bot=event.bot)
    return events_pb2.SeatTaken(player=player)


def _seat_taken_from(body: events_pb2.SeatTaken, where: str) -> ev.SeatTaken:
    player = body.player
    return ev.SeatTaken(
        seat_from_proto(player.seat, f"{where}.player.seat"), player.name, player.bot
    )


def _hand_started_to(event: ev.HandStarted) -> events_pb2.HandStarted:
    return events_pb2.HandStarted(
        hand_number=event.hand_number,
        dealer=seat_to_proto(event.dealer),
        blind_nil_eligible=[seat_to_proto(seat) for seat in event.blind_nil_eligible],
    )


def _hand_started_from(body: events_pb2.HandStarted, where: str) -> ev.HandStarted:
    return ev.HandStarted(
        hand_number=body.hand_number,
        dealer=seat_from_proto(body.dealer, f"{where}.dealer"),
        blind_nil_eligible=_seats_from_proto(
            body.blind_nil_eligible, f"{where}.blind_nil_eligible"
        ),
    )


def _cards_dealt_to(event: ev.CardsDealt) -> events_pb2.CardsDealt:
    return events_pb2.CardsDealt(
        seat=seat_to_proto(event.seat),
        cards=_optional_cards(event.cards),
        card_count=event.card_count,
        face_down=event.face_down,
    )


def _cards_dealt_from(body: events_pb2.CardsDealt, where: str) -> ev.CardsDealt:
    return ev.CardsDealt(
        seat=seat_from_proto(body.seat, f"{where}.seat"),
        cards=_counted_cards(body.cards, body.card_count, where),
        card_count=body.card_count,
        face_down=body.face_down,
    )


def _blind_nil_chosen_to(event: ev.BlindNilChosen) -> events_pb2.BlindNilChosen:
    return events_pb2.BlindNilChosen(seat=seat_to_proto(event.seat), blind=event.blind)


def _blind_nil_chosen_from(body: events_pb2.BlindNilChosen, where: str) -> ev.BlindNilChosen:
    return ev.BlindNilChosen(seat_from_proto(body.seat, f"{where}.seat"), body.blind)


def _cards_shown_to(event: ev.CardsShown) -> events_pb2.CardsShown:
    return events_pb2.CardsShown(seat=seat_to_proto(event.seat), cards=_optional_cards(event.cards))


def _cards_shown_from(body: events_pb2.CardsShown, where: str) -> ev.CardsShown:
    return ev.CardsShown(
        seat=seat_from_proto(body.seat, f"{where}.seat"),
        cards=cards_from_proto(body.cards, f"{where}.cards") if body.cards else None,
    )


def _bid_made_to(event: ev.BidMade) -> events_pb2.BidMade:
    return events_pb2.BidMade(seat=seat_to_proto(event.seat), bid=bid_to_proto(event.bid))


def _bid_made_from(body: events_pb2.BidMade, where: str) -> ev.BidMade:
    return ev.BidMade(
        seat_from_proto(body.seat, f"{where}.seat"), bid_from_proto(body.bid, f"{where}.bid")
    )


def _cards_passed_to(event: ev.CardsPassed) -> events_pb2.CardsPassed:
    return events_pb2.CardsPassed(
        from_seat=seat_to_proto(event.from_seat),
        to_seat=seat_to_proto(event.to_seat),
        cards=_optional_cards(event.cards),
        card_count=event.card_count,
    )


def _cards_passed_from(body: events_pb2.CardsPassed, where: str) -> ev.CardsPassed:
    return ev.CardsPassed(
        from_seat=seat_from_proto(body.from_seat, f"{where}.from_seat"),
        to_seat=seat_from_proto(body.to_seat, f"{where}.to_seat"),
        cards=_counted_cards(body.cards, body.card_count, where),
        card_count=body.card_count,
    )


def _card_played_to(event: ev.CardPlayed) -> events_pb2.CardPlayed:
    return events_pb2.CardPlayed(seat=seat_to_proto(event.seat), card=card_to_proto(event.card))


def _card_played_from(body: events_pb2.CardPlayed, where: str) -> ev.CardPlayed:
    return ev.CardPlayed(
        seat_from_proto(body.seat, f"{where}.seat"), card_from_proto(body.card, f"{where}.card")
    )


def _trick_won_to(event: ev.TrickWon) -> events_pb2.TrickWon:
    return events_pb2.TrickWon(
        trick_number=event.trick_number,
        winner=seat_to_proto(event.winner),
        winning_card=card_to_proto(event.winning_card),
    )


def _trick_won_from(body: events_pb2.TrickWon, where: str) -> ev.TrickWon:
    return ev.TrickWon(
        trick_number=body.trick_number,
        winner=seat_from_proto(body.winner, f"{where}.winner"),
        winning_card=card_from_proto(body.winning_card, f"{where}.winning_card"),
    )


def _hand_scored_to(event: ev.HandScored) -> events_pb2.HandScored:
    return events_pb2.HandScored(
        hand_number=event.hand_number,
        sides=[_side_to_proto(side) for side in event.sides],
        automatic_play=[seat_to_proto(seat) for seat in event.automatic_play],
    )


def _hand_scored_from(body: events_pb2.HandScored, where: str) -> ev.HandScored:
    return ev.HandScored(
        hand_number=body.hand_number,
        sides=tuple(
            _side_from_proto(side, f"{where}.sides[{index}]")
            for index, side in enumerate(body.sides)
        ),
        automatic_play=_seats_from_proto(body.automatic_play, f"{where}.automatic_play"),
    )


def _turn_timed_out_to(event: ev.TurnTimedOut) -> events_pb2.TurnTimedOut:
    return events_pb2.TurnTimedOut(
        seat=seat_to_proto(event.seat), automatic_action=action_to_proto(event.automatic_action)
    )


def _turn_timed_out_from(body: events_pb2.TurnTimedOut, where: str) -> ev.TurnTimedOut:
    return ev.TurnTimedOut(
        seat=seat_from_proto(body.seat, f"{where}.seat"),
        automatic_action=action_from_proto(body.automatic_action, f"{where}.automatic_action"),
    )


def _seat_substituted_to(event: ev.SeatSubstituted) -> events_pb2.SeatSubstituted:
    return events_pb2.SeatSubstituted(
        seat=seat_to_proto(event.seat), reason=_SUBSTITUTION_REASON_TO_PROTO[event.reason]
    )


def _seat_substituted_from(body: events_pb2.SeatSubstituted, where: str) -> ev.SeatSubstituted:
    reason = _SUBSTITUTION_REASON_FROM_PROTO.get(body.reason)
    if reason is None:
        raise ProtocolError(f"{where}.reason", f"unknown substitution reason {int(body.reason)}")
    return ev.SeatSubstituted(seat_from_proto(body.seat, f"{where}.seat"), reason)


def _match_ended_to(event: ev.MatchEnded) -> events_pb2.MatchEnded:
    return events_pb2.MatchEnded(
        reason=_END_REASON_TO_PROTO[event.reason],
        winners=[seat_to_proto(seat) for seat in event.winners],
        final_scores=list(event.final_scores),
    )


def _match_ended_from(body: events_pb2.MatchEnded, where: str) -> ev.MatchEnded:
    reason = _END_REASON_FROM_PROTO.get(body.reason)
    if reason is None:
        raise ProtocolError(f"{where}.reason", f"unknown end reason {int(body.reason)}")
    return ev.MatchEnded(
        reason=reason,
        winners=_seats_from_proto(body.winners, f"{where}.winners"),
        final_scores=tuple(body.final_scores),
    )


def _seed_revealed_from(body: events_pb2.SeedRevealed, where: str) -> ev.SeedRevealed:
    if not body.seed:
        raise ProtocolError(f"{where}.seed", "the revealed seed is empty")
    return ev.SeedRevealed(body.seed)


_SeatEvent = ev.SeatLeft | ev.Conceded | ev.ExtensionClaimed | ev.SeatReclaimed


def _seat_only(
    message: Callable[..., Message], event: type[_SeatEvent]
) -> tuple[Callable[[Any], Message], Callable[[Any, str], ev.Event]]:
    """The codec of an event that is only a seat (SeatLeft, Conceded, ...)."""
    return (
        lambda value: message(seat=seat_to_proto(value.seat)),
        lambda body, where: event(seat_from_proto(body.seat, f"{where}.seat")),
    )


@dataclass(frozen=True)
class _Codec:
    """How one engine event type travels: in which field of ``Event``, and both directions."""

    kind: str
    to_proto: Callable[[Any], Message]
    from_proto: Callable[[Any, str], ev.Event]


def _codecs() -> dict[type, _Codec]:
    # Keyed by engine type; the field names are the oneof ``kind`` of spades.v1.Event.
    table: list[tuple[type, str, Callable[[Any], Message], Callable[[Any, str], ev.Event]]] = [
        (ev.TableCreated, "table_created", _table_created_to, _table_created_from),
        (ev.SeatTaken, "seat_taken", _seat_taken_to, _seat_taken_from),
        (ev.SeatLeft, "seat_left", *_seat_only(events_pb2.SeatLeft, ev.SeatLeft)),
        (ev.HandStarted, "hand_started", _hand_started_to, _hand_started_from),
        (ev.CardsDealt, "cards_dealt", _cards_dealt_to, _cards_dealt_from),
        (ev.BlindNilChosen, "blind_nil_chosen", _blind_nil_chosen_to, _blind_nil_chosen_from),
        (ev.CardsShown, "cards_shown", _cards_shown_to, _cards_shown_from),
        (ev.BidMade, "bid_made", _bid_made_to, _bid_made_from),
        (ev.CardsPassed, "cards_passed", _cards_passed_to, _cards_passed_from),
        (ev.CardPlayed, "card_played", _card_played_to, _card_played_from),
        (ev.TrickWon, "trick_won", _trick_won_to, _trick_won_from),
        (ev.HandScored, "hand_scored", _hand_scored_to, _hand_scored_from),
        (ev.TurnTimedOut, "turn_timed_out", _turn_timed_out_to, _turn_timed_out_from),
        (ev.Conceded, "conceded", *_seat_only(events_pb2.Conceded, ev.Conceded)),
        (
            ev.ExtensionClaimed,
            "extension_claimed",
            *_seat_only(events_pb2.ExtensionClaimed, ev.ExtensionClaimed),
        ),
        (ev.SeatSubstituted, "seat_substituted", _seat_substituted_to, _seat_substituted_from),
        (
            ev.SeatReclaimed,
            "seat_reclaimed",
            *_seat_only(events_pb2.SeatReclaimed, ev.SeatReclaimed),
        ),
        (ev.MatchEnded, "match_ended", _match_ended_to, _match_ended_from),
        (
            ev.SeedRevealed,
            "seed_revealed",
            lambda event: events_pb2.SeedRevealed(seed=event.seed),
            _seed_revealed_from,
        ),
    ]
    return {engine: _Codec(kind, to, back) for engine, kind, to, back in table}


_CODECS: Final = _codecs()
_CODECS_BY_KIND: Final = {codec.kind: codec for codec in _CODECS.values()}


def event_to_proto(event: ev.Event) -> events_pb2.Event:
    """An engine event as a ``spades.v1.Event``, its sequence 0 and time unset (not stored yet).

    Hidden fields of a redacted event (``None``) become empty (no cards). The seed and preset
    deals of TableCreated never travel: ``spades.v1`` has no field for them.
    """
    codec = _CODECS.get(type(event))
    if codec is None:
        raise TypeError(f"{event!r} is not an engine event")
    message = events_pb2.Event()
    getattr(message, codec.kind).CopyFrom(codec.to_proto(event))
    return message


def stored_event(event: ev.Event, sequence: int, time: datetime | None = None) -> events_pb2.Event:
    """An engine event as the ``sequence``-th entry of a table's log (stored at ``time``)."""
    message = event_to_proto(event)
    message.sequence = sequence
    if time is not None:
        message.time.FromDatetime(time)
    return message


def event_from_proto(message: events_pb2.Event, field: str = "event") -> ev.Event:
    """The engine event of a ``spades.v1.Event`` (its sequence and time are not part of it).

    Empty hidden fields come back as ``None``: no cards, and TableCreated without its seed and
    preset deals (only the server's log holds them). Server-only fields the engine does not
    model (table name, privacy) are dropped.
    """
    kind = message.WhichOneof("kind")
    if kind is None:
        raise ProtocolError(field, "no event given (the oneof 'kind' is empty)")
    return _CODECS_BY_KIND[kind].from_proto(getattr(message, kind), f"{field}.{kind}")


_PHASES: dict[Phase, view_pb2.Phase.ValueType] = {
    Phase.WAITING_FOR_PLAYERS: view_pb2.PHASE_WAITING_FOR_PLAYERS,
    Phase.BLIND_NIL_CHOICE: view_pb2.PHASE_BLIND_NIL_CHOICE,
    Phase.BIDDING: view_pb2.PHASE_BIDDING,
    Phase.PASSING: view_pb2.PHASE_PASSING,
    Phase.PLAYING: view_pb2.PHASE_PLAYING,
    Phase.ENDED: view_pb2.PHASE_ENDED,
}


_PHASES_FROM_PROTO: Final = {value: phase for phase, value in _PHASES.items()}


def _optional_seat(seat: int | None) -> cards_pb2.Seat.ValueType:
    return cards_pb2.SEAT_UNSPECIFIED if seat is None or seat < 0 else seat_to_proto(seat)


def view_to_proto(seat_view: SeatView) -> view_pb2.MatchView:
    """A seat's (or a spectator's) view as a ``MatchView`` message."""
    message = view_pb2.MatchView(
        viewer=_optional_seat(seat_view.viewer),
        rules=rules_to_proto(seat_view.rules),
        phase=_PHASES[seat_view.phase],
        hand_number=seat_view.hand_number,
        dealer=_optional_seat(seat_view.dealer),
        turn=_optional_seat(seat_view.turn),
        hand=cards_to_proto(seat_view.hand or ()),
        hand_sizes=seat_view.hand_sizes,
        blind_nil_pending=[seat_to_proto(seat) for seat in seat_view.blind_nil_pending],
        tricks_won=seat_view.tricks_won,
        spades_broken=seat_view.spades_broken,
        scores=seat_view.scores,
        bags=seat_view.bags,
        legal_actions=[action_to_proto(action) for action in seat_view.legal_actions],
        seed_commitment=seat_view.seed_commitment,
        seed=seat_view.seed or b"",
        substituted=[seat_to_proto(seat) for seat in seat_view.substituted],
    )
    for seat, player in enumerate(seat_view.players):
        if player is not None:
            message.players.add(seat=seat_to_proto(seat), name=player[0], bot=player[1])
    for seat, bid in enumerate(seat_view.bids):
        entry = message.bids.add(seat=seat_to_proto(seat))
        if bid is not None:
            entry.bid.CopyFrom(bid_to_proto(bid))
    for seat, card in seat_view.current_trick:
        message.current_trick.add(seat=seat_to_proto(seat), card=card_to_proto(card))
    for trick in seat_view.completed_tricks:
        done = message.completed_tricks.add(
            leader=seat_to_proto(trick.leader), winner=seat_to_proto(trick.winner)
        )
        for seat, card in trick.plays:
            done.plays.add(seat=seat_to_proto(seat), card=card_to_proto(card))
    for result in seat_view.hand_results:
        message.hand_results.append(event_to_proto(result).hand_scored)
    if seat_view.end is not None:
        message.end.CopyFrom(event_to_proto(seat_view.end).match_ended)
    return message


def _optional_seat_from(value: int, field: str) -> int | None:
    return None if value == cards_pb2.SEAT_UNSPECIFIED else seat_from_proto(value, field)


def _plays_from(messages: Iterable[events_pb2.CardPlayed], field: str) -> tuple[Play, ...]:
    return tuple(
        Play(
            seat_from_proto(play.seat, f"{field}[{index}].seat"),
            card_from_proto(play.card, f"{field}[{index}].card"),
        )
        for index, play in enumerate(messages)
    )


def view_from_proto(message: view_pb2.MatchView, field: str = "view") -> SeatView:
    """The engine's :class:`~spades.engine.SeatView` of a ``MatchView``: what
    :func:`view_to_proto` sent, so ``view_from_proto(view_to_proto(v)) == v``.

    Arrays in seat order (``hand_sizes``, ``tricks_won``) index by the engine's 0-based seat;
    the per-seat lists the message keys by ``Seat`` (``players``, ``bids``) become tuples with
    one entry per seat (None for a free seat or a seat yet to bid). Two facts the message
    leaves implicit are read as the engine defines them: the viewer's ``hand`` is None (not
    looked at, or a spectator) unless the viewer holds cards or has played this hand's tricks
    out, and the ``leader`` of the trick is known only in the play phase (the first card of
    the trick in progress, else the last trick's winner, else the seat on turn).

    >>> from spades.engine import Rules, seated_match, view
    >>> state, _ = seated_match(Rules(), seed=bytes(32))
    >>> view_from_proto(view_to_proto(view(state, 1))) == view(state, 1)
    True
    """
    rules = rules_from_proto(message.rules)
    players = rules.players
    phase = _PHASES_FROM_PROTO.get(message.phase)
    if phase is None:
        raise ProtocolError(f"{field}.phase", f"unknown phase {int(message.phase)}")
    viewer = _optional_seat_from(message.viewer, f"{field}.viewer")
    seated: list[tuple[str, bool] | None] = [None] * players
    for index, player in enumerate(message.players):
        seat = seat_from_proto(player.seat, f"{field}.players[{index}].seat")
        if seat >= players:
            raise ProtocolError(f"{field}.players[{index}].seat", f"no seat {seat} at this table")
        seated[seat] = (player.name, player.bot)
    bids: list[Bid | None] = [None] * players
    for index, entry in enumerate(message.bids):
        seat = seat_from_proto(entry.seat, f"{field}.bids[{index}].seat")
        if seat >= players:
            raise ProtocolError(f"{field}.bids[{index}].seat", f"no seat {seat} at this table")
        if entry.HasField("bid"):
            bids[seat] = bid_from_proto(entry.bid, f"{field}.bids[{index}].bid")
    hand_sizes = tuple(message.hand_sizes)
    completed = tuple(
        CompletedTrick(
            _plays_from(trick.plays, f"{field}.completed_tricks[{index}].plays"),
            seat_from_proto(trick.winner, f"{field}.completed_tricks[{index}].winner"),
        )
        for index, trick in enumerate(message.completed_tricks)
    )
    current = _plays_from(message.current_trick, f"{field}.current_trick")
    turn = _optional_seat_from(message.turn, f"{field}.turn")
    hand: tuple[EngineCard, ...] | None = None
    if message.hand:
        hand = cards_from_proto(message.hand, f"{field}.hand")
    elif viewer is not None and hand_sizes and hand_sizes[viewer] == 0 and completed:
        hand = ()  # every card played: the viewer has looked (an empty list is not "hidden")
    leader: int | None = None
    if phase is Phase.PLAYING:
        leader = current[0].seat if current else completed[-1].winner if completed else turn
    return SeatView(
        viewer=viewer,
        rules=rules,
        phase=phase,
        players=tuple(seated),
        hand_number=message.hand_number,
        dealer=_optional_seat_from(message.dealer, f"{field}.dealer"),
        turn=turn,
        hand=hand,
        hand_sizes=hand_sizes,
        bids=tuple(bids),
        blind_nil_pending=_seats_from_proto(
            message.blind_nil_pending, f"{field}.blind_nil_pending"
        ),
        leader=leader,
        current_trick=current,
        completed_tricks=completed,
        tricks_won=tuple(message.tricks_won),
        spades_broken=message.spades_broken,
        scores=tuple(message.scores),
        bags=tuple(message.bags),
        hand_results=tuple(
            _hand_scored_from(result, f"{field}.hand_results[{index}]")
            for index, result in enumerate(message.hand_results)
        ),
        legal_actions=tuple(
            action_from_proto(action, f"{field}.legal_actions[{index}]")
            for index, action in enumerate(message.legal_actions)
        ),
        seed_commitment=message.seed_commitment,
        seed=message.seed or None,
        end=_match_ended_from(message.end, f"{field}.end") if message.HasField("end") else None,
        substituted=_seats_from_proto(message.substituted, f"{field}.substituted"),
    )
