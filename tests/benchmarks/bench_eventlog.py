"""Event-log benchmark: single-event appends per second, embedded SQLite next to PostgreSQL.

Run with ``.venv/bin/python tests/benchmarks/bench_eventlog.py [--seconds 3]`` (not part of
``make test``). For each backend setting and each number of concurrent writer tasks (1 and 64),
a fresh log is appended to for ``--seconds``: every task owns one stream and appends one
100-byte event at a time with the right expected version, awaiting each append (acknowledged
after its COMMIT) before the next. Printed: appends (= events) per second, commits per second,
appends per commit (group commit at work), and the p50/p99 append latency.

Settings: SQLite with ``durability`` normal and full (a file in a temporary directory);
PostgreSQL (``--postgres-dsn``, default ``SPADES_TEST_POSTGRES_DSN`` or
``postgresql://postgres@127.0.0.1:5432/test``; a fresh schema, dropped afterwards) with the
coalesced NOTIFY on (``pg``) and off (``pg-nonotify``, to show what the fan-out costs), with
``--pool-size`` connections. Both logs commit the appends gathered while the previous commit was
on its way in one transaction (PostgreSQL: one statement). Skipped with a note when no
PostgreSQL server answers.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import asyncpg

from spades_server.eventlog import EventLog, PostgresEventLog, SqliteEventLog

DEFAULT_DSN = os.environ.get(
    "SPADES_TEST_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test"
)


async def measure(name: str, log: EventLog, tasks: int, seconds: float) -> str:
    async with log:
        latencies: list[float] = []
        deadline = time.perf_counter() + seconds
        data = bytes(100)

        async def writer(stream_id: str) -> None:
            version = 0
            while (started := time.perf_counter()) < deadline:
                await log.append(stream_id, version, [data])
                latencies.append(time.perf_counter() - started)
                version += 1

        commits_before = _commits(log)
        started = time.perf_counter()
        await asyncio.gather(*(writer(f"table-{n}") for n in range(tasks)))
        elapsed = time.perf_counter() - started
        commits = _commits(log) - commits_before
        extra = ""
        if isinstance(log, PostgresEventLog) and log.notify:
            extra = f"  ({log.notifications_sent / elapsed:,.0f} NOTIFY/s)"

    quantiles = statistics.quantiles(latencies, n=100)
    return (
        f"{name:>12} {tasks:>6} {len(latencies) / elapsed:>10,.0f} {commits / elapsed:>10,.0f}"
        f" {len(latencies) / max(commits, 1):>9.1f}"
        f" {quantiles[49] * 1000:>8.2f} {quantiles[98] * 1000:>8.2f}{extra}"
    )


def _commits(log: EventLog) -> int:
    assert isinstance(log, SqliteEventLog | PostgresEventLog)
    return log.commits  # each backend's transactions (either group-commits appends)


async def postgres_reachable(dsn: str) -> str | None:
    try:
        connection = await asyncpg.connect(dsn, timeout=3)
    except (OSError, asyncpg.PostgresError, TimeoutError) as error:
        return f"{type(error).__name__}: {error}"
    await connection.close()
    return None


async def measure_postgres(
    dsn: str, name: str, tasks: int, seconds: float, pool_size: int, notify: bool
) -> str:
    schema = f"bench_eventlog_{uuid.uuid4().hex[:12]}"
    log = PostgresEventLog(dsn, schema=schema, pool_size=pool_size, notify=notify)
    try:
        return await measure(name, log, tasks, seconds)
    finally:
        connection = await asyncpg.connect(dsn)
        try:
            await connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        finally:
            await connection.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="time per measurement")
    parser.add_argument("--tasks", type=int, nargs="+", default=[1, 64], help="writer counts")
    parser.add_argument("--postgres-dsn", default=DEFAULT_DSN, help="PostgreSQL server to use")
    parser.add_argument("--pool-size", type=int, default=10, help="PostgreSQL pool size")
    parser.add_argument("--no-postgres", action="store_true", help="SQLite only")
    arguments = parser.parse_args()
    print(
        f"{'backend':>12} {'tasks':>6} {'events/s':>10} {'commits/s':>10} {'per commit':>9}"
        f" {'p50 ms':>8} {'p99 ms':>8}"
    )
    with tempfile.TemporaryDirectory(prefix="bench-eventlog-") as directory:
        for durability in ("normal", "full"):
            for tasks in arguments.tasks:
                path = Path(directory) / f"{durability}-{tasks}.db"
                log = SqliteEventLog(path, durability=durability)
                line = asyncio.run(measure(f"sqlite-{durability}", log, tasks, arguments.seconds))
                print(line, flush=True)
    if arguments.no_postgres:
        return
    dsn = arguments.postgres_dsn
    problem = asyncio.run(postgres_reachable(dsn))
    if problem is not None:
        print(f"PostgreSQL skipped: no server at {dsn!r} ({problem})")
        return
    for name, notify in (("pg", True), ("pg-nonotify", False)):
        for tasks in arguments.tasks:
            line = asyncio.run(
                measure_postgres(dsn, name, tasks, arguments.seconds, arguments.pool_size, notify)
            )
            print(line, flush=True)


if __name__ == "__main__":
    main()
