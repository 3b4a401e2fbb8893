"""Event-log benchmark: single-event appends per second into the embedded SQLite log.

Run with ``.venv/bin/python tests/benchmarks/bench_eventlog.py [--seconds 3]`` (not part of
``make test``). For each durability setting (``normal``, ``full``) and each number of concurrent
writer tasks (1 and 64), a fresh file in a temporary directory is appended to for ``--seconds``:
every task owns one stream and appends one 100-byte event at a time with the right expected
version, awaiting each append (acknowledged after its COMMIT) before the next. Printed: appends
(= events) per second, commits per second, appends per commit (group commit at work), and the
p50/p99 append latency.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from spades_server.eventlog import Durability, SqliteEventLog


async def measure(path: Path, durability: Durability, tasks: int, seconds: float) -> str:
    async with SqliteEventLog(path, durability=durability) as log:
        latencies: list[float] = []
        deadline = time.perf_counter() + seconds
        data = bytes(100)

        async def writer(stream_id: str) -> None:
            version = 0
            while (started := time.perf_counter()) < deadline:
                await log.append(stream_id, version, [data])
                latencies.append(time.perf_counter() - started)
                version += 1

        commits_before = log.commits
        started = time.perf_counter()
        await asyncio.gather(*(writer(f"table-{n}") for n in range(tasks)))
        elapsed = time.perf_counter() - started
        commits = log.commits - commits_before

    quantiles = statistics.quantiles(latencies, n=100)
    return (
        f"{durability:>8} {tasks:>6} {len(latencies) / elapsed:>10,.0f} {commits / elapsed:>10,.0f}"
        f" {len(latencies) / max(commits, 1):>9.1f}"
        f" {quantiles[49] * 1000:>8.2f} {quantiles[98] * 1000:>8.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="time per measurement")
    parser.add_argument("--tasks", type=int, nargs="+", default=[1, 64], help="writer counts")
    arguments = parser.parse_args()
    print(
        f"{'sync':>8} {'tasks':>6} {'events/s':>10} {'commits/s':>10} {'per commit':>9}"
        f" {'p50 ms':>8} {'p99 ms':>8}"
    )
    durabilities: list[Durability] = ["normal", "full"]
    with tempfile.TemporaryDirectory(prefix="bench-eventlog-") as directory:
        for durability in durabilities:
            for tasks in arguments.tasks:
                path = Path(directory) / f"{durability}-{tasks}.db"
                print(asyncio.run(measure(path, durability, tasks, arguments.seconds)), flush=True)


if __name__ == "__main__":
    main()
