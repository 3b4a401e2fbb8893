"""Recovery benchmark: SIGKILL the server in the middle of many running matches, restart it on
the same log and port, and time how long until every table plays again.

Run with ``python tests/benchmarks/bench_recovery.py`` (defaults: 64 tables, 2 client processes;
``--help`` for the options). Not part of ``make test``.

What happens
------------
A ``spades-server`` process (the real console script, embedded SQLite log in a temporary
folder, durability ``normal``, JSON log at ``--log-level`` to a file) listens on a port picked
beforehand. Client processes (``--client-procs``) create the tables (default rules, to 500
points, so no match ends during the run) and play each seat with the SDK's ``play_match`` and a
``RandomBot``, one SDK client (one channel) per table, over loopback. Once every table has
accepted actions, play goes on for ``--warmup`` seconds; then the server gets SIGKILL and, once
it is dead, the same command is run again (same file, same port). The bots are not told
anything: they reconnect with the SDK's back-off and resume from their last sequence. By default
that is the SDK's own policy (``Backoff()`` in ``play_match``, and the gRPC channel's reconnect
back-off from ``DEFAULT_CHANNEL_OPTIONS``, 250 ms growing to 5 s; note that gRPC shares one
subchannel, so one connection and one back-off, between channels of a process with the same
target and options). ``--fast-clients`` retries every 0.1 s at both levels instead, which leaves
the server's own part of the recovery.

What is measured (all from the moment the restart command is run)
-----------------------------------------------------------------
* **banner**: the new process prints its banner (it listens and serves);
* **health**: a gRPC health check (``grpc.health.v1.Health/Check``, polled every 20 ms on a
  fresh channel) first answers SERVING;
* **tables recovered**: for each table, the arrival of its first accepted ActionResult on a
  Play stream opened after the old process died (so necessarily answered by the new one); the
  figure is the *last* table's (every table accepts actions again), with the median and the
  first for context. Times are ``time.monotonic()``, one clock for every process here.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import multiprocessing
import queue
import signal
import statistics
import sys
import tempfile
import threading
import time
from multiprocessing.sharedctypes import Synchronized
from multiprocessing.synchronize import Event as EventType
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from spades.bot import Backoff, play_match
from spades.client.client import DEFAULT_CHANNEL_OPTIONS
from spades.engine import Rules
from spades_bots.random_bot import RandomBot
from tests.support.faults import Accepted, RecordingClient, seat_four
from tests.support.processes import ServerProcess, free_port, server_args, spades_server

#: --fast-clients: no waiting between attempts beyond 0.1 s, in the SDK or in gRPC's channel.
FAST_BACKOFF = Backoff(initial=0.05, maximum=0.1)
FAST_CHANNEL_OPTIONS = (
    *DEFAULT_CHANNEL_OPTIONS,
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 100),
)


async def client_main(
    index: int,
    tables: int,
    address: str,
    fast: bool,
    died_at: Synchronized[float],
    ready: multiprocessing.Queue[Any],
    recovered: multiprocessing.Queue[Any],
    stop: EventType,
) -> dict[str, int]:
    backoff = FAST_BACKOFF if fast else Backoff()
    options = FAST_CHANNEL_OPTIONS if fast else DEFAULT_CHANNEL_OPTIONS
    clients: list[RecordingClient] = []
    tasks: list[asyncio.Future[Any]] = []
    done: set[str] = set()
    playing: set[str] = set()

    def on_accepted(table_id: str, accepted: Accepted) -> None:
        playing.add(table_id)
        dead = died_at.value
        if dead and accepted.stream_opened_at > dead and table_id not in done:
            done.add(table_id)
            recovered.put((table_id, accepted.received_at))

    for number in range(tables):
        client = RecordingClient(address, options)
        clients.append(client)
        table_id, tokens = await seat_four(client, Rules(), f"recovery {index}.{number}")
        for seat, token in enumerate(tokens):
            client.journals[token].on_accepted = lambda accepted, table_id=table_id: on_accepted(
                table_id, accepted
            )
            tasks.append(
                asyncio.ensure_future(
                    play_match(client, RandomBot(seat), token, table_id=table_id, backoff=backoff)
                )
            )
    while len(playing) < tables:
        await asyncio.sleep(0.05)
    ready.put(index)
    while not stop.is_set():
        await asyncio.sleep(0.05)
    ended = sum(task.done() and not task.cancelled() and task.exception() is None for task in tasks)
    failed = [task for task in tasks if task.done() and task.exception() is not None]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    for client in clients:
        await client.close()
    if failed:
        print(f"client {index}: {len(failed)} bots failed: {failed[0].exception()!r}", flush=True)
    return {"seats_ended": ended, "seats_failed": len(failed)}


def client_process(
    index: int,
    tables: int,
    address: str,
    fast: bool,
    died_at: Synchronized[float],
    ready: multiprocessing.Queue[Any],
    recovered: multiprocessing.Queue[Any],
    stop: EventType,
    results: multiprocessing.Queue[Any],
    verbose: bool,
) -> None:
    # The SDK logs a warning for each lost connection: 4 per table at each kill.
    logging.basicConfig(level=logging.INFO if verbose else logging.ERROR)
    outcome = asyncio.run(
        client_main(index, tables, address, fast, died_at, ready, recovered, stop)
    )
    results.put(outcome)


def poll_health(address: str, started: float, found: list[float], give_up: threading.Event) -> None:
    """Record when the server first answers a health check with SERVING."""
    while not give_up.is_set():
        try:
            # A subchannel of its own: not one still backing off from an earlier attempt.
            with grpc.insecure_channel(
                address, options=[("grpc.use_local_subchannel_pool", 1)]
            ) as channel:
                answer = health_pb2_grpc.HealthStub(channel).Check(
                    health_pb2.HealthCheckRequest(), timeout=0.5
                )
            if answer.status == health_pb2.HealthCheckResponse.SERVING:
                found.append(time.monotonic() - started)
                return
        except grpc.RpcError:
            pass
        time.sleep(0.02)


def main() -> None:
    parse = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parse.add_argument("--tables", type=int, default=64)
    parse.add_argument("--client-procs", type=int, default=2)
    parse.add_argument("--warmup", type=float, default=3.0, help="seconds of play before the kill")
    parse.add_argument(
        "--fast-clients",
        action="store_true",
        help="reconnect every 0.1 s (SDK back-off and gRPC channel back-off) instead of with the"
        " SDK's defaults: what is left is the server's own recovery",
    )
    parse.add_argument("--log-level", default="info", choices=["debug", "info", "warning"])
    parse.add_argument("--timeout", type=float, default=120.0)
    parse.add_argument("--verbose", action="store_true", help="the SDK's log (reconnections)")
    args = parse.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="bench-recovery-"))
    database = folder / "tables.db"
    command = server_args(database, free_port(), "--log-level", args.log_level)
    context = multiprocessing.get_context("spawn")
    died_at = context.Value("d", 0.0)
    ready: multiprocessing.Queue[Any] = context.Queue()
    recovered: multiprocessing.Queue[Any] = context.Queue()
    results: multiprocessing.Queue[Any] = context.Queue()
    stop = context.Event()
    shares = [
        args.tables // args.client_procs + (i < args.tables % args.client_procs)
        for i in range(args.client_procs)
    ]

    first_manager = spades_server(folder / "first.log", *command)
    first: ServerProcess = first_manager.__enter__()
    processes = [
        context.Process(
            target=client_process,
            args=(
                i,
                share,
                first.address,
                args.fast_clients,
                died_at,
                ready,
                recovered,
                stop,
                results,
                args.verbose,
            ),
        )
        for i, share in enumerate(shares)
    ]
    second_manager = None
    try:
        for process in processes:
            process.start()
        for _ in processes:
            ready.get(timeout=args.timeout)
        time.sleep(args.warmup)

        first.terminate(signal.SIGKILL)
        first.wait(10)
        died_at.value = time.monotonic()
        first_manager.__exit__(None, None, None)
        log_bytes = sum(path.stat().st_size for path in folder.glob("tables.db*"))

        health: list[float] = []
        give_up = threading.Event()
        restarted = time.monotonic()
        poller = threading.Thread(
            target=poll_health, args=(first.address, restarted, health, give_up), daemon=True
        )
        poller.start()
        second_manager = spades_server(folder / "second.log", *command)
        second = second_manager.__enter__()
        banner = time.monotonic() - restarted
        times: dict[str, float] = {}
        deadline = restarted + args.timeout
        while len(times) < args.tables and time.monotonic() < deadline:
            try:
                table_id, at = recovered.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            times[table_id] = at - restarted
        poller.join(timeout=10)
        give_up.set()
        stop.set()
        outcomes = [results.get(timeout=60) for _ in processes]
        for process in processes:
            process.join(timeout=30)
        second.terminate(signal.SIGTERM)
        second.wait(15)
    finally:
        stop.set()
        for process in processes:
            if process.is_alive():
                process.kill()
        first_manager.__exit__(None, None, None)
        if second_manager is not None:
            second_manager.__exit__(None, None, None)

    ordered = sorted(times.values())
    backoff = "every 0.1 s (--fast-clients)" if args.fast_clients else "the SDK's defaults"
    print(
        f"SIGKILL with {args.tables} running tables ({args.client_procs} client processes, "
        f"warmup {args.warmup:g} s, reconnection back-off: {backoff});"
        f" log at the kill: {log_bytes / 1e6:.1f} MB"
    )
    print(f"  restart -> banner (listening):              {banner:6.2f} s")
    if health:
        print(f"  restart -> health check SERVING:            {health[0]:6.2f} s")
    else:
        print("  restart -> health check SERVING:            not within the timeout")
    if ordered:
        print(
            f"  restart -> first table accepts an action:   {ordered[0]:6.2f} s\n"
            f"  restart -> half the tables:                 {statistics.median(ordered):6.2f} s\n"
            f"  restart -> EVERY table accepts actions:     {ordered[-1]:6.2f} s"
            f"  ({len(ordered)}/{args.tables} tables)"
        )
    print(
        f"  seats whose match ended: {sum(o['seats_ended'] for o in outcomes)},"
        f" bots failed: {sum(o['seats_failed'] for o in outcomes)}; logs in {folder}"
    )
    if len(ordered) < args.tables:
        sys.exit(f"only {len(ordered)} of {args.tables} tables recovered")


if __name__ == "__main__":
    main()
