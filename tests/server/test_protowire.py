"""The hand-made wire format is protobuf's own: what protowire frames parses as the message,
byte for byte what the message class serialises, and read_varint reads what varint wrote."""

from __future__ import annotations

import pytest

from spades.v1 import events_pb2, play_pb2
from spades_server.store.protowire import framed, read_varint, varint


@pytest.mark.parametrize("size", [1, 127, 128, 300, 16_383, 16_384, 70_000])
def test_a_framed_field_is_what_the_message_class_serialises(size: int) -> None:
    # ActionResult.action_id = 1 (a string): its frame is the message's whole encoding (an
    # empty one is left out by the class, so sizes start at 1).
    action_id = "x" * size
    expected = play_pb2.ActionResult(action_id=action_id).SerializeToString()
    assert framed(b"\x0a", action_id.encode()) == expected
    assert play_pb2.ActionResult.FromString(expected).action_id == action_id


def test_a_batch_framed_event_by_event_parses_as_the_batch() -> None:
    events = [
        events_pb2.Event(sequence=sequence, action_id="a" * sequence * 40) for sequence in (1, 2, 5)
    ]
    data = b"".join(framed(b"\x0a", event.SerializeToString()) for event in events)
    assert list(play_pb2.Batch.FromString(data).events) == events


@pytest.mark.parametrize("value", [0, 1, 127, 128, 255, 300, 2**21, 2**35, 2**64 - 1])
def test_read_varint_reads_what_varint_wrote(value: int) -> None:
    data = b"\xff" + varint(value) + b"\x01"
    assert read_varint(data, 1) == (value, len(data) - 1)
    assert read_varint(data[:-2], 1) is None  # cut before its last byte: nothing read
