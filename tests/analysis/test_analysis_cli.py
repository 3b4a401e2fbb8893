"""spades-record analyse as a real process on a real finished match: the invariants of every
judged play, the perfect seat's accuracy, determinism across processes, and refusals (a
tampered record, an unfinished match)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from spades.analysis.decisions import play_decisions
from spades.analysis.judge import judge_play
from spades.engine import Card
from spades.engine import events as ev
from spades.records import build_record, load_record, save_record
from tests.analysis.conftest import PERFECT_SEAT

#: A whole hand solved in every world takes minutes on a loaded machine: pytest's default
#: two-minute guard is too short for the module's analyses (a safety net, not a bound).
pytestmark = pytest.mark.timeout(1800)

WORLDS = 2
ANALYSIS_SEED = "tests"
BIN = Path(sys.executable).parent


def analyse_process(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "spades-record"), "analyse", *argv],
        capture_output=True,
        text=True,
        check=False,
        timeout=1800,
    )


@pytest.fixture(scope="module")
def analysis(record_file: Path) -> dict[str, Any]:
    result = analyse_process(
        str(record_file), "--json", "--worlds", str(WORLDS), "--jobs", "2", "--seed", ANALYSIS_SEED
    )
    assert result.returncode == 0, result.stderr
    parsed: dict[str, Any] = json.loads(result.stdout)
    return parsed


def test_every_card_played_is_judged(
    analysis: dict[str, Any], match_events: list[ev.Event]
) -> None:
    played = [(e.seat, str(e.card)) for e in match_events if isinstance(e, ev.CardPlayed)]
    letters = "NESW"
    assert [("NESW".index(p["seat"]), p["card"]) for p in analysis["plays"]] == played
    assert {p["hand"] for p in analysis["plays"]} == {1}
    assert sorted({p["trick"] for p in analysis["plays"]}) == list(range(1, 14))
    assert set(analysis["seats"]) == set(letters) and set(analysis["sides"]) == {"NS", "EW"}


def test_the_invariants_of_each_play(analysis: dict[str, Any]) -> None:
    for play in analysis["plays"]:
        values: dict[str, int] = play["values"]
        assert play["card"] in values
        assert play["best"] and set(play["best"]) <= set(values)  # best is among the legal
        top = max(values.values())
        assert all(values[card] == top for card in play["best"])
        assert play["loss_points"] == top - values[play["card"]] >= 0
        assert play["loss_tricks"] >= 0 and play["expected_loss_points"] >= 0
        if len(values) == 1:
            assert (play["loss_points"], play["expected_loss_se"], play["worlds"]) == (0, 0.0, 0)
        else:
            assert play["worlds"] == WORLDS and play["expected_loss_se"] >= 0


def test_the_seat_that_always_plays_a_best_card_is_accurate(analysis: dict[str, Any]) -> None:
    north = analysis["seats"]["NESW"[PERFECT_SEAT]]
    assert (north["accuracy"], north["loss_points"], north["costliest"]) == (1.0, 0, [])
    # The cheapest card every time is not perfect: the totals see it.
    others = [analysis["seats"][letter] for letter in "ESW"]
    assert sum(seat["loss_points"] for seat in others) > 0
    assert any(seat["accuracy"] < 1 for seat in others)
    costliest = max(
        (play for play in analysis["plays"] if play["seat"] != "N"),
        key=lambda play: play["loss_points"],
    )
    assert costliest["loss_points"] in [
        mistake["loss_points"]
        for seat in analysis["seats"].values()
        for mistake in seat["costliest"][:1]
    ]


def test_the_par_sits_beside_the_bids(analysis: dict[str, Any]) -> None:
    (hand,) = analysis["hands"]
    assert hand["hand"] == 1 and set(hand["bids"]) == set("NESW")
    assert sum(hand["par_tricks"].values()) == 13 and sum(hand["tricks"].values()) == 13


def test_the_same_seed_gives_the_same_numbers_in_any_process(
    analysis: dict[str, Any], record_file: Path
) -> None:
    # The late decisions, judged again here, one at a time: the worlds follow the seed, not
    # the worker that drew them.
    late = [d for d in play_decisions(load_record(record_file)) if d.trick >= 9]
    by_place = {(p["trick"], p["seat"]): p for p in analysis["plays"]}
    for decision in late:
        judged = judge_play(decision, WORLDS, ANALYSIS_SEED.encode())
        logged = by_place[(decision.trick, "NESW"[decision.seat])]
        assert judged.expected_loss_points is not None
        assert round(judged.expected_loss_points, 3) == logged["expected_loss_points"]
        assert judged.values == {Card.parse(card): v for card, v in logged["values"].items()}


def test_the_rich_tables(record_file: Path) -> None:
    result = analyse_process(str(record_file), "--worlds", "1", "--jobs", "2")
    assert result.returncode == 0, result.stderr
    assert "Hand 1" in result.stdout and "Totals" in result.stdout
    assert "par" in result.stdout and "Costliest mistakes" in result.stdout


def test_a_tampered_record_is_refused(match_events: list[ev.Event], tmp_path: Path) -> None:
    # North's first two cards swapped: the same cards, in another order, under the same
    # seed commitment; the engine does not reproduce it.
    norths = [
        (index, event)
        for index, event in enumerate(match_events)
        if isinstance(event, ev.CardPlayed) and event.seat == 0
    ]
    (first, first_play), (second, second_play) = norths[:2]
    events = list(match_events)
    events[first] = replace(first_play, card=second_play.card)
    events[second] = replace(second_play, card=first_play.card)
    tampered = tmp_path / "tampered.json"
    save_record(build_record(events, table_id="t-tampered"), tampered)
    for command in ([str(BIN / "spades-record")], [str(BIN / "spades"), "record"]):
        result = subprocess.run(
            [*command, "analyse", str(tampered), "--worlds", "1"],
            capture_output=True,
            text=True,
            check=False,
            timeout=600,
        )
        assert result.returncode == 1, result.stdout
        assert result.stdout == "" and "Traceback" not in result.stderr
        assert result.stderr.startswith(("spades-record: event ", "spades record: event "))


def test_an_unfinished_match_is_refused(match_events: list[ev.Event], tmp_path: Path) -> None:
    unfinished = tmp_path / "unfinished.json"
    save_record(build_record(match_events[:40], table_id="t-live"), unfinished)
    result = analyse_process(str(unfinished), "--worlds", "1")
    assert result.returncode == 1
    assert "not finished" in result.stderr and "live table" in result.stderr


def _children(pid: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            # After "(command)": state, then the parent's pid.
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.add(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_the_workers_leave_when_the_analysis_is_killed(record_file: Path) -> None:
    analysis = subprocess.Popen(
        [str(BIN / "spades-record"), "analyse", str(record_file), "--jobs", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        workers: set[int] = set()
        for _ in range(6000):  # bounded: the pool's two workers (and its resource tracker)
            workers = {pid for pid in _children(analysis.pid) if _alive(pid)}
            if len(workers) >= 2 or analysis.poll() is not None:
                break
            time.sleep(0.05)
        assert len(workers) >= 2 and analysis.poll() is None
    finally:
        analysis.kill()
        analysis.wait()
    for _ in range(6000):  # bounded: each worker checks its parent every second
        if not any(_alive(pid) for pid in workers):
            break
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in workers)
