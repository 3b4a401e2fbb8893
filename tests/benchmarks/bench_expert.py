"""The expert bot against the search bot and the heuristic (issue 24's benchmark).

Duplicate matches (each deal set played twice, the partnerships swapped, so the luck of the
cards cancels), default rules (target 500, at most 25 hands, as ``spades-arena``), full
matches, the expert and the search at the same CPU time a decision: their default 100 ms, or
``--think-ms`` (an equal smaller budget makes a run of 200 matches practical on a shared
machine; the budget is printed with the results). The two opponents' deal sets are
interleaved, so a run cut short by ``--minutes`` has measured both about equally; only deal
sets whose two matches both finished count. Prints each opponent's wins with a 95 % Wilson
interval against the issue's targets: the expert wins at least 60 % against the search and
90 % against the heuristic.

    make bench-expert                                   # 200 matches against each
    make bench-expert EXPERT_ARGS="--matches 40 --jobs 2 --minutes 60 --seed e1"
    make bench-expert EXPERT_ARGS="--think-ms 25 --jobs 2"  # both bots at 25 ms a decision
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import secrets
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from spades.engine import Rules
from spades_bots.arena.duplicate import MatchResult, MatchSpec, all_specs, play_in_process
from spades_bots.arena.stats import TeamStats, wilson_interval

#: Each opponent, and the share of matches the expert must win against it.
TARGETS = {"search": 0.60, "heuristic": 0.90}
EXPERT = "expert"


@dataclass
class Tally:
    """One opponent's finished matches, by deal set."""

    opponent: str
    legs: dict[int, list[MatchResult]] = field(default_factory=dict)

    def add(self, result: MatchResult) -> None:
        self.legs.setdefault(result.spec.pair, []).append(result)

    def complete(self) -> list[MatchResult]:
        """The matches of the deal sets whose two matches both finished."""
        return [result for legs in self.legs.values() if len(legs) == 2 for result in legs]

    def line(self) -> str:
        results = self.complete()
        wins = sum(result.winner == "A" for result in results)
        low, high = wilson_interval(wins, len(results))
        rate = wins / len(results) if results else 0.0
        target = TARGETS[self.opponent]
        verdict = "meets" if low >= target else ("misses" if high < target else "not settled:")
        hands = sum(len(result.hands) for result in results)
        margin = points_margin(results)
        return (
            f"expert vs {self.opponent}: won {wins} of {len(results)} matches, {100 * rate:.1f}% "
            f"(95% Wilson interval {100 * low:.1f}% to {100 * high:.1f}%), {hands} hands, "
            f"{margin:+.1f} points a hand; target {100 * target:.0f}%: {verdict} "
            f"{'' if verdict != 'not settled:' else 'the interval straddles it'}"
        ).rstrip()

    def profile(self) -> str:
        """How each team bid and played in the counted matches: points, contracts made, Nil
        tries and how many were made, bags (overbidding sets contracts, underbidding takes
        bags, a Nil tried too often is set)."""
        teams = (TeamStats(EXPERT), TeamStats(self.opponent))
        for result in self.complete():
            teams[0].add_match(result.spec.team_a_seats, result.hands, result.end)
            teams[1].add_match(result.spec.team_b_seats, result.hands, result.end)
        return "; ".join(
            f"{team.name} {team.points_per_hand:+.1f} points a hand, contracts made "
            f"{100 * team.contracts_made_rate:.0f}%, {team.nil_attempts} Nil tries "
            f"({100 * team.nil_success_rate:.0f}% made), {team.bags_per_hand:.2f} bags a hand"
            for team in teams
        )


def points_margin(results: Sequence[MatchResult]) -> float:
    """The expert's hand points less the opponent's, per hand."""
    total = 0
    hands = 0
    for result in results:
        mine = set(result.spec.team_a_seats)
        for hand in result.hands:
            for side in hand.sides:
                total += side.hand_points if set(side.seats) == mine else -side.hand_points
            hands += 1
    return total / hands if hands else 0.0


def thinking(name: str, think_ms: float | None) -> str:
    """The arena's name of ``name`` thinking ``think_ms`` a decision (``expert:25``); the
    heuristic does not think."""
    return name if think_ms is None or name == "heuristic" else f"{name}:{think_ms:g}"


def play(opponent: str, spec: MatchSpec, think_ms: float | None) -> tuple[str, MatchResult]:
    expert, rival = thinking(EXPERT, think_ms), thinking(opponent, think_ms)
    return opponent, asyncio.run(play_in_process(spec, expert, rival, Rules(max_hands=25)))


def main(argv: Sequence[str] | None = None) -> int:
    parse = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parse.add_argument("--matches", type=int, default=200, help="against each opponent (even)")
    parse.add_argument("--jobs", type=int, default=2, help="matches at once (processes)")
    parse.add_argument("--seed", default=None, help="the deals' seed (default: a fresh one)")
    parse.add_argument("--minutes", type=float, default=None, help="start no match after this")
    parse.add_argument(
        "--think-ms",
        type=float,
        default=None,
        help="CPU milliseconds a decision for both the expert and the search (default: 100)",
    )
    parse.add_argument(
        "--against", default=",".join(TARGETS), help="opponents, from: " + ", ".join(TARGETS)
    )
    args = parse.parse_args(argv)
    if args.matches < 2 or args.matches % 2:
        parse.error("--matches must be an even number, at least 2")
    opponents = [name for name in args.against.split(",") if name]
    if not opponents or set(opponents) - set(TARGETS):
        parse.error(f"--against takes some of {', '.join(TARGETS)}")
    if args.think_ms is not None and not args.think_ms > 0:
        parse.error("--think-ms must be positive")
    budget = 100.0 if args.think_ms is None else args.think_ms
    seed = args.seed if args.seed is not None else secrets.token_hex(6)
    specs = all_specs(args.matches // 2, seed.encode())
    # Interleaved: the first deal set against each opponent, then the second, and so on.
    queue = [(opponent, spec) for spec in specs for opponent in opponents]
    stop = None if args.minutes is None else time.monotonic() + 60 * args.minutes
    tallies = {opponent: Tally(opponent) for opponent in opponents}
    print(
        f"bench-expert: expert vs {', '.join(opponents)}, {args.matches} duplicate matches "
        f"each, default rules (target 500, at most 25 hands), expert and search at {budget:g} ms "
        f"of CPU time a decision, {args.jobs} at a time, seed "
        f"{seed!r}" + (f", no match started after {args.minutes:g} minutes" if stop else ""),
        flush=True,
    )
    started = time.monotonic()
    with concurrent.futures.ProcessPoolExecutor(args.jobs) as pool:
        running: set[concurrent.futures.Future[tuple[str, MatchResult]]] = set()
        while queue or running:
            while queue and len(running) < args.jobs:
                if stop is not None and time.monotonic() > stop:
                    queue.clear()
                    break
                running.add(pool.submit(play, *queue.pop(0), args.think_ms))
            if not running:
                break
            done, running = concurrent.futures.wait(
                running, return_when=concurrent.futures.FIRST_COMPLETED
            )
            for future in done:
                opponent, result = future.result()
                tallies[opponent].add(result)
                minutes = (time.monotonic() - started) / 60
                print(
                    f"[{minutes:6.1f} min] {opponent} {result.spec.name}: "
                    f"{'expert' if result.winner == 'A' else opponent} won; "
                    + tallies[opponent].line(),
                    flush=True,
                )
    print("", flush=True)
    for tally in tallies.values():
        print(f"{tally.line()} (at {budget:g} ms a decision)")
        print(f"  {tally.profile()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
