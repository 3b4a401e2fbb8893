"""spades-record: score, verify and show, their output and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from spades.engine import events as ev
from spades.records import build_record, save_record
from spades.records.cli import main


@pytest.fixture
def finished(matches: dict[str, list[ev.Event]], tmp_path: Path) -> Path:
    path = tmp_path / "match.json"
    save_record(build_record(matches["blind nil with card pass"], table_id="t-9"), path)
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_score_prints_the_table(finished: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "score", str(finished))
    assert (code, err) == (0, "")
    assert "North-South" in out and "East-West" in out
    assert len([line for line in out.splitlines() if line.strip()[:2].strip().isdigit()]) == 4
    assert "Winner:" in out


def test_score_json(
    matches: dict[str, list[ev.Event]], finished: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "score", str(finished), "--json")
    assert code == 0
    table = json.loads(out)
    scored = [e for e in matches["blind nil with card pass"] if isinstance(e, ev.HandScored)]
    assert [hand["hand"] for hand in table["hands"]] == [1, 2, 3, 4]
    assert [side["total"] for side in table["hands"][-1]["sides"]] == [
        side.total_score for side in scored[-1].sides
    ]
    assert table["winner"]["reason"] == "hand limit"


def test_verify(finished: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "verify", str(finished))
    assert (code, err) == (0, "")
    assert "as published" in out and "hands 1-4 dealt as the seed shuffles" in out
    assert out.endswith("verified\n")


def test_show(finished: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "show", str(finished))
    assert code == 0
    assert out.startswith("Spades match at table t-9\n")
    assert "Hand 1, dealt by" in out and "Trick 13:" in out and "Winner:" in out


def test_a_binary_file_and_an_explicit_format(
    matches: dict[str, list[ev.Event]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "match.dat"
    save_record(build_record(matches["default"]), path, "binary")
    assert run(capsys, "score", str(path), "--format", "binary")[0] == 0
    code, _, err = run(capsys, "score", str(path))
    assert code == 1 and "cannot tell the format" in err


def one_line_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code, out, err = run(capsys, *argv)
    assert code == 1
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("spades-record: ")
    assert "Traceback" not in err
    return err


def test_an_illegal_action_in_the_record(
    matches: dict[str, list[ev.Event]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = matches["default"]
    record = build_record(events)
    index = next(i for i, e in enumerate(events) if isinstance(e, ev.CardPlayed))
    record.events[index].card_played.seat = record.events[index + 1].card_played.seat
    path = tmp_path / "tampered.pb"
    save_record(record, path)
    err = one_line_error(capsys, "score", str(path))
    assert f"event {index}: " in err and "is illegal" in err


def test_a_bad_commitment(
    matches: dict[str, list[ev.Event]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = build_record(matches["default"])
    record.seed_commitment = record.events[0].table_created.seed_commitment = bytes(32)
    path = tmp_path / "bad.json"
    save_record(record, path)
    assert "bad commitment" in one_line_error(capsys, "verify", str(path))


def test_unreadable_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "No such file" in one_line_error(capsys, "show", str(tmp_path / "absent.json"))
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{\n  oops\n}")
    assert "not a game record in JSON" in one_line_error(capsys, "score", str(garbage))


def test_an_unfinished_public_record(
    unfinished: list[ev.Event], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "live.json"
    save_record(build_record(unfinished), path)
    assert "cannot be replayed" in one_line_error(capsys, "score", str(path))
    assert "no seed" in one_line_error(capsys, "verify", str(path))
    code, out, _ = run(capsys, "show", str(path))
    assert code == 0
    assert "13 cards (hidden)" in out and "The match is not over." in out


def test_the_installed_script(finished: Path) -> None:
    script = Path(sys.executable).parent / "spades-record"
    assert script.exists(), "the console script is installed with the SDK (make install)"
    result = subprocess.run(
        [str(script), "score", str(finished)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "Winner:" in result.stdout
    missing = subprocess.run(
        [str(script), "verify", str(finished.with_name("nope.json"))],
        capture_output=True,
        text=True,
        check=False,
    )
    assert missing.returncode == 1
    assert missing.stderr.startswith("spades-record: ") and "Traceback" not in missing.stderr
