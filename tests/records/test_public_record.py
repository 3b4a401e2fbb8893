"""The public record of an unfinished match shows only what a spectator sees: no card of any
deal, look or pass, no seed and no preset deal."""

from __future__ import annotations

from google.protobuf.message import Message

from spades.engine import PassCards
from spades.engine import events as ev
from spades.protocol import card_from_proto
from spades.records import build_record, events_of, record_to_json
from spades.v1 import cards_pb2


def cards_in(message: Message) -> list[cards_pb2.Card]:
    """Every Card message anywhere inside ``message``."""
    found = []
    for field, value in message.ListFields():
        if field.message_type is None:
            continue
        values = value if field.is_repeated else [value]
        for item in values:
            if isinstance(item, cards_pb2.Card):
                found.append(item)
            else:
                found.extend(cards_in(item))
    return found


def test_no_hidden_card_and_no_seed(unfinished: list[ev.Event]) -> None:
    assert not any(isinstance(event, ev.MatchEnded) for event in unfinished)
    record = build_record(unfinished, table_id="t-7")
    assert record.seed == b""
    created = record.events[0].table_created
    # No field of spades.v1.TableCreated can hold the seed or preset deals any more.
    assert not {"seed", "preset_deals"} & set(created.DESCRIPTOR.fields_by_name)
    assert len(record.preset_deals) == 0
    assert created.seed_commitment == record.seed_commitment != b""
    kinds = {event.WhichOneof("kind") for event in record.events}
    assert {"cards_dealt", "cards_shown", "cards_passed", "turn_timed_out"} <= kinds
    for event in record.events:
        kind = event.WhichOneof("kind")
        if kind in ("cards_dealt", "cards_shown", "cards_passed"):
            assert not cards_in(event), kind
        if kind in ("cards_dealt", "cards_passed"):
            assert getattr(event, kind).card_count > 0


def test_the_only_cards_are_the_ones_played(unfinished: list[ev.Event]) -> None:
    # A timed-out card pass names its cards in TurnTimedOut too: those must be hidden as well.
    assert any(
        isinstance(e, ev.TurnTimedOut) and isinstance(e.automatic_action, PassCards)
        for e in unfinished
    )
    record = build_record(unfinished)
    played = {e.card for e in unfinished if isinstance(e, ev.CardPlayed)}
    shown = {card_from_proto(card) for card in cards_in(record)}
    assert shown <= played


def test_the_public_record_reads_back_as_spectator_events(unfinished: list[ev.Event]) -> None:
    record = build_record(unfinished)
    assert all(
        getattr(event, "cards", ()) is None
        for event in events_of(record)
        if isinstance(event, ev.CardsDealt | ev.CardsShown | ev.CardsPassed)
    )
    assert '"seed"' not in record_to_json(record).replace('"seedCommitment"', "")


def test_a_finished_match_keeps_its_seed(matches: dict[str, list[ev.Event]]) -> None:
    events = matches["default"]
    created = events[0]
    assert isinstance(created, ev.TableCreated)
    record = build_record(events)
    assert record.seed == created.seed
    assert events_of(record) == events
