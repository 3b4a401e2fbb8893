"""The text renderer and the demo: a readable account and a compact score table."""

from __future__ import annotations

import pytest

from spades.demo import main as demo_main
from spades.demo import play_random_match
from spades.engine import events as ev
from spades.engine.views import redact
from spades.records import render_match, render_score_table, score_table, score_table_json
from spades.records.tournament import render_standings
from spades.v1 import tournament_pb2


def test_the_account_tells_every_hand(matches: dict[str, list[ev.Event]]) -> None:
    events = matches["blind nil with card pass"]
    text = render_match(events, table_id="t-3")
    assert text.startswith("Spades match at table t-3\nRules: blind nil, blind nil pass 2, ")
    assert "Players: North: North (bot), East: East (bot)" in text
    hands = [e for e in events if isinstance(e, ev.HandStarted)]
    for started in hands:
        assert f"Hand {started.hand_number}, dealt by" in text
    assert text.count("  Bids: ") == len(hands)
    assert text.count("Trick 13: ") == len(hands)
    assert "bids Blind Nil" in text and "passes 2 cards to" in text
    assert "Side         Bids" in text
    assert "Winner: " in text and "Seed revealed: " in text
    assert "♠" in text
    first_trick = next(line for line in text.splitlines() if "Trick  1: " in line)
    assert first_trick.split(": ")[1].split(",")[0].split()[1] == "leads"


def test_the_account_marks_the_clock_and_concessions(matches: dict[str, list[ev.Event]]) -> None:
    assert "(time ran out)" in render_match(matches["short clock, timeouts"])
    assert "Automatic play this hand" in render_match(matches["short clock, timeouts"])
    table = score_table(matches["short clock, timeouts"])
    assert any(table.automatic_play)
    assert "* automatic play" in render_score_table(table)
    hands = score_table_json(table)["hands"]
    assert any(hand["automatic_play"] for hand in hands)
    assert "concedes the match." in render_match(matches["concession"])


def test_hidden_cards_are_counted(unfinished: list[ev.Event]) -> None:
    text = render_match([redact(event, None) for event in unfinished])
    assert "13 cards (hidden) (face down)" in text or "13 cards (hidden)" in text
    assert "The match is not over." in text


def test_cutthroat_sides_are_players(matches: dict[str, list[ev.Event]]) -> None:
    table = score_table(matches["cutthroat with jokers"])
    assert table.sides == ("North", "East", "South")
    assert "BJ" in render_match(matches["cutthroat with jokers"])


def test_score_table_matches_the_hand_scores(match: list[ev.Event]) -> None:
    table = score_table(match)
    scored = [e for e in match if isinstance(e, ev.HandScored)]
    assert [number for number, _ in table.hands] == [e.hand_number for e in scored]
    for (_, lines), event in zip(table.hands, scored, strict=True):
        for line, side in zip(lines, event.sides, strict=True):
            assert (line.points, line.bags, line.total, line.total_bags) == (
                side.hand_points, side.bags, side.total_score, side.total_bags,
            )  # fmt: skip
            assert line.tricks == sum(result.tricks for result in side.seat_results)
    assert table.automatic_play == tuple(event.automatic_play for event in scored)
    text = render_score_table(table)
    assert text.splitlines()[1].startswith("Hand | Bid")
    # A hand with automatic play is starred, and named in a footnote (with its blank line).
    footnote = 2 if any(event.automatic_play for event in scored) else 0
    assert len(text.splitlines()) == 3 + len(scored) + footnote + 2
    data = score_table_json(table)
    assert data["winner"]["final_scores"] == list(match[-2].final_scores)  # type: ignore[union-attr]


def test_the_demo_plays_and_prints_a_bounded_match(capsys: pytest.CaptureFixture[str]) -> None:
    assert demo_main(["--hands", "2", "--seed", "00" * 32]) == 0
    out = capsys.readouterr().out
    assert "Hand 2, dealt by" in out and "Hand 3," not in out
    assert "Rules: 2 hands" in out
    events = play_random_match(seed=bytes(32))
    assert isinstance(events[-1], ev.SeedRevealed)


def test_the_demo_refuses_a_bad_seed(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        demo_main(["--seed", "xyz"])
    assert "not hexadecimal" in capsys.readouterr().err


def test_the_standings_show_every_entrant_name_whole() -> None:
    """Account names run to 32 characters; two that share their first 24 stay apart, and the
    columns after the names stay in line."""
    names = ["North Shore Bidding Club — Alpha", "North Shore Bidding Club — Omega", "Ada"]
    standings = tournament_pb2.Standings(
        lines=[
            tournament_pb2.StandingsLine(rank=rank, name=name, match_points=3 - rank, boards=4)
            for rank, name in enumerate(names, start=1)
        ]
    )
    header, *rows = render_standings(standings).splitlines()
    for row, name in zip(rows, names, strict=True):
        assert f"  {name} " in row, row
    end = header.index("MP") + len("MP")  # the match points, right-aligned under "MP"
    assert [row[end - 1 : end + 1] for row in rows] == ["2 ", "1 ", "0 "], rows
