"""The arena: duplicate pairing, its statistics, and a clear margin of heuristic over random."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from spades.engine import Rules
from spades.engine import events as ev
from spades.records import events_of, load_record
from spades_bots.arena import ArenaConfig, TeamStats, pair_specs, run_arena, wilson_interval
from spades_bots.arena.cli import main
from spades_bots.arena.duplicate import play_in_process
from spades_server.app.server import SpadesServer
from tests.support.servers import running_server


def dealt(events: tuple[ev.Event, ...] | list[ev.Event]) -> list[ev.CardsDealt]:
    return [event for event in events if isinstance(event, ev.CardsDealt)]


def names_by_seat(events: tuple[ev.Event, ...] | list[ev.Event]) -> list[str]:
    seated = {event.seat: event.name for event in events if isinstance(event, ev.SeatTaken)}
    return [seated[seat] for seat in range(4)]


def check_duplicate(
    first: tuple[ev.Event, ...], second: tuple[ev.Event, ...], partner: str = ""
) -> None:
    """The same cards to the same seats, hand by hand, with the partnerships swapped.

    ``partner`` is what the second seat of a side adds to its name: on a server a table shows
    each name once, so the partner of "A heuristic" sits as "A heuristic 2"."""
    one, two = dealt(first), dealt(second)
    common = min(len(one), len(two))
    assert common >= 4 and common % 4 == 0
    assert one[:common] == two[:common]
    a, b = "A heuristic", "B random"
    assert names_by_seat(first) == [a, b, a + partner, b + partner]
    assert names_by_seat(second) == [b, a, b + partner, a + partner]


def test_the_two_matches_of_a_pair_deal_the_same_cards_with_partnerships_swapped() -> None:
    rules = Rules(max_hands=3)
    first_spec, second_spec = pair_specs(4, b"pairing")
    assert first_spec.seed == second_spec.seed
    assert (first_spec.team_a_seats, second_spec.team_a_seats) == ((0, 2), (1, 3))
    first = asyncio.run(play_in_process(first_spec, "heuristic", "random", rules, keep_events=True))
    second = asyncio.run(
        play_in_process(second_spec, "heuristic", "random", rules, keep_events=True)
    )
    check_duplicate(first.events, second.events)
    started = [next(e for e in r.events if isinstance(e, ev.HandStarted)) for r in (first, second)]
    assert started[0].dealer == started[1].dealer
    # Other pairs get other deals.
    other, _ = pair_specs(5, b"pairing")
    assert other.seed != first_spec.seed


@pytest.mark.parametrize(
    ("successes", "trials", "low", "high"),
    [
        (9, 10, 0.5958, 0.9821),
        (0, 10, 0.0, 0.2775),
        (10, 10, 0.7225, 1.0),
        (50, 100, 0.4038, 0.5962),
        (400, 400, 0.9905, 1.0),
        (0, 0, 0.0, 1.0),
    ],
)
def test_wilson_interval_on_known_counts(
    successes: int, trials: int, low: float, high: float
) -> None:
    found = wilson_interval(successes, trials)
    assert found == pytest.approx((low, high), abs=5e-4)


def test_wilson_interval_refuses_impossible_counts() -> None:
    with pytest.raises(ValueError):
        wilson_interval(3, 2)


def side(
    seats: tuple[int, ...], points: int, bags: int, made: bool, nils: int = 0
) -> ev.SideResult:
    return ev.SideResult(
        seats=seats,
        seat_results=(),
        contract=4,
        contract_tricks=4 if made else 2,
        contract_made=made,
        contract_points=40 if made else -40,
        nil_results=tuple(ev.NilResult(seats[0], False, 0, True, 100) for _ in range(nils)),
        bags=bags,
        bag_penalty_points=0,
        hand_points=points,
        total_score=points,
        total_bags=bags,
    )


def test_team_stats_from_known_hands() -> None:
    hands = (
        ev.HandScored(1, (side((0, 2), 42, 2, True), side((1, 3), -40, 0, False))),
        ev.HandScored(2, (side((0, 2), 140, 0, True, nils=1), side((1, 3), 41, 1, True))),
    )
    end = ev.MatchEnded(ev.EndReason.MAX_HANDS, (0, 2), (182, 1))
    north_south, east_west = TeamStats("ns"), TeamStats("ew")
    north_south.add_match((0, 2), hands, end)
    east_west.add_match((1, 3), hands, end)
    assert (north_south.wins, east_west.wins) == (1, 0)
    assert north_south.points_per_hand == 91.0 and east_west.points_per_hand == 0.5
    assert north_south.contracts_made_rate == 1.0 and east_west.contracts_made_rate == 0.5
    assert (north_south.nil_attempts, north_south.nil_success_rate) == (1, 1.0)
    assert north_south.bags_per_hand == 1.0 and east_west.bags_per_hand == 0.5


def test_a_tiny_fixed_seed_run_counts_what_its_records_hold(tmp_path: Path) -> None:
    config = ArenaConfig(
        "heuristic", "random", pairs=2, seed=b"tiny", rules=Rules(max_hands=2), records=tmp_path
    )
    report = run_arena(config)
    files = sorted(tmp_path.glob("*.json"))
    assert [path.name for path in files] == [
        "pair-0001-1.json",
        "pair-0001-2.json",
        "pair-0002-1.json",
        "pair-0002-2.json",
    ]
    # Count again from the records alone.
    expected = {"A": TeamStats("A"), "B": TeamStats("B")}
    for path, result in zip(files, report.results, strict=True):
        events = events_of(load_record(path))
        assert result.record_path == str(path)
        a_seats = (0, 2) if path.stem.endswith("-1") else (1, 3)
        b_seats = (1, 3) if a_seats == (0, 2) else (0, 2)
        hands = tuple(event for event in events if isinstance(event, ev.HandScored))
        end = next(event for event in events if isinstance(event, ev.MatchEnded))
        expected["A"].add_match(a_seats, hands, end)
        expected["B"].add_match(b_seats, hands, end)
    for mine, theirs in ((report.team_a, expected["A"]), (report.team_b, expected["B"])):
        assert (mine.matches, mine.wins, mine.hands, mine.points, mine.bags) == (
            theirs.matches, theirs.wins, theirs.hands, theirs.points, theirs.bags,
        )  # fmt: skip
        assert (mine.contracts, mine.contracts_made, mine.nil_attempts, mine.nils_made) == (
            theirs.contracts, theirs.contracts_made, theirs.nil_attempts, theirs.nils_made,
        )  # fmt: skip
    assert report.team_a.wins + report.team_b.wins == 4
    # The same seed plays the same matches.
    again = run_arena(ArenaConfig("heuristic", "random", 2, b"tiny", Rules(max_hands=2)))
    assert [(r.hands, r.end) for r in again.results] == [(r.hands, r.end) for r in report.results]


def test_heuristic_beats_random_by_a_clear_margin() -> None:
    config = ArenaConfig("heuristic", "random", pairs=8, seed=b"margin", rules=Rules(max_hands=4))
    report = run_arena(config)
    low, _ = report.team_a.win_interval
    assert report.team_a.wins >= 15, report.team_a
    assert low > 0.7
    assert report.team_a.points_per_hand > report.team_b.points_per_hand + 50
    assert report.team_a.contracts_made_rate > report.team_b.contracts_made_rate
    assert report.pair_outcomes()["B won both"] == 0


def test_the_command_prints_the_table_and_writes_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--matches", "2", "--seed", "cli", "--max-hands", "1", "--records", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0
    assert "2 duplicate matches (1 deal sets)" in out
    assert "Team A (heuristic) won" in out and "95% interval" in out
    assert "Win % (95% CI)" in out and "Bags/hand" in out
    assert f"Records: 2 written to {tmp_path}" in out
    assert len(list(tmp_path.glob("*.json"))) == 2


def test_the_command_refuses_an_odd_count_and_a_server_without_the_operator_token(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SPADES_OPERATOR_TOKEN", raising=False)
    with pytest.raises(SystemExit):
        main(["--matches", "3"])
    with pytest.raises(SystemExit):
        main(["--server", "127.0.0.1:1", "--matches", "2"])
    assert "operator" in capsys.readouterr().err


@pytest.mark.asyncio
async def test_on_a_server_the_pair_is_duplicate_too(tmp_path: Path) -> None:
    async with running_server(
        tmp_path / "arena.db", operator_token="arena-token", shutdown_grace=0.2
    ) as server:
        assert isinstance(server, SpadesServer)
        config = ArenaConfig(
            "heuristic",
            "random",
            pairs=1,
            seed=b"server",
            rules=Rules(max_hands=2),
            records=tmp_path / "records",
            server=f"127.0.0.1:{server.port}",
            operator_token="arena-token",
            jobs=2,
            keep_events=True,
        )
        report = await asyncio.to_thread(run_arena, config)
    first, second = report.results
    check_duplicate(first.events, second.events, partner=" 2")
    assert len(list((tmp_path / "records").glob("*.json"))) == 2
    # In this process, the same pair deals the same cards as on the server.
    local = await asyncio.to_thread(
        run_arena,
        ArenaConfig("heuristic", "random", 1, b"server", Rules(max_hands=2), keep_events=True),
    )
    assert dealt(local.results[0].events)[:4] == dealt(first.events)[:4]
