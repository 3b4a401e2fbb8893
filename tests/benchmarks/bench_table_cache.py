"""Micro-benchmark: a command on PostgreSQL with the followed cache, against reading first.

Run with ``python tests/benchmarks/bench_table_cache.py`` (``--tables 16 --actions 2000``);
needs a PostgreSQL (``--postgres-dsn``, default ``SPADES_TEST_POSTGRES_DSN`` or
``postgresql://postgres@127.0.0.1:5432/test``).

What it measures: the cost of ``TableStore.execute`` alone, without gRPC, streams or clients:
``--tables`` tables (in a fresh schema) each get four seats and then random legal actions, one
command at a time per table, all tables at once. Rounds alternate, in one run on one log:

* **followed**: every table is held (``TableStore.holding``, as a Play stream holds it), so a
  command decides on the followed cache and only appends;
* **read first**: no table is held, so every command reads the table's new events from the log
  before deciding (what every command on PostgreSQL did before issue 16).

Printed per round kind: commands per second, this process's CPU per command (the server's
share) and the PostgreSQL processes' CPU per command, with the ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from spades.engine import Rules, apply, legal_actions, new_match
from spades_server.domain import tokens
from spades_server.domain.decisions import decide_join, decide_new_table
from spades_server.domain.tables import Decided, Table
from spades_server.eventlog.postgres import PostgresEventLog
from spades_server.store.table_store import TableStore
from tests.benchmarks.bench_server import DEFAULT_DSN, postgres_processes


def random_action(rng: random.Random) -> Callable[[Table], Decided | None]:
    def decide(table: Table) -> Decided | None:
        state = table.state
        if table.finished or state.turn is None:
            return None
        seat = state.turn
        return Decided.of(apply(state, seat, rng.choice(legal_actions(state, seat))))

    return decide


async def play(store: TableStore, table_ids: list[str], actions: int, seed: int) -> int:
    """``actions`` commands in all, spread over the tables, one at a time per table."""
    rng = random.Random(seed)
    done = 0

    async def one_table(table_id: str, count: int) -> None:
        nonlocal done
        for _ in range(count):
            _, entries = await store.execute(table_id, random_action(rng))
            if not entries:
                return  # the match ended
            done += 1

    share = actions // len(table_ids)
    await asyncio.gather(*(one_table(table_id, share) for table_id in table_ids))
    return done


def joining(seat: int, token: str) -> Callable[[Table], Decided]:
    def decide(table: Table) -> Decided:
        return decide_join(table, seat, f"p{seat}", True, "", token)

    return decide


async def new_tables(store: TableStore, count: int) -> list[str]:
    table_ids = []
    for _ in range(count):
        table_id = tokens.new_table_id()
        created = decide_new_table(
            new_match(Rules(max_hands=1000, target_score=1000)),
            name="bench",
            private=False,
            join_code="",
        )
        await store.create(table_id, created)
        for seat in range(4):
            await store.execute(table_id, joining(seat, tokens.new_seat_token(table_id)))
        table_ids.append(table_id)
    return table_ids


async def main_async(args: argparse.Namespace) -> None:
    schema = f"bench_cache_{uuid.uuid4().hex[:10]}"
    log = PostgresEventLog(args.postgres_dsn, schema=schema)
    await log.open()
    store = TableStore(log)
    results: dict[str, list[tuple[int, float, float, float]]] = {"followed": [], "read first": []}
    try:
        table_ids = await new_tables(store, args.tables)
        for round_ in range(args.rounds):
            for kind in ("followed", "read first"):
                async with contextlib.AsyncExitStack() as stack:
                    if kind == "followed":
                        for table_id in table_ids:
                            await stack.enter_async_context(store.holding(table_id))
                        for _ in range(500):
                            if all(store.following(t) for t in table_ids):
                                break
                            await asyncio.sleep(0.01)
                    pg_before = sum(postgres_processes().values())
                    cpu = time.process_time()
                    began = time.perf_counter()
                    done = await play(store, table_ids, args.actions, round_)
                    wall = time.perf_counter() - began
                    cpu = time.process_time() - cpu
                    pg = sum(postgres_processes().values()) - pg_before
                results[kind].append((done, wall, cpu, pg))
    finally:
        await log.close()
        connection = await asyncpg.connect(args.postgres_dsn)
        try:
            await connection.execute(f"DROP SCHEMA {schema} CASCADE")
        finally:
            await connection.close()
    print(
        f"{'':<11} {'commands/s':>10} {'CPU ms/command':>14} {'PG CPU ms/command':>17}"
        f"  ({args.tables} tables, {args.rounds} rounds of {args.actions} commands each)"
    )
    figures = {}
    for kind, rounds in results.items():
        done = sum(r[0] for r in rounds)
        wall, cpu, pg = (sum(r[i] for r in rounds) for i in (1, 2, 3))
        figures[kind] = (done / wall, cpu / done * 1000, pg / done * 1000)
        rate, cpu_ms, pg_ms = figures[kind]
        print(f"{kind:<11} {rate:>10,.0f} {cpu_ms:>14.3f} {pg_ms:>17.3f}")
    (rate, cpu_ms, pg_ms), (base_rate, base_cpu, base_pg) = (
        figures["followed"],
        figures["read first"],
    )
    print(
        f"followed / read first: {rate / base_rate:.2f}x commands/s, {cpu_ms / base_cpu:.2f}x"
        f" CPU per command, {pg_ms / base_pg:.2f}x PostgreSQL CPU per command"
    )


def main() -> None:
    parse = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parse.add_argument("--tables", type=int, default=16)
    parse.add_argument("--actions", type=int, default=2000, help="commands per round")
    parse.add_argument("--rounds", type=int, default=3, help="rounds of each kind, alternating")
    parse.add_argument("--postgres-dsn", default=DEFAULT_DSN)
    asyncio.run(main_async(parse.parse_args()))


if __name__ == "__main__":
    main()
