"""Records as files: canonical protobuf JSON and binary, chosen by extension or by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spades.engine import events as ev
from spades.records import (
    RecordError,
    build_record,
    events_of,
    file_format,
    load_record,
    record_from_bytes,
    record_from_json,
    record_to_bytes,
    record_to_json,
    save_record,
)


def test_json_and_binary_round_trip(match: list[ev.Event], tmp_path: Path) -> None:
    record = build_record(match, table_id="t-42")
    assert record_from_json(record_to_json(record)) == record
    assert record_from_bytes(record_to_bytes(record)) == record
    for name in ("match.json", "match.pb", "match.bin"):
        save_record(record, tmp_path / name)
        assert load_record(tmp_path / name) == record
    assert events_of(load_record(tmp_path / "match.json")) == match


def test_the_extension_chooses_the_format_and_an_explicit_format_wins(tmp_path: Path) -> None:
    assert file_format("a.JSON") == "json"
    assert file_format("a.pb") == file_format("a.bin") == "binary"
    assert file_format("a.pb", "json") == "json"
    with pytest.raises(RecordError, match="cannot tell the format"):
        file_format("a.txt")


def test_an_explicit_format_reads_and_writes_any_file_name(
    matches: dict[str, list[ev.Event]], tmp_path: Path
) -> None:
    record = build_record(matches["default"])
    save_record(record, tmp_path / "match.record", "binary")
    assert load_record(tmp_path / "match.record", "binary") == record
    save_record(record, tmp_path / "match.txt", "json")
    assert json.loads((tmp_path / "match.txt").read_text())["formatVersion"] == 1


def test_json_is_canonical_and_indented(matches: dict[str, list[ev.Event]]) -> None:
    text = record_to_json(build_record(matches["default"], table_id="t-1"))
    assert text.startswith('{\n  "formatVersion": 1,\n  "tableId": "t-1",')
    data = json.loads(text)
    assert data["events"][0]["sequence"] == "1"  # uint64 is a string in protobuf JSON
    assert "tableCreated" in data["events"][0]
    assert data["players"][0] == {"seat": "SEAT_NORTH", "name": "North", "bot": True}


def test_a_record_knows_its_players_seed_and_rules(matches: dict[str, list[ev.Event]]) -> None:
    events = matches["cutthroat with jokers"]
    record = build_record(events)
    created = events[0]
    assert isinstance(created, ev.TableCreated)
    assert record.format_version == 1
    assert record.seed == created.seed
    assert record.seed_commitment == created.seed_commitment
    assert record.shuffle_version == "spades-shuffle-v1"
    assert (record.rules.players, record.rules.jokers) == (3, True)
    assert [player.seat for player in record.players] == [1, 2, 3]
    assert [event.sequence for event in record.events] == list(range(1, len(events) + 1))


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("broken.json", b"{not json", "not a game record in JSON"),
        ("broken.json", b'{"formatVersion": "x"}', "not a game record in JSON"),
        ("broken.pb", b"\xff\xff\xff\xff", "not a binary game record"),
    ],
)
def test_unreadable_files_raise_record_errors(
    tmp_path: Path, name: str, content: bytes, expected: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(RecordError, match=expected):
        load_record(path)


def test_a_missing_file_is_a_record_error(tmp_path: Path) -> None:
    with pytest.raises(RecordError, match="No such file"):
        load_record(tmp_path / "absent.json")


def test_a_record_of_another_format_version_is_refused(matches: dict[str, list[ev.Event]]) -> None:
    record = build_record(matches["default"])
    record.format_version = 2
    with pytest.raises(RecordError, match="format version 2"):
        events_of(record)
