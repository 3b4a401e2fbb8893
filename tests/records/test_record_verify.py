"""verify: the seed matches its commitment, and the first dealer and every deal come from it."""

from __future__ import annotations

import hashlib

import pytest

from spades.engine import events as ev
from spades.records import VerificationError, build_record, verify
from spades.v1 import cards_pb2, record_pb2


def hands(events: list[ev.Event]) -> tuple[int, ...]:
    return tuple(e.hand_number for e in events if isinstance(e, ev.HandStarted))


def test_every_match_verifies(match: list[ev.Event]) -> None:
    result = verify(build_record(match))
    created = match[0]
    assert isinstance(created, ev.TableCreated)
    assert result.commitment == hashlib.sha256(created.seed or b"").digest()
    assert result.first_dealer == next(e.dealer for e in match if isinstance(e, ev.HandStarted))
    assert sorted(result.shuffled_hands + result.preset_hands) == list(hands(match))
    assert "as published" in result.lines()[0]


def test_preset_deals_are_reported(matches: dict[str, list[ev.Event]]) -> None:
    result = verify(build_record(matches["preset first deal"]))
    assert result.preset_hands == (1,)
    assert result.shuffled_hands == (2,)
    assert any(
        "preset deals: hand 1 given by the table's operator" in line for line in result.lines()
    )


def with_seed(record: record_pb2.GameRecord, seed: bytes) -> None:
    record.seed = seed  # TableCreated gets its seed from the record (events_of)
    for event in record.events:
        if event.HasField("seed_revealed"):
            event.seed_revealed.seed = seed


def test_a_wrong_seed_fails_the_commitment(matches: dict[str, list[ev.Event]]) -> None:
    record = build_record(matches["default"])
    with_seed(record, bytes(32))
    with pytest.raises(VerificationError, match="bad commitment: SHA-256 of the seed is"):
        verify(record)


def test_a_seed_that_disagrees_with_the_revealed_one_fails(
    matches: dict[str, list[ev.Event]],
) -> None:
    record = build_record(matches["default"])
    record.seed = bytes(32)
    # TableCreated takes the record's seed (spades.v1 has no seed field in it any more), so the
    # disagreement shows against the revealed one.
    with pytest.raises(VerificationError, match="differs from the seed in SeedRevealed"):
        verify(record)


def test_a_wrong_commitment_fails(matches: dict[str, list[ev.Event]]) -> None:
    record = build_record(matches["default"])
    record.seed_commitment = record.events[0].table_created.seed_commitment = bytes(32)
    with pytest.raises(VerificationError, match="bad commitment"):
        verify(record)
    record.events[0].table_created.seed_commitment = hashlib.sha256(record.seed).digest()
    with pytest.raises(VerificationError, match="record's seed commitment differs"):
        verify(record)


def test_a_tampered_deal_fails_naming_the_hand(matches: dict[str, list[ev.Event]]) -> None:
    events = matches["default"]
    record = build_record(events)
    second_hand = [i for i, e in enumerate(events) if isinstance(e, ev.HandStarted)][1]
    south = record.events[second_hand + 3].cards_dealt
    west = record.events[second_hand + 4].cards_dealt
    south_card, west_card = cards_pb2.Card(), cards_pb2.Card()
    south_card.CopyFrom(south.cards[0])
    west_card.CopyFrom(west.cards[0])
    south.cards[0].CopyFrom(west_card)
    west.cards[0].CopyFrom(south_card)
    with pytest.raises(
        VerificationError, match="hand 2: South was dealt other cards than the seed"
    ):
        verify(record)


def test_a_tampered_first_dealer_fails(matches: dict[str, list[ev.Event]]) -> None:
    events = matches["default"]
    record = build_record(events)
    index = next(i for i, e in enumerate(events) if isinstance(e, ev.HandStarted))
    started = record.events[index].hand_started
    started.dealer = cards_pb2.Seat.ValueType(started.dealer % 4 + 1)
    with pytest.raises(VerificationError, match="first dealer: the seed draws"):
        verify(record)


def test_an_unfinished_public_record_cannot_be_verified_yet(unfinished: list[ev.Event]) -> None:
    with pytest.raises(VerificationError, match="no seed"):
        verify(build_record(unfinished))
