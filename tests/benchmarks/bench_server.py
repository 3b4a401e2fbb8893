"""Server benchmark: N tables of four random-playing clients against a real server process.

Run with ``make bench-server`` (or ``python tests/benchmarks/bench_server.py --tables 1,16,64
--seconds 10``).

What is measured
----------------
For each N (default 1, 16, 64) a fresh ``spades-server`` process is started (the real console
script: embedded SQLite log in a temporary folder, default durability ``normal`` unless
``--durability full``, default log level ``info`` with the JSON log going to a file, metrics on).
Client processes (``--client-procs``, default 1) create the N tables (default rules), seat four
bots at each and open the four Play streams over loopback (grpc.aio, one channel per table).
Once every client process is ready, all start together and play for ``--seconds`` seconds:
each seat answers each of its prompts at once with a random legal action.

* **actions/s**: accepted actions whose result arrived inside the window, per second;
* **hands/s**: ``HandScored`` events inside the window (counted once per table), per second;
* **latency p50/p99**: from writing an action on the seat's stream to receiving the event it
  caused on the same stream (the event carries the action id);
* **server peak memory**: ``VmHWM`` of the server process (``/proc/PID/status``) at the end;
* **server CPU / client CPU**: CPU seconds over wall seconds in the window (100% = one core
  busy), to see which side is the limit. The server is one Python process (its event loop plus
  the log's writer thread and gRPC's threads), so about 100% means it is CPU-bound;
* **server action / append (mean)**: from the server's own histograms
  (``spades_action_seconds``, ``spades_log_append_seconds``): how much of the latency is
  spent inside the server deciding and appending durably.

A match that ends (rare with random bids) is replaced by a new table from the same clients.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from spades import protocol
from spades.engine import Rules
from spades.v1 import lobby_pb2, lobby_pb2_grpc, play_pb2, play_pb2_grpc
from tests.operations.server_process import (
    ServerProcess,
    clean_environment,
    spades_server,
)

TOKEN_KEY = "spades-seat-token"


@dataclass
class Stats:
    actions: int = 0
    refused: int = 0
    hands: int = 0
    matches_ended: int = 0
    latencies: list[float] = field(default_factory=list)
    cpu_seconds: float = 0.0
    setup_seconds: float = 0.0

    def merge(self, other: Stats) -> None:
        self.actions += other.actions
        self.refused += other.refused
        self.hands += other.hands
        self.matches_ended += other.matches_ended
        self.latencies.extend(other.latencies)
        self.cpu_seconds += other.cpu_seconds
        self.setup_seconds = max(self.setup_seconds, other.setup_seconds)


class Window:
    """The measured interval, in this process's perf_counter time."""

    def __init__(self) -> None:
        self.start = float("inf")
        self.stop = float("inf")

    def inside(self, now: float) -> bool:
        return self.start <= now < self.stop


async def open_table(
    channel: grpc.aio.Channel, name: str
) -> tuple[list[Any], lobby_pb2_grpc.LobbyServiceStub]:
    lobby = lobby_pb2_grpc.LobbyServiceStub(channel)
    play = play_pb2_grpc.PlayServiceStub(channel)
    created = await lobby.CreateTable(
        lobby_pb2.CreateTableRequest(name=name, rules=protocol.rules_to_proto(Rules()))
    )
    calls = []
    for index in range(4):
        joined = await lobby.JoinTable(
            lobby_pb2.JoinTableRequest(
                table_id=created.table.table_id, player_name=f"bench {index}", bot=True
            )
        )
        call = play.Play(metadata=((TOKEN_KEY, joined.seat_token),))  # type: ignore[call-arg]
        await call.write(play_pb2.PlayRequest(start=play_pb2.StartPlay()))
        calls.append(call)
    return calls, lobby


