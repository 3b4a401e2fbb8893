"""Ratings benchmark: do a few hundred rated matches tell the heuristic bot from the random one?

Run with ``make bench-ratings`` or ``python tests/benchmarks/bench_ratings.py`` (``--help`` for
the options). A benchmark, not a test: it prints figures, it asserts nothing.

Two bot accounts, ``heuristic`` and ``random``, each playing both seats of its side (one entrant,
as the server rates an account on both seats of a side), play ``--matches`` rated matches of the
rated queue's rules (the default game, at most 25 hands) on the engine in this process, with the
arena's duplicate deal sets (each deal set twice, the sides swapped). Every finished match is
rated by the server's own rating code, in order: the sides ranked by ``ratings.side_ranks`` (as
``ratings.match_result`` ranks a finished table), ``ratings.rate`` and ``Pool.fold`` (as a pool
stream's ``MatchRated`` events are folded). Printed: every ``--every`` matches and at the end,
each account's mu, sigma, the interval mu +- 2 sigma, the leaderboard score mu - 3 sigma, and
whether the two intervals overlap. Bounded: ``--matches`` is at most 2,000.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import time

from spades_bots.arena.duplicate import all_specs, play_in_process
from spades_server.api.lobby import QUICK_MATCH_RULES
from spades_server.domain import ratings

MAX_MATCHES = 2000
ACCOUNTS = ("heuristic", "random")


def line(pool: ratings.Pool, account: str, wins: int) -> str:
    standing = pool.standing(account)
    low, high = standing.mu - 2 * standing.sigma, standing.mu + 2 * standing.sigma
    return (
        f"  {account:<10} mu {standing.mu:6.2f}  sigma {standing.sigma:5.2f}  "
        f"interval [{low:6.2f}, {high:6.2f}]  score {standing.mu - 3 * standing.sigma:6.2f}  "
        f"matches {standing.matches:4d}  won {wins:4d}"
    )


def overlap(pool: ratings.Pool) -> bool:
    strong, weak = (pool.standing(account) for account in ACCOUNTS)
    return strong.mu - 2 * strong.sigma <= weak.mu + 2 * weak.sigma


async def run(matches: int, every: int, seed: bytes) -> None:
    rules = QUICK_MATCH_RULES
    pool_name = ratings.pool_of(rules)
    assert pool_name is not None
    pool = ratings.Pool(pool_name)
    specs = all_specs((matches + 1) // 2, seed)[:matches]
    wins = dict.fromkeys(ACCOUNTS, 0)
    hands = 0
    started = time.perf_counter()
    print(
        f"{matches} rated matches ({pool_name} pool, at most {rules.max_hands} hands each): "
        f"heuristic vs random, each on both seats of its side"
    )
    for number, spec in enumerate(specs, start=1):
        played = await play_in_process(spec, "heuristic", "random", rules)
        assert played.end is not None, "a match of the engine always ends"
        hands += len(played.hands)
        sides = rules.sides
        entrants = [["heuristic" if side == spec.team_a_seats else "random"] for side in sides]
        result = ratings.MatchResult(
            table_id=f"bench-{number}",
            pool=pool_name,
            sides=entrants,
            ranks=ratings.side_ranks(sides, played.end),
        )
        for side, rank in zip(entrants, result.ranks, strict=True):
            if rank == 0 and result.ranks.count(0) == 1:
                wins[side[0]] += 1
        pool.fold(pool.version + 1, ratings.rate(pool, result))
        if number % every == 0 or number == matches:
            print(f"after {number} matches ({hands} hands, {time.perf_counter() - started:.1f} s):")
            for account in ACCOUNTS:
                print(line(pool, account, wins[account]))
            print(f"  intervals overlap: {'yes' if overlap(pool) else 'no'}")


def main() -> None:
    parse = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parse.add_argument("--matches", type=int, default=300, help="rated matches (at most 2000)")
    parse.add_argument("--every", type=int, default=50, help="print the ratings every N matches")
    parse.add_argument("--seed", default="bench-ratings", help="the deal sets' seed (any text)")
    args = parse.parse_args()
    if not 1 <= args.matches <= MAX_MATCHES:
        parse.error(f"--matches is 1 to {MAX_MATCHES}")
    if args.every < 1:
        parse.error("--every is at least 1")
    seed = hashlib.sha256(args.seed.encode()).digest()
    asyncio.run(run(args.matches, args.every, seed))


if __name__ == "__main__":
    main()
