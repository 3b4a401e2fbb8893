"""Sealed notes in a finished record: ``spades-record verify`` checks every action's commitment
against its revealed note (or the empty one), and ``show`` prints each note under the line of
its bid or card, harmless to a terminal."""

from __future__ import annotations

from pathlib import Path

import pytest

from spades import notes, protocol
from spades.engine import events as ev
from spades.records import VerificationError, build_record, save_record, verify
from spades.records.cli import main
from spades.v1 import record_pb2

KEY = bytes(range(32, 64))


def sealed(events: list[ev.Event], chosen: dict[type, str]) -> record_pb2.GameRecord:
    """The finished record of ``events`` as the server makes it: every action committed to its
    note, the first action of each kind in ``chosen`` with that note, the rest with none."""
    record = build_record(events, table_id="t-notes")
    record.note_key = KEY
    for message, event in zip(record.events, events, strict=True):
        if event.actor is None:
            continue
        text = chosen.pop(type(event), "")
        message.note_sha256 = notes.note_digest(KEY, message.sequence, text.encode())
        if text:
            record.notes.add(
                sequence=message.sequence, seat=protocol.seat_to_proto(event.actor), text=text
            )
    return record


@pytest.fixture
def noted(matches: dict[str, list[ev.Event]]) -> record_pb2.GameRecord:
    return sealed(
        matches["blind nil with card pass"],
        {
            ev.BlindNilChosen: "blind: we are far behind",
            ev.BidMade: "two spades\nand a void",
            ev.CardsPassed: "my two best spades",
            ev.CardPlayed: "\x1b[31mred\x1b[0m and low",
        },
    )


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_show_prints_each_note_under_its_action(
    noted: record_pb2.GameRecord, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "noted.json"
    save_record(noted, path)
    code, out, err = run(capsys, "show", str(path))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    bids = next(index for index, line in enumerate(lines) if line.startswith("  Bids: "))
    assert "(bid " in lines[bids + 1] and lines[bids + 1].endswith("): two spades")
    assert lines[bids + 2].strip() == "and a void"
    trick = next(index for index, line in enumerate(lines) if line.startswith("  Trick  1:"))
    assert lines[trick + 1].endswith(r"): \x1b[31mred\x1b[0m and low")
    assert "\x1b" not in out, "a note's escape reached the terminal"
    assert any(line.endswith("(Blind Nil): blind: we are far behind") for line in lines)
    assert any(line.endswith("(pass): my two best spades") for line in lines)

    code, out, err = run(capsys, "verify", str(path))
    assert (code, err) == (0, "")
    assert "sealed notes: 4 revealed; the commitments of all" in out


def test_a_concession_note_is_shown_after_the_unfinished_trick(
    matches: dict[str, list[ev.Event]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = sealed(matches["concession"], {ev.Conceded: "no way back"})
    path = tmp_path / "conceded.json"
    save_record(record, path)
    code, out, _ = run(capsys, "show", str(path))
    lines = out.splitlines()
    conceded = next(index for index, line in enumerate(lines) if "concedes the match" in line)
    assert code == 0 and lines[conceded + 1].endswith("(concedes): no way back")
    assert verify(record).revealed_notes == 1


def test_a_changed_missing_or_stray_note_fails_verification(
    noted: record_pb2.GameRecord,
) -> None:
    assert verify(noted).committed_actions > 50
    changed = record_pb2.GameRecord()
    changed.CopyFrom(noted)
    changed.notes[1].text = "two spades and a singleton"
    with pytest.raises(VerificationError, match="does not match its revealed note"):
        verify(changed)
    dropped = record_pb2.GameRecord()
    dropped.CopyFrom(noted)
    del dropped.notes[0]
    with pytest.raises(VerificationError, match="the empty note"):
        verify(dropped)
    stray = record_pb2.GameRecord()
    stray.CopyFrom(noted)
    stray.notes.add(sequence=1, text="on TableCreated")
    with pytest.raises(VerificationError, match="committed to none"):
        verify(stray)
    keyless = record_pb2.GameRecord()
    keyless.CopyFrom(noted)
    keyless.note_key = b""
    with pytest.raises(VerificationError, match="no key"):
        verify(keyless)
