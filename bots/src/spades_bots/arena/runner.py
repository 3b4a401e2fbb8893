"""Running an arena: every match of every pair, in this process or on a server, and the totals."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from spades.engine import Rules
from spades_bots.arena.duplicate import MatchResult, MatchSpec, all_specs, play_in_process
from spades_bots.arena.stats import TeamStats


@dataclass(frozen=True)
class ArenaConfig:
    """What to play: two teams, how many duplicate pairs, the rules, and where."""

    team_a: str
    team_b: str
    pairs: int
    seed: bytes
    rules: Rules = field(default_factory=lambda: Rules(max_hands=25))
    records: Path | None = None
    #: A server's host:port; None plays on the engine in this process.
    server: str | None = None
    operator_token: str = ""
    #: Matches played at once: worker processes in-process, tables on a server.
    jobs: int = 1
    #: Keep every match's events in its result (tests).
    keep_events: bool = False

    @property
    def matches(self) -> int:
        return 2 * self.pairs


@dataclass
class ArenaReport:
    """The arena's results: every match, each team's totals, and the pairs' outcomes."""

    config: ArenaConfig
    results: list[MatchResult]
    team_a: TeamStats
    team_b: TeamStats

    @staticmethod
    def of(config: ArenaConfig, results: list[MatchResult]) -> ArenaReport:
        results = sorted(results, key=lambda result: (result.spec.pair, result.spec.leg))
        team_a = TeamStats(config.team_a)
        team_b = TeamStats(config.team_b)
        for result in results:
            team_a.add_match(result.spec.team_a_seats, result.hands, result.end)
            team_b.add_match(result.spec.team_b_seats, result.hands, result.end)
        return ArenaReport(config, results, team_a, team_b)

    def pair_outcomes(self) -> dict[str, int]:
        """How many pairs team A won both matches of, split, or lost both."""
        wins: dict[int, int] = {}
        for result in self.results:
            wins[result.spec.pair] = wins.get(result.spec.pair, 0) + (result.winner == "A")
        return {
            "A won both": sum(count == 2 for count in wins.values()),
            "split": sum(count == 1 for count in wins.values()),
            "B won both": sum(count == 0 for count in wins.values()),
        }


Progress = Callable[[MatchResult], None]


def run_arena(config: ArenaConfig, progress: Progress | None = None) -> ArenaReport:
    """Play every match of ``config``; ``progress`` hears of each match as it ends."""
    specs = all_specs(config.pairs, config.seed)
    if config.server is not None:
        results = asyncio.run(_play_on_server(config, specs, progress))
    else:
        results = list(_play_in_process(config, specs, progress))
    return ArenaReport.of(config, results)


def _play_one(config: ArenaConfig, spec: MatchSpec) -> MatchResult:
    return asyncio.run(
        play_in_process(
            spec, config.team_a, config.team_b, config.rules, config.records, config.keep_events
        )
    )


def _play_in_process(
    config: ArenaConfig, specs: list[MatchSpec], progress: Progress | None
) -> Iterator[MatchResult]:
    def told(result: MatchResult) -> MatchResult:
        if progress is not None:
            progress(result)
        return result

    if config.jobs <= 1:
        for spec in specs:
            yield told(_play_one(config, spec))
        return
    with concurrent.futures.ProcessPoolExecutor(config.jobs) as pool:
        futures = [pool.submit(_play_one, config, spec) for spec in specs]
        for future in concurrent.futures.as_completed(futures):
            yield told(future.result())


async def _play_on_server(
    config: ArenaConfig, specs: list[MatchSpec], progress: Progress | None
) -> list[MatchResult]:
    from spades_bots.arena.remote import RemoteArena

    assert config.server is not None
    limit = asyncio.Semaphore(max(1, config.jobs))
    async with RemoteArena(config.server, config.operator_token) as arena:

        async def one(spec: MatchSpec) -> MatchResult:
            async with limit:
                result = await arena.play(
                    spec,
                    config.team_a,
                    config.team_b,
                    config.rules,
                    config.records,
                    config.keep_events,
                )
            if progress is not None:
                progress(result)
            return result

        return list(await asyncio.gather(*(one(spec) for spec in specs)))
