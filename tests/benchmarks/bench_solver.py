"""Double-dummy solver benchmark: ours (spades.solver, compiled C) against DDS on one core.

Run with ``make bench-solver`` (or ``python tests/benchmarks/bench_solver.py --deals 10``).

What is measured
----------------
* **Trick 1**: random deals under rules where Spades and bridge coincide (partners, clockwise,
  spades trumps and led any time, no jokers), at the first lead (13 cards a hand, bids made at
  random by the engine). Each deal is solved by DDS (Bo Haglund's, bundled in ``endplay``:
  ``solve_board`` values every legal card) and by ours (``solve``, tricks objective: every
  legal card), one after the other in the same run; the trick counts are compared, and the
  median times and their ratio ours / DDS are printed.
* **Whole hand**: random deals under the default rules, played out at random by the engine; at
  each of their 52 positions every legal card is valued in both objectives (points and
  tricks). The time of a whole hand is the sum; its p50, p95 and maximum over the hands are
  printed, over 100 hands by default (with few, ``--hands 5``, the p95 is just the slowest of
  them). The bids are random legal bids (``--bids random``, the default), so some hands are
  bid far beyond what the cards can make, 13 by one seat or 17 by a side: the slow hands are
  of that kind, or hold a Nil (the points search must then tell each seat's tricks apart), and
  their searches turn on which side can make the other take tricks it does not want. With
  ``--bids heuristic`` the heuristic bot bids every seat (knowing the bags carried in), as in
  the matches the analysis serves.

Times are CPU seconds of this process (``time.process_time``: the search runs on one core, and
waiting behind other processes on a shared machine does not count); the machine's load average
is printed with them. Deals come from a fixed seed (``--seed``), so runs compare.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from spades.bot import BotView
from spades.bot.base import ask
from spades.engine import PLAY, MatchState, Phase, Rules, act, seated_match
from spades.engine.cards import iter_cards
from spades.engine.legal import play_mask
from spades.solver import Objective, Position, solve
from spades_bots.heuristic import HeuristicBot
from tests.support.dds import dds_tricks
from tests.support.endings import dealt_and_bid

DDS_RULES = Rules(spades_must_be_broken=False)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def trick_one(deals: int, rng: random.Random) -> tuple[list[float], list[float], int]:
    ours: list[float] = []
    theirs: list[float] = []
    disagreements = 0
    for number in range(deals):
        position = Position.of(dealt_and_bid(DDS_RULES, rng))
        start = time.process_time()
        dds = dds_tricks(position)
        middle = time.process_time()
        values = solve(position, Objective.TRICKS)
        end = time.process_time()
        theirs.append(middle - start)
        ours.append(end - middle)
        taken = position.tricks_taken_by_side(position.to_play)
        if {card: value - taken for card, value in values.items()} != dds:
            disagreements += 1
        print(
            f"  deal {number + 1:>3}: DDS {1000 * theirs[-1]:8.1f} ms   ours "
            f"{1000 * ours[-1]:9.1f} ms",
            flush=True,
        )
    return ours, theirs, disagreements


def bid_by_heuristic(rules: Rules, rng: random.Random) -> MatchState:
    """A match at the first lead of its first hand, random bags carried in, every seat's bid
    (and Blind Nil choice) the heuristic bot's."""
    state, _ = seated_match(rules, seed=rng.randbytes(32))
    state.bags = [rng.randrange(rules.bag_limit) for _ in state.bags]
    bot = HeuristicBot()
    while state.phase is not Phase.PLAYING:
        seat = state.seat_to_act()
        action, _ = asyncio.run(ask(bot, BotView(state, seat)))
        act(state, seat, action)
    return state


def whole_hands(hands: int, rng: random.Random, bids: str = "random") -> list[float]:
    times: list[float] = []
    for number in range(hands):
        if bids == "heuristic":
            state = bid_by_heuristic(Rules(), rng)
        else:
            state = dealt_and_bid(Rules(), rng)
        bid = " ".join(f"{bid.tricks}{'B' if bid.blind else ''}" for bid in state.bids if bid)
        total = 0.0
        while state.phase is Phase.PLAYING:
            for objective in Objective:
                start = time.process_time()
                solve(state, objective)
                total += time.process_time() - start
            seat = state.seat_to_act()
            act(state, seat, PLAY[rng.choice(list(iter_cards(play_mask(state, seat))))])
        times.append(total)
        print(
            f"  hand {number + 1:>3}: {total:8.2f} s (52 positions, both objectives; bids {bid})",
            flush=True,
        )
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--deals", type=int, default=10, help="trick-1 deals against DDS")
    parser.add_argument(
        "--hands",
        type=int,
        default=100,
        help="whole hands, both objectives (100: a p95 that is not just the slowest few)",
    )
    parser.add_argument("--seed", default="bench-solver", help="the deals' seed")
    parser.add_argument(
        "--bids",
        choices=("random", "heuristic"),
        default="random",
        help="whole hands: random legal bids, or the heuristic bot's",
    )
    arguments = parser.parse_args(argv)
    rng = random.Random(arguments.seed)
    print(f"load average before: {' '.join(f'{load:.2f}' for load in os.getloadavg())}")
    print(f"trick 1, every legal card, {arguments.deals} deals (DDS rules):")
    ours, theirs, disagreements = trick_one(arguments.deals, rng)
    mine, dds = statistics.median(ours), statistics.median(theirs)
    print(f"  median DDS {1000 * dds:.1f} ms, ours {1000 * mine:.1f} ms")
    print(f"  ours / DDS: {mine / dds:.1f}x (target at most 10x)")
    print(f"  trick counts that differ from DDS: {disagreements} of {arguments.deals}")
    print(f"whole hand, {arguments.hands} hands (default rules, {arguments.bids} bids):")
    times = whole_hands(arguments.hands, rng, arguments.bids)
    if times:
        print(
            f"  p50 {percentile(times, 0.5):.2f} s, p95 {percentile(times, 0.95):.2f} s "
            f"(target under 2 s), max {max(times):.2f} s"
        )
    print(f"load average after: {' '.join(f'{load:.2f}' for load in os.getloadavg())}")
    return 1 if disagreements else 0


if __name__ == "__main__":
    raise SystemExit(main())