async def play_seat(
    call: Any, seat: int, rng: random.Random, window: Window, started: asyncio.Event, stats: Stats
) -> None:
    """One random bot: answer every prompt at once; until the match ends or the window closes."""
    sent: dict[str, float] = {}
    while True:
        message = await call.read()
        if message is grpc.aio.EOF:  # type: ignore[attr-defined]
            return
        kind = message.WhichOneof("kind")
        now = time.perf_counter()
        if kind == "event":
            event = message.event
            if event.action_id:
                at = sent.pop(event.action_id, None)
                if at is not None and window.inside(at):
                    stats.latencies.append(now - at)
            what = event.WhichOneof("kind")
            if what == "hand_scored" and seat == 0 and window.inside(now):
                stats.hands += 1
            elif what == "seed_revealed":
                if seat == 0:
                    stats.matches_ended += 1
                return
        elif kind == "prompt":
            if not started.is_set():
                await started.wait()
            if time.perf_counter() >= window.stop:
                return
            action_id = uuid.uuid4().hex[:16]
            action = rng.choice(list(message.prompt.legal_actions))
            sent[action_id] = time.perf_counter()
            await call.write(
                play_pb2.PlayRequest(
                    action=play_pb2.ActionRequest(
                        action_id=action_id, sequence=message.prompt.sequence, action=action
                    )
                )
            )
        elif kind == "action_result":
            if not window.inside(now):
                continue
            if message.action_result.accepted:
                stats.actions += 1
            else:
                stats.refused += 1


async def run_table(
    address: str,
    index: int,
    seed: int,
    window: Window,
    ready: asyncio.Event,
    started: asyncio.Event,
    stats: Stats,
    open_calls: list[Any],
) -> None:
    rng = random.Random(seed)
    async with grpc.aio.insecure_channel(address) as channel:
        calls, _ = await open_table(channel, f"bench {index}")
        open_calls.extend(calls)
        ready.set()
        while True:
            await asyncio.gather(
                *(
                    play_seat(call, seat, rng, window, started, stats)
                    for seat, call in enumerate(calls)
                )
            )
            if time.perf_counter() >= window.stop:
                return
            for call in calls:
                call.cancel()
            calls, _ = await open_table(channel, f"bench {index}")
            open_calls.extend(calls)


async def client_main(
    address: str, tables: list[int], seconds: float, barrier: Barrier | None
) -> Stats:
    stats = Stats()
    window = Window()
    started = asyncio.Event()
    readies = [asyncio.Event() for _ in tables]
    open_calls: list[Any] = []
    setup = time.perf_counter()
    runners = [
        asyncio.create_task(
            run_table(address, index, 1000 + index, window, ready, started, stats, open_calls)
        )
        for index, ready in zip(tables, readies, strict=True)
    ]
    await asyncio.gather(*(ready.wait() for ready in readies))
    stats.setup_seconds = time.perf_counter() - setup
    if barrier is not None:
        await asyncio.to_thread(barrier.wait)
    cpu = time.process_time()
    window.start = time.perf_counter()
    window.stop = window.start + seconds
    started.set()
    await asyncio.sleep(seconds)
    stats.cpu_seconds = time.process_time() - cpu
    await asyncio.sleep(0.5)  # let results of actions sent just before the end arrive
    for call in open_calls:
        call.cancel()
    for runner in runners:
        runner.cancel()
    await asyncio.gather(*runners, return_exceptions=True)
    return stats


def client_process(
    address: str,
    tables: list[int],
    seconds: float,
    barrier: Barrier,
    results: multiprocessing.Queue[Stats],
) -> None:
    results.put(asyncio.run(client_main(address, tables, seconds, barrier)))


def proc_status(pid: int, key: str) -> str:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return line.split(":", 1)[1].strip()
    return "?"


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def histogram(server: ServerProcess, name: str) -> tuple[float, float]:
    samples = server.metrics()
    return samples.get((f"{name}_sum", ()), 0.0), samples.get((f"{name}_count", ()), 0.0)


