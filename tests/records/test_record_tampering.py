"""A record changed after the match (a card, a bid, a score, a deal) fails to replay, and the
error names the first event that differs."""

from __future__ import annotations

import pytest

from spades.engine import events as ev
from spades.records import ReplayError, build_record, replay
from spades.v1 import actions_pb2, cards_pb2, record_pb2


def first(events: list[ev.Event], kind: type, after: int = 0) -> int:
    return next(i for i, event in enumerate(events) if i >= after and isinstance(event, kind))


def replay_error(record: record_pb2.GameRecord) -> ReplayError:
    with pytest.raises(ReplayError) as caught:
        replay(record)
    return caught.value


@pytest.fixture
def events(matches: dict[str, list[ev.Event]]) -> list[ev.Event]:
    return matches["default"]


def test_a_card_the_player_does_not_hold_is_illegal(events: list[ev.Event]) -> None:
    record = build_record(events)
    index = first(events, ev.CardPlayed)
    played = record.events[index].card_played
    hand = next(
        e for e in events[:index] if isinstance(e, ev.CardsDealt) and e.seat == played.seat - 1
    )
    other = next(n for n in range(52) if n not in (hand.cards or ()))
    played.card.suit = cards_pb2.Suit.ValueType(other // 13 + 1)
    played.card.rank = cards_pb2.Rank.ValueType(other % 13 + 2)
    error = replay_error(record)
    assert error.index == index
    assert "is illegal: you do not hold" in str(error)
    assert str(error).startswith(f"event {index}: ")


def test_a_changed_card_in_a_trick_fails_at_the_trick(events: list[ev.Event]) -> None:
    # Swap two cards a player legally could have played: the winner or winning card moves.
    record = build_record(events)
    index = first(events, ev.TrickWon)
    won = record.events[index].trick_won
    won.winning_card.rank = cards_pb2.Rank.ValueType(2 if won.winning_card.rank != 2 else 3)
    error = replay_error(record)
    assert error.index == index
    assert "TrickWon.winning_card" in str(error)


def test_a_changed_bid_fails_where_the_engine_scores_it(events: list[ev.Event]) -> None:
    record = build_record(events)
    index = first(events, ev.BidMade)
    bid = record.events[index].bid_made.bid
    bid.tricks = 13 if bid.tricks != 13 else 12
    bid.kind = bid.KIND_TRICKS
    error = replay_error(record)
    assert error.index == first(events, ev.HandScored)
    assert ".bid.tricks is " in str(error)
    assert "in the record, but the engine produces 13" in str(error)


def test_an_illegal_bid_fails_at_the_bid(matches: dict[str, list[ev.Event]]) -> None:
    events = matches["no nil, small bags, mercy"]
    record = build_record(events)
    index = first(events, ev.BidMade)
    record.events[index].bid_made.bid.CopyFrom(actions_pb2.Bid(kind=actions_pb2.Bid.KIND_NIL))
    error = replay_error(record)
    assert error.index == index
    assert "Nil is not allowed at this table" in str(error)


def test_a_changed_score_fails_at_the_score(events: list[ev.Event]) -> None:
    record = build_record(events)
    index = first(events, ev.HandScored)
    record.events[index].hand_scored.sides[1].total_score += 10
    error = replay_error(record)
    assert error.index == index
    assert "HandScored.sides[1].total_score" in str(error)


def test_a_changed_deal_fails_at_the_deal(events: list[ev.Event]) -> None:
    record = build_record(events)
    second_hand = first(events, ev.HandStarted, after=first(events, ev.HandScored))
    north, east = (
        record.events[second_hand + 1].cards_dealt,
        record.events[second_hand + 2].cards_dealt,
    )
    north_card, east_card = cards_pb2.Card(), cards_pb2.Card()
    north_card.CopyFrom(north.cards[0])
    east_card.CopyFrom(east.cards[0])
    north.cards[0].CopyFrom(east_card)
    east.cards[0].CopyFrom(north_card)
    error = replay_error(record)
    assert error.index == second_hand + 1
    assert "CardsDealt.cards" in str(error)


def test_an_event_no_action_causes_is_named(events: list[ev.Event]) -> None:
    record = build_record(events)
    index = first(events, ev.CardPlayed)
    record.events.insert(index, record.events[index])
    record.events[index].Clear()
    record.events[index].trick_won.trick_number = 1
    record.events[index].trick_won.winner = cards_pb2.SEAT_NORTH
    record.events[index].trick_won.winning_card.CopyFrom(
        cards_pb2.Card(suit=cards_pb2.SUIT_CLUBS, rank=cards_pb2.RANK_TWO)
    )
    error = replay_error(record)
    assert error.index == index
    assert "the record has TrickWon where the engine waits for a player's action" in str(error)
