"""spades.protocol: engine values <-> spades.v1 messages, both ways, and malformed input."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from spades.engine import (
    BID,
    BLIND,
    CARDS,
    CLAIM_EXTENSION,
    CONCEDE,
    LOOK,
    Action,
    Bid,
    Card,
    Clock,
    Direction,
    InvalidRules,
    PassCards,
    PlayCard,
    Rules,
    apply_seat,
    leave_seat,
    new_match,
    redact,
)
from spades.engine import events as ev
from spades.protocol import (
    ProtocolError,
    action_from_proto,
    action_to_proto,
    bid_from_proto,
    bid_to_proto,
    card_from_proto,
    card_to_proto,
    event_from_proto,
    event_to_proto,
    rules_from_proto,
    rules_to_proto,
    seat_from_proto,
    seat_to_proto,
    stored_event,
)
from spades.records import build_record, events_of
from spades.v1 import actions_pb2, cards_pb2, events_pb2, rules_pb2

EVENT_TYPES = {
    ev.TableCreated, ev.SeatTaken, ev.SeatLeft, ev.HandStarted, ev.CardsDealt,
    ev.BlindNilChosen, ev.CardsShown, ev.BidMade, ev.CardsPassed, ev.CardPlayed, ev.TrickWon,
    ev.HandScored, ev.TurnTimedOut, ev.ExtensionClaimed, ev.Conceded, ev.MatchEnded,
    ev.SeedRevealed, ev.SeatSubstituted, ev.SeatReclaimed,
}  # fmt: skip


def through_wire(event: ev.Event) -> ev.Event:
    message = event_to_proto(event)
    parsed = events_pb2.Event.FromString(message.SerializeToString())
    return event_from_proto(parsed)


def test_every_event_of_every_match_round_trips_for_every_viewer(
    matches: dict[str, list[ev.Event]],
) -> None:
    seen: set[type] = set()
    for events in matches.values():
        players = events[0].rules.players  # type: ignore[union-attr]
        for event in events:
            seen.add(type(event))
            for viewer in (None, *range(players)):
                shown = redact(event, viewer)
                assert through_wire(shown) == shown
    state, _ = new_match(Rules(), seed=bytes(32))
    state, _ = apply_seat(state, 1, "Eve")
    _, left = leave_seat(state, 1)
    assert through_wire(left[0]) == left[0]
    seen.add(type(left[0]))
    assert seen == EVENT_TYPES


def test_the_matches_exercise_blind_nil_passes_the_clock_and_concession(
    matches: dict[str, list[ev.Event]],
) -> None:
    everything = [event for events in matches.values() for event in events]
    assert any(isinstance(e, ev.BlindNilChosen) and e.blind for e in everything)
    assert any(isinstance(e, ev.CardsPassed) for e in everything)
    assert any(isinstance(e, ev.Conceded) for e in everything)
    timed_out = {type(e.automatic_action) for e in everything if isinstance(e, ev.TurnTimedOut)}
    assert {PlayCard, type(BID[1]), type(LOOK), PassCards} <= timed_out
    assert any(isinstance(e, ev.ExtensionClaimed) for e in everything)


def test_event_envelope_is_left_unstored_and_stored_event_fills_it() -> None:
    event = ev.Conceded(2)
    assert event_to_proto(event).sequence == 0
    assert not event_to_proto(event).HasField("time")
    when = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
    stored = stored_event(event, 7, when)
    assert stored.sequence == 7
    assert stored.time.ToDatetime(tzinfo=UTC) == when
    assert stored.conceded.seat == cards_pb2.SEAT_SOUTH
    assert event_from_proto(stored) == event


def test_redacted_fields_travel_empty_with_their_counts() -> None:
    _, events = new_match(Rules(), seed=bytes(32), preset_deals=())
    created = redact(events[0], None)
    message = event_to_proto(created).table_created
    # The seed and preset deals have no field in spades.v1 any more: nothing to leave empty.
    assert "seed" not in message.DESCRIPTOR.fields_by_name
    assert "preset_deals" not in message.DESCRIPTOR.fields_by_name
    assert message.seed_commitment == events[0].seed_commitment  # type: ignore[union-attr]
    dealt = event_to_proto(ev.CardsDealt(1, None, 13, False)).cards_dealt
    assert (len(dealt.cards), dealt.card_count) == (0, 13)
    passed = event_to_proto(ev.CardsPassed(0, 2, None, 2)).cards_passed
    assert (len(passed.cards), passed.card_count) == (0, 2)
    assert event_from_proto(event_to_proto(ev.CardsShown(3, None))) == ev.CardsShown(3, None)


def test_preset_deals_and_seed_round_trip() -> None:
    # They travel in a whole record (and in the server's private log: tests/server/
    # test_journal.py), never in a spades.v1 event.
    deal = [list(range(seat * 13, seat * 13 + 13)) for seat in range(4)]
    _, events = new_match(Rules(), seed=bytes(range(32)), preset_deals=[deal])
    record = build_record(events, public=False)
    assert events_of(record)[0] == events[0]
    assert len(record.preset_deals[0].hands) == 4
    created = events[0]
    assert isinstance(created, ev.TableCreated)
    assert through_wire(created) == dataclasses.replace(created, seed=None, preset_deals=None)


def test_cards_map_suit_and_face_rank() -> None:
    for card in CARDS:
        assert card_from_proto(card_to_proto(card)) == card
    queen = card_to_proto(Card.parse("Q♠"))
    assert (queen.suit, queen.rank) == (cards_pb2.SUIT_SPADES, cards_pb2.RANK_QUEEN)
    two = card_to_proto(Card.parse("2C"))
    assert (two.suit, two.rank) == (cards_pb2.SUIT_CLUBS, cards_pb2.RANK_TWO)
    little = card_to_proto(Card.parse("LJ"))
    assert (little.suit, little.rank) == (cards_pb2.SUIT_UNSPECIFIED, 15)
    assert card_to_proto(Card.parse("BJ")).rank == cards_pb2.RANK_BIG_JOKER


def test_seats_are_one_more_in_the_protocol() -> None:
    assert [seat_to_proto(seat) for seat in range(4)] == [
        cards_pb2.SEAT_NORTH, cards_pb2.SEAT_EAST, cards_pb2.SEAT_SOUTH, cards_pb2.SEAT_WEST,
    ]  # fmt: skip
    assert [seat_from_proto(value) for value in range(1, 5)] == [0, 1, 2, 3]


def test_actions_round_trip() -> None:
    actions: list[Action] = [BLIND, LOOK, CONCEDE, CLAIM_EXTENSION, *BID[:14]]
    actions.append(PassCards((CARDS[3], CARDS[40])))
    actions += [PlayCard(card) for card in CARDS]
    for action in actions:
        assert action_from_proto(action_to_proto(action)) == action
    assert action_to_proto(BID[0]).bid.kind == actions_pb2.Bid.KIND_NIL
    assert action_to_proto(BID[5]).bid == actions_pb2.Bid(
        kind=actions_pb2.Bid.KIND_TRICKS, tricks=5
    )


def test_a_blind_nil_bid_as_an_action_is_the_blind_nil_choice() -> None:
    message = actions_pb2.Action(bid=actions_pb2.Bid(kind=actions_pb2.Bid.KIND_BLIND_NIL))
    assert action_from_proto(message) == BLIND


def test_bids_round_trip() -> None:
    for bid in (Bid.NIL, Bid.BLIND_NIL, Bid(1), Bid(13), Bid(18)):
        assert bid_from_proto(bid_to_proto(bid)) == bid


RULE_SETS = [
    Rules(),
    Rules(players=3, jokers=True, target_score=250, max_hands=10),
    Rules(blind_nil=True, blind_nil_deficit=150, blind_nil_pass_cards=2),
    Rules(blind_nil=True, blind_nil_deficit=0),
    Rules(nil_allowed=False, spades_must_be_broken=False, direction=Direction.COUNTER_CLOCKWISE),
    Rules(two_of_clubs_leads=True, minimum_team_bid=4, nil_tricks_count_for_partner=True),
    Rules(bag_limit=5, bag_penalty=0, loss_threshold=-200, clock=Clock(500, 0)),
]


@pytest.mark.parametrize(
    "rules", RULE_SETS, ids=lambda rules: ", ".join(rules.badges()) or "default"
)
def test_rules_round_trip(rules: Rules) -> None:
    message = rules_to_proto(rules)
    assert rules_from_proto(rules_pb2.RuleSet.FromString(message.SerializeToString())) == rules


def test_rules_to_proto_writes_every_value_out() -> None:
    message = rules_to_proto(Rules())
    assert (message.players, message.target_score, message.bag_limit) == (4, 500, 10)
    assert message.HasField("bag_penalty") and message.bag_penalty == 100
    assert message.blind_nil_deficit == 100
    assert message.direction == rules_pb2.PLAY_DIRECTION_CLOCKWISE
    assert (message.clock.turn_millis, message.clock.extension_millis) == (30_000, 30_000)
    assert message.clock.HasField("extension_millis")


def test_rules_from_proto_reads_zero_values_as_the_defaults() -> None:
    assert rules_from_proto(rules_pb2.RuleSet()) == Rules()
    assert rules_from_proto(rules_pb2.RuleSet(bag_penalty=0)).bag_penalty == 0
    clock = rules_pb2.TurnClock(turn_millis=0)
    assert rules_from_proto(rules_pb2.RuleSet(clock=clock)).clock == Clock()
    clock = rules_pb2.TurnClock(turn_millis=200, extension_millis=0)
    assert rules_from_proto(rules_pb2.RuleSet(clock=clock)).clock == Clock(200, 0)


@pytest.mark.parametrize(
    ("message", "field"),
    [
        (rules_pb2.RuleSet(players=5), "players"),
        (rules_pb2.RuleSet(target_score=50), "target_score"),
        (rules_pb2.RuleSet(nil_disabled=True, blind_nil=True), "blind_nil"),
        (
            rules_pb2.RuleSet(nil_disabled=True, nil_tricks_count_for_partner=True),
            "nil_tricks_count_for_partner",
        ),
        (rules_pb2.RuleSet(jokers=True, two_of_clubs_leads=True), "two_of_clubs_leads"),
        (rules_pb2.RuleSet(loss_threshold=10), "loss_threshold"),
        (rules_pb2.RuleSet(direction=7), "direction"),  # type: ignore[arg-type]
    ],
)
def test_impossible_rule_sets_name_the_proto_field(message: rules_pb2.RuleSet, field: str) -> None:
    with pytest.raises(InvalidRules) as caught:
        rules_from_proto(message)
    assert caught.value.field == field


def test_a_blind_nil_deficit_of_zero_is_sent_as_a_set_zero() -> None:
    rules = Rules(blind_nil=True, blind_nil_deficit=0)
    message = rules_to_proto(rules)
    assert message.HasField("blind_nil_deficit")
    assert rules_from_proto(message) == rules
    assert rules_from_proto(rules_pb2.RuleSet(blind_nil=True)).blind_nil_deficit == 100


def card(suit: int, rank: int) -> cards_pb2.Card:
    return cards_pb2.Card(suit=suit, rank=rank)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("convert", "message", "expected"),
    [
        (card_from_proto, card(9, 5), "card: unknown suit 9"),
        (card_from_proto, card(1, 1), "card: rank 1 is not a card of clubs"),
        (card_from_proto, card(4, 15), "card: a joker has no suit"),
        (card_from_proto, card(0, 7), "card: a card without a suit must be a joker"),
        (action_from_proto, actions_pb2.Action(), "action: no action given"),
        (
            action_from_proto,
            actions_pb2.Action(play_card=card(2, 0)),
            "action.play_card: rank 0 is not a card of diamonds",
        ),
        (action_from_proto, actions_pb2.Action(bid=actions_pb2.Bid()), "action.bid.kind: no kind"),
        (
            action_from_proto,
            actions_pb2.Action(bid=actions_pb2.Bid(kind=actions_pb2.Bid.KIND_TRICKS)),
            "action.bid.tricks: a bid of tricks needs 1 or more",
        ),
        (
            action_from_proto,
            actions_pb2.Action(bid=actions_pb2.Bid(kind=actions_pb2.Bid.KIND_NIL, tricks=3)),
            "action.bid.tricks: a Nil bid carries no number",
        ),
        (event_from_proto, events_pb2.Event(), "event: no event given"),
        (
            event_from_proto,
            events_pb2.Event(conceded=events_pb2.Conceded()),
            "event.conceded.seat: no seat given",
        ),
        (
            event_from_proto,
            events_pb2.Event(conceded=events_pb2.Conceded(seat=9)),  # type: ignore[arg-type]
            "event.conceded.seat: unknown seat 9",
        ),
        (
            event_from_proto,
            events_pb2.Event(
                cards_dealt=events_pb2.CardsDealt(
                    seat=cards_pb2.SEAT_EAST, cards=[card(1, 2)], card_count=13
                )
            ),
            "event.cards_dealt.cards: 1 cards but card_count is 13",
        ),
        (
            event_from_proto,
            events_pb2.Event(match_ended=events_pb2.MatchEnded()),
            "event.match_ended.reason: unknown end reason 0",
        ),
        (
            event_from_proto,
            events_pb2.Event(
                hand_started=events_pb2.HandStarted(
                    hand_number=1,
                    dealer=cards_pb2.SEAT_NORTH,
                    blind_nil_eligible=[cards_pb2.SEAT_UNSPECIFIED],
                )
            ),
            "event.hand_started.blind_nil_eligible[0]: no seat given",
        ),
    ],
)
def test_malformed_messages_raise_protocol_errors_naming_the_field(
    convert: object, message: object, expected: str
) -> None:
    with pytest.raises(ProtocolError) as caught:
        convert(message)  # type: ignore[operator]
    assert isinstance(caught.value, ValueError)
    assert str(caught.value).startswith(expected)


def test_seat_out_of_range_in_the_engine_is_refused() -> None:
    with pytest.raises(ProtocolError):
        seat_to_proto(4)


def test_events_are_frozen_dataclasses_so_equality_is_field_by_field() -> None:
    # The round trips above compare with ==; that is only meaningful for value types.
    assert all(dataclasses.is_dataclass(kind) for kind in EVENT_TYPES)