def run_one(tables: int, args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    database = folder / f"bench-{tables}.db"
    server_args = [
        "--listen",
        "127.0.0.1:0",
        "--metrics",
        "127.0.0.1:0",
        "--database",
        str(database),
        "--durability",
        args.durability,
        "--log-format",
        "json",
        "--log-level",
        args.log_level,
    ]
    with spades_server(folder / f"server-{tables}.log", *server_args) as server:
        pid = server.process.pid
        procs = min(args.client_procs, tables)
        shares = [list(range(tables))[i::procs] for i in range(procs)]
        context = multiprocessing.get_context("spawn")
        barrier = context.Barrier(procs + 1)
        results: multiprocessing.Queue[Stats] = context.Queue()
        workers = [
            context.Process(
                target=client_process,
                args=(server.address, share, args.seconds, barrier, results),
                daemon=True,
            )
            for share in shares
        ]
        for worker in workers:
            worker.start()
        barrier.wait(timeout=120)
        action_before = histogram(server, "spades_action_seconds")
        append_before = histogram(server, "spades_log_append_seconds")
        server_cpu = cpu_seconds(pid)
        begun = time.perf_counter()
        profiler = None
        if args.py_spy:
            # Collapsed stacks of the server during the window (py-spy: pip install py-spy).
            profiler = subprocess.Popen(
                [
                    str(Path(sys.executable).with_name("py-spy")),
                    "record",
                    "--pid",
                    str(pid),
                    "--duration",
                    str(max(1, int(args.seconds) - 1)),
                    "--format",
                    "raw",
                    "--threads",
                    "--output",
                    f"{args.py_spy}-{tables}.txt",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        time.sleep(args.seconds)
        if profiler is not None:
            profiler.wait(30)
        server_cpu = cpu_seconds(pid) - server_cpu
        elapsed = time.perf_counter() - begun
        action_after = histogram(server, "spades_action_seconds")
        append_after = histogram(server, "spades_log_append_seconds")
        total = Stats()
        for _ in workers:
            total.merge(results.get(timeout=60))
        for worker in workers:
            worker.join(timeout=30)
        peak = proc_status(pid, "VmHWM")
        server.terminate()
        server.wait(30)

    latencies = sorted(total.latencies)

    def quantile(q: float) -> float:
        if not latencies:
            return float("nan")
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000

    def mean_ms(before: tuple[float, float], after: tuple[float, float]) -> float:
        count = after[1] - before[1]
        return (after[0] - before[0]) / count * 1000 if count else float("nan")

    return {
        "tables": tables,
        "actions_per_s": total.actions / args.seconds,
        "hands_per_s": total.hands / args.seconds,
        "p50_ms": quantile(0.50),
        "p99_ms": quantile(0.99),
        "mean_ms": statistics.fmean(latencies) * 1000 if latencies else float("nan"),
        "refused": total.refused,
        "peak_memory": peak,
        "server_cpu": server_cpu / elapsed,
        "client_cpu": total.cpu_seconds / args.seconds,
        "client_procs": procs,
        "server_action_ms": mean_ms(action_before, action_after),
        "server_append_ms": mean_ms(append_before, append_after),
        "setup_s": total.setup_seconds,
    }


def main() -> None:
    parse = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parse.add_argument("--tables", default="1,16,64", help="comma-separated N (default 1,16,64)")
    parse.add_argument("--seconds", type=float, default=10.0, help="measured seconds per N")
    parse.add_argument("--client-procs", type=int, default=1, help="client processes")
    parse.add_argument("--durability", choices=["normal", "full"], default="normal")
    parse.add_argument("--log-level", choices=["debug", "info", "warning", "error"], default="info")
    parse.add_argument(
        "--py-spy",
        metavar="PREFIX",
        help="profile the server with py-spy during each window into PREFIX-N.txt (raw stacks)",
    )
    args = parse.parse_args()
    os.environ.clear()
    os.environ.update(clean_environment())
    print(
        f"spades-server benchmark: {args.seconds:g} s per N, durability {args.durability},"
        f" log level {args.log_level}, {args.client_procs} client process(es),"
        f" {os.cpu_count()} CPUs",
        flush=True,
    )
    header = (
        f"{'N':>3} {'actions/s':>10} {'hands/s':>8} {'p50 ms':>7} {'p99 ms':>7} {'mean ms':>8}"
        f" {'srv act ms':>10} {'append ms':>9} {'srv CPU':>7} {'cli CPU':>7} {'peak RSS':>10}"
    )
    print(header, flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-server-") as folder:
        for tables in (int(n) for n in args.tables.split(",")):
            row = run_one(tables, args, Path(folder))
            print(
                f"{row['tables']:>3} {row['actions_per_s']:>10,.0f} {row['hands_per_s']:>8.1f}"
                f" {row['p50_ms']:>7.1f} {row['p99_ms']:>7.1f} {row['mean_ms']:>8.1f}"
                f" {row['server_action_ms']:>10.2f} {row['server_append_ms']:>9.2f}"
                f" {row['server_cpu']:>7.0%} {row['client_cpu']:>7.0%}"
                f" {row['peak_memory']:>10}"
                + (f"  ({row['refused']} refused)" if row["refused"] else ""),
                flush=True,
            )


if __name__ == "__main__":
    main()
