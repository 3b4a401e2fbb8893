"""Fan-out benchmark: PostgreSQL LISTEN/NOTIFY against core NATS subjects, between replicas.

Run with ``python tests/benchmarks/bench_fanout.py`` (``--replicas 2,4 --seconds 5``); needs a
PostgreSQL (``--postgres-dsn``, default ``SPADES_TEST_POSTGRES_DSN`` or
``postgresql://postgres@127.0.0.1:5432/test``) and a NATS server (``--nats``, default
``nats://127.0.0.1:4222``) and the ``nats-py`` package (``pip install nats-py``).

What it measures: what the event log's fan-out carries, without the rest of the server. R
processes (the replicas) each publish, as fast as they can with at most ``--in-flight``
notifications outstanding, one notification per commit in the log's own format (JSON
``{"from": ..., "events": [[stream, version, position]]}``, plus the send time), and each
receives every other process's. Per transport and replica count, in one run, interleaved:

* **sent/s**: notifications published per second, all processes together;
* **delivered/s**: notifications received per second by the other processes, summed (each
  notification reaches R - 1 receivers);
* **p50/p99 ms**: from publishing to receiving on another process (same host clock);
* **CPU µs per delivery**: the processes' CPU plus the broker's (every PostgreSQL process, or
  the ``nats-server`` process), per notification delivered.

PostgreSQL: each process sends ``SELECT pg_notify(channel, payload)`` on ``--pg-connections``
pooled connections and LISTENs on one more. NATS: each process publishes on one subject
(``spades.eventlog.<schema>``) and subscribes to it, flushing every ``--in-flight`` messages.
The server's log coalesces what was committed while a NOTIFY was in flight into one statement,
so its real notification rate is below the commit rate; this measures the transports' ceiling
one notification per commit, the case that limited LISTEN/NOTIFY before.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import sys
import time
import uuid
from dataclasses import dataclass, field
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.benchmarks.bench_server import (
    CLOCK_TICK,
    DEFAULT_DSN,
    cpu_seconds,
    postgres_processes,
    wait_for_quiet,
)

DEFAULT_NATS = os.environ.get("SPADES_TEST_NATS_URL", "nats://127.0.0.1:4222")


@dataclass
class Result:
    sent: int = 0
    received: int = 0
    latencies: list[float] = field(default_factory=list)
    cpu_seconds: float = 0.0


def _payload(instance: str, count: int, sent: float) -> str:
    return json.dumps(
        {"from": instance, "events": [[f"table-{count % 64}", count, count]], "sent": sent}
    )


def _received(result: Result, instance: str, payload: str | bytes, window: list[float]) -> None:
    message = json.loads(payload)
    if message["from"] == instance:
        return
    now = time.monotonic()
    if window[0] <= message["sent"] < window[1]:
        result.received += 1
        result.latencies.append(now - message["sent"])


async def _publish_for(
    window: list[float], in_flight: int, publish: Any, instance: str, result: Result
) -> None:
    """Publish until the window ends; only what was sent inside it counts."""
    stop = window[1]
    counter = iter(range(1 << 62))

    async def worker() -> None:
        while True:
            now = time.monotonic()
            if now >= stop:
                return
            await publish(_payload(instance, next(counter), now))
            result.sent += 1

    await asyncio.gather(*(worker() for _ in range(in_flight)))


async def run_postgres(
    dsn: str, channel: str, seconds: float, in_flight: int, connections: int, barrier: Barrier
) -> Result:
    result = Result()
    instance = uuid.uuid4().hex
    window = [float("inf"), float("inf")]
    listener = await asyncpg.connect(dsn)
    await listener.add_listener(
        channel, lambda _c, _p, _ch, payload: _received(result, instance, payload, window)
    )
    pool = await asyncpg.create_pool(dsn, min_size=connections, max_size=connections)
    try:

        async def publish(payload: str) -> None:
            await pool.execute("SELECT pg_notify($1, $2)", channel, payload)

        await asyncio.to_thread(barrier.wait)
        cpu = time.process_time()
        window[:] = [time.monotonic(), time.monotonic() + seconds]
        await _publish_for(window, in_flight, publish, instance, result)
        await asyncio.sleep(1.0)  # let the last notifications arrive
        result.cpu_seconds = time.process_time() - cpu
    finally:
        await pool.close()
        await listener.close()
    return result


async def run_nats(
    url: str, subject: str, seconds: float, in_flight: int, barrier: Barrier
) -> Result:
    import nats  # nats-py: only this benchmark needs it

    result = Result()
    instance = uuid.uuid4().hex
    window = [float("inf"), float("inf")]
    connection = await nats.connect(url)

    async def on_message(message: Any) -> None:
        _received(result, instance, message.data, window)

    await connection.subscribe(subject, cb=on_message)
    await connection.flush()
    try:
        unflushed = 0

        async def publish(payload: str) -> None:
            nonlocal unflushed
            await connection.publish(subject, payload.encode())
            unflushed += 1
            if unflushed >= in_flight:
                unflushed = 0
                await connection.flush()

        await asyncio.to_thread(barrier.wait)
        cpu = time.process_time()
        window[:] = [time.monotonic(), time.monotonic() + seconds]
        # One publisher (publishes do not wait for a round trip; the flush bounds what is out).
        await _publish_for(window, 1, publish, instance, result)
        await connection.flush()
        await asyncio.sleep(1.0)
        result.cpu_seconds = time.process_time() - cpu
    finally:
        await connection.drain()
    return result


def replica_process(
    transport: str, args: argparse.Namespace, name: str, barrier: Barrier, results: Any
) -> None:
    if transport == "notify":
        coroutine = run_postgres(
            args.postgres_dsn, name, args.seconds, args.in_flight, args.pg_connections, barrier
        )
    else:
        coroutine = run_nats(args.nats, name, args.seconds, args.in_flight, barrier)
    results.put(asyncio.run(coroutine))


def nats_server_pids() -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if entry.name.isdigit() and (entry / "comm").read_text().strip() == "nats-server":
                pids.append(int(entry.name))
    return pids


def broker_cpu(transport: str) -> float:
    if transport == "notify":
        return sum(postgres_processes().values())
    return sum(cpu_seconds(pid) for pid in nats_server_pids())


def run(transport: str, replicas: int, args: argparse.Namespace) -> dict[str, Any]:
    note = wait_for_quiet(args.quiet_wait)
    name = f"spades_fanout.bench_{uuid.uuid4().hex[:8]}"
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(replicas + 1)
    results = context.Queue()
    workers = [
        context.Process(
            target=replica_process, args=(transport, args, name, barrier, results), daemon=True
        )
        for _ in range(replicas)
    ]
    for worker in workers:
        worker.start()
    barrier.wait(timeout=60)
    broker = broker_cpu(transport)
    total = Result()
    for _ in workers:
        one = results.get(timeout=args.seconds + 60)
        total.sent += one.sent
        total.received += one.received
        total.latencies.extend(one.latencies)
        total.cpu_seconds += one.cpu_seconds
    broker = broker_cpu(transport) - broker
    for worker in workers:
        worker.join(timeout=30)
    latencies = sorted(total.latencies)

    def quantile(q: float) -> float:
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000

    return {
        "transport": transport,
        "replicas": replicas,
        "sent_per_s": total.sent / args.seconds,
        "delivered_per_s": total.received / args.seconds,
        "expected": total.sent * (replicas - 1),
        "delivered": total.received,
        "p50_ms": quantile(0.5) if latencies else float("nan"),
        "p99_ms": quantile(0.99) if latencies else float("nan"),
        "cpu_us": (total.cpu_seconds + broker) / total.received * 1e6
        if total.received
        else float("nan"),
        "broker_us": broker / total.received * 1e6 if total.received else float("nan"),
        "note": note,
    }


HEADER = (
    f"{'transport':<9} {'R':>2} {'sent/s':>9} {'delivered/s':>11} {'lost':>6} {'p50 ms':>7}"
    f" {'p99 ms':>7} {'CPU µs/delivery':>15} {'of it broker':>12}"
)


def row(result: dict[str, Any]) -> str:
    lost = result["expected"] - result["delivered"]
    return (
        f"{result['transport']:<9} {result['replicas']:>2} {result['sent_per_s']:>9,.0f}"
        f" {result['delivered_per_s']:>11,.0f} {lost:>6} {result['p50_ms']:>7.2f}"
        f" {result['p99_ms']:>7.2f} {result['cpu_us']:>15.1f} {result['broker_us']:>12.1f}"
        + (f"  ({result['note']})" if result["note"] else "")
    )


def main() -> None:
    parse = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parse.add_argument("--replicas", default="2,4", help="comma-separated counts (default 2,4)")
    parse.add_argument("--seconds", type=float, default=5.0, help="measured seconds per run")
    parse.add_argument("--transports", default="notify,nats", help="notify, nats or both")
    parse.add_argument("--postgres-dsn", default=DEFAULT_DSN)
    parse.add_argument("--nats", default=DEFAULT_NATS, help="NATS server URL")
    parse.add_argument("--in-flight", type=int, default=32, help="outstanding per process")
    parse.add_argument("--pg-connections", type=int, default=4, help="NOTIFY connections")
    parse.add_argument("--quiet-wait", type=float, default=10.0)
    args = parse.parse_args()
    transports = [name.strip() for name in args.transports.split(",") if name.strip()]
    print(
        f"fan-out benchmark: {args.seconds:g} s per run, {args.in_flight} in flight per process,"
        f" {os.cpu_count()} CPUs (clock tick {CLOCK_TICK})",
        flush=True,
    )
    print(HEADER, flush=True)
    for replicas in (int(n) for n in args.replicas.split(",")):
        for transport in transports:  # interleaved: each count runs both back to back
            print(row(run(transport, replicas, args)), flush=True)


if __name__ == "__main__":
    main()
