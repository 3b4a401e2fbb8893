"""Server benchmark: N tables of four random-playing clients against real server processes.

Run with ``make bench-server`` (or ``python tests/benchmarks/bench_server.py --tables 1,16,64
--seconds 10 --backends sqlite,postgres,postgres-2,postgres-2-split``).

Backends
--------
For each N (default 1, 16, 64) and each backend (``--backends``), fresh ``spades-server``
processes are started (the real console script, default log level ``info`` with the JSON log
going to a file, metrics on):

* ``sqlite``: one process on the embedded SQLite log in a temporary folder (durability
  ``normal`` unless ``--durability full``);
* ``postgres``: one process on the PostgreSQL log (``--postgres-dsn``, default
  ``SPADES_TEST_POSTGRES_DSN`` or ``postgresql://postgres@127.0.0.1:5432/test``), in a fresh
  schema per run chosen through the DSN (``options=-c search_path=bench_...``), dropped after;
* ``postgres-2``: two processes on one such schema; table *i* lives on replica *i mod 2* (all
  four seats create, join and play through it), so the load is split evenly;
* ``postgres-4``: four processes on one schema, table *i* on replica *i mod 4*;
* ``postgres-2-idle``: two processes, every table on the first: what following the log
  costs a replica that serves none of them (its CPU per action elsewhere);
* ``postgres-2-split``: two processes, and every table's seats alternate between them (seats
  0 and 2 on one replica, 1 and 3 on the other): every action's effect reaches the next seat's
  stream through the other replica (LISTEN/NOTIFY and a read), the worst case for replicas.

Client processes (``--client-procs``, default 1) create the N tables (default rules), seat four
bots at each and open the four Play streams over loopback (grpc.aio, one channel per table and
replica), batched (``StartPlay.batched``: one message per change of the table for each seat;
``--unbatched`` opens them as clients before batches did, one message per event, prompt and
result, to compare). Once every client process is ready, all start together and play for
``--seconds`` seconds: each seat answers each of its prompts at once with a random legal action.
A match that ends (rare with random bids) is replaced by a new table from the same clients.

The references: a raw grpc.aio ping-pong and a raw fan-out
---------------------------------------------------------
Before the backends of each N, the same kind of client process runs N streams against a bare
grpc.aio server (``tests/benchmarks/pingpong.py``: one bidirectional method, raw bytes, one
response per request) for the same window. Its round trips per second and its server's CPU per
round trip are the ceiling of one-message-in, one-message-out over gRPC on this machine in this
run; issue 16's targets are ratios to it. Then N fan-out tables of four streams each (the same
server's second method): each request, from the seat whose turn it is, is answered on all four
streams of its table, each written by its stream's own task: one message in and four out, the
least one action of the service causes (every seat's stream gets the news), with nothing of the
service. The last two tables give each backend's figures as ratios to each, the first also the
fan-out's own ratios to the ping-pong (what the targets leave the service beyond its messages);
``--no-reference`` skips both.

What is printed
---------------
First table (a row as each run ends, the backends of one N next to each other):

* **actions/s**: accepted actions whose result arrived inside the window, per second, and
  **vs sqlite**: that as a share of the ``sqlite`` row with the same N;
* **hands/s**: ``HandScored`` events inside the window (counted once per table), per second;
* **latency p50/p99/mean**: from writing an action on the acting seat's stream to receiving
  the event it caused on that same stream (the event carries the action id), whichever replica
  that stream is on;
* **peak RSS**: ``VmHWM`` of each server process (``/proc/PID/status``) at the end, in MiB.

Second table, where the time goes (printed once every run is done):

* **srv act / append ms**: from the servers' own histograms (``spades_action_seconds``,
  ``spades_log_append_seconds``, every replica's /metrics together): mean time inside the
  server per action (decide, read/append, fold) and per log append; **append p50/p99** are
  estimated from the append histogram's buckets (linear inside a bucket, like PromQL's
  ``histogram_quantile``; the buckets are 0.5, 1, 2.5, 5, 10 ms ...);
* **srv CPU** (each process), **PG CPU** (the PostgreSQL backends serving the servers'
  connections, found through their sockets; plus, after ``/``, every other PostgreSQL process
  such as the WAL writer), **cli CPU**, and **machine** (all CPUs busy, from ``/proc/stat``;
  200% = both cores of a 2-CPU machine): CPU seconds over wall seconds in the window
  (100% = one core busy);
* **CPU ms/action** for the servers, PostgreSQL and the clients: CPU seconds spent in the window
  divided by the actions played, the cost that decides how far each part scales.

Issue 16 changed what follows (figures and commands in ``docs/scaling.md``): a replica now
follows only the tables it serves and commands them from that cache without the read before
every command; its lobby no longer decodes every other table's events. A third table prints
server CPU per action by replica count, and ``postgres-2-idle`` what following costs a replica
that serves nothing. ``--baseline SRC`` runs each backend again on an older server source, and
``--nats URL`` each backend of several replicas with ``--fanout URL``, interleaved in one run.

Where the time goes (2-CPU development machine, PostgreSQL 15 on the same host with
``synchronous_commit=on``; figures in the closing note of issue 6, before issue 16)
---------------------------------------------------------------------------------------
Every configuration is CPU-bound, so read the CPU ms per action. SQLite: the one server process
is at ~105% (event loop + gRPC poller + log writer threads) and spends ~0.9-1.1 ms of CPU per
action, clients ~0.5 ms: ~1,000-1,200 actions/s. PostgreSQL, one replica: the server spends
~1.3-1.7 ms per action (asyncpg protocol work for a read of the table's stream before every
command, since it is not the sole writer, then the append, each with the pool's reset query on
release (a third round trip, ~0.1 ms, ``asyncpg.create_pool(reset=...)``), the coalesced NOTIFY,
its own notifications coming back), PostgreSQL's backends ~0.5-0.7 ms; the server is at ~90% of
a core while the machine still has ~0.3 core free, so one replica is bound by its own Python
process (~600-700 actions/s here). At N=1 only latency counts: an action takes ~2.4 ms at p50
(two or three round trips and a commit) against ~1 ms on SQLite. Two replicas: each one also
follows every event of the other (lobby projection, reading them from PostgreSQL): ~0.2 ms of
CPU per foreign action under load (more at low rates: an idle replica used ~17% of a core to
follow ~300 actions/s), so the servers' CPU per action rises from ~1.3-1.7 to ~1.5-1.9 ms; the
machine is then saturated (~200%) and two replicas come within a few per cent of one (-4% to
+13% over two full runs at N=16 and 64). Estimate for a bigger machine: a replica gets one core
and costs ~1.4 ms per own action plus ~0.2 ms per action anywhere, so R replicas give about R /
(1.4 + 0.2 R) actions per ms: ~1,100/s with 2, ~1,800/s with 4, ~2,700/s with 8, never above
~5,000/s while every replica follows every event; PostgreSQL needs ~0.55 ms of CPU per action
(about one core per 1,800 actions/s, ~2.5 replicas) before its WAL flush rate (a few thousand
commits/s here) matters. Splitting a table's seats over replicas costs another ~0.2-0.5 ms per
action (both replicas fold and stream every event): keep a table on one replica.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import math
import multiprocessing
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

import asyncpg
import grpc

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from spades import protocol
from spades.engine import Rules
from spades.v1 import lobby_pb2, lobby_pb2_grpc, play_pb2, play_pb2_grpc
from tests.benchmarks import pingpong
from tests.support.processes import ServerProcess, clean_environment, spades_server

TOKEN_KEY = "spades-seat-token"
DEFAULT_DSN = os.environ.get(
    "SPADES_TEST_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test"
)
CLOCK_TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Backend:
    name: str
    postgres: bool
    replicas: int
    split_seats: bool = False
    #: Every table on the first replica; the others serve nothing (what following costs them).
    idle_others: bool = False


BACKENDS = {
    backend.name: backend
    for backend in (
        Backend("sqlite", postgres=False, replicas=1),
        Backend("postgres", postgres=True, replicas=1),
        Backend("postgres-2", postgres=True, replicas=2),
        Backend("postgres-4", postgres=True, replicas=4),
        Backend("postgres-2-split", postgres=True, replicas=2, split_seats=True),
        Backend("postgres-2-idle", postgres=True, replicas=2, idle_others=True),
    )
}


# -- clients -----------------------------------------------------------------------------------


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
    channels: dict[int, grpc.aio.Channel],
    home: int,
    seat_replicas: list[int],
    name: str,
    batched: bool = True,
) -> list[Any]:
    """Create a table on replica ``home``; seat ``i`` joins and plays on ``seat_replicas[i]``."""
    created = await lobby_pb2_grpc.LobbyServiceStub(channels[home]).CreateTable(
        lobby_pb2.CreateTableRequest(name=name, rules=protocol.rules_to_proto(Rules()))
    )
    calls = []
    for index, replica in enumerate(seat_replicas):
        joined = await lobby_pb2_grpc.LobbyServiceStub(channels[replica]).JoinTable(
            lobby_pb2.JoinTableRequest(
                table_id=created.table.table_id, player_name=f"bench {index}", bot=True
            )
        )
        play = play_pb2_grpc.PlayServiceStub(channels[replica])
        call = play.Play(metadata=((TOKEN_KEY, joined.seat_token),))  # type: ignore[call-arg]
        await call.write(play_pb2.PlayRequest(start=play_pb2.StartPlay(batched=batched)))
        calls.append(call)
    return calls


async def play_seat(
    call: Any, seat: int, rng: random.Random, window: Window, started: asyncio.Event, stats: Stats
) -> None:
    """One random bot: answer every prompt at once; until the match ends or the window closes.

    As little work per message as it can (the ping-pong's client does none): a batch's events
    are looked at for the seat's own action id (latency) and the match's end only."""
    sent: dict[str, float] = {}
    numbers = itertools.count()
    prefix = f"{seat}-{rng.getrandbits(32):08x}-"
    read, write = call.read, call.write
    eof = grpc.aio.EOF  # type: ignore[attr-defined]
    while True:
        message = await read()
        if message is eof:
            return
        now = time.perf_counter()
        if message.HasField("batch"):  # a batched stream (the default): its parts in order
            batch = message.batch
            events: Any = batch.events
            results: Any = batch.action_results
            prompt = batch.prompt if batch.HasField("prompt") else None
        else:
            kind = message.WhichOneof("kind")
            events = (message.event,) if kind == "event" else ()
            results = (message.action_result,) if kind == "action_result" else ()
            prompt = message.prompt if kind == "prompt" else None
        for event in events:
            if event.action_id:
                at = sent.pop(event.action_id, None)
                if at is not None and window.inside(at):
                    stats.latencies.append(now - at)
            if event.HasField("hand_scored"):
                if seat == 0 and window.inside(now):
                    stats.hands += 1
            elif event.HasField("seed_revealed"):
                if seat == 0:
                    stats.matches_ended += 1
                return
        if results and window.inside(now):
            for result in results:
                if result.accepted:
                    stats.actions += 1
                else:
                    stats.refused += 1
        if prompt is not None:
            if not started.is_set():
                await started.wait()
            if time.perf_counter() >= window.stop:
                return
            action_id = prefix + str(next(numbers))
            legal = prompt.legal_actions
            sent[action_id] = time.perf_counter()
            await write(
                play_pb2.PlayRequest(
                    action=play_pb2.ActionRequest(
                        action_id=action_id,
                        sequence=prompt.sequence,
                        action=legal[rng.randrange(len(legal))],
                    )
                )
            )


async def run_table(
    addresses: list[str],
    split_seats: bool,
    index: int,
    seed: int,
    window: Window,
    ready: asyncio.Event,
    started: asyncio.Event,
    stats: Stats,
    open_calls: list[Any],
    batched: bool = True,
) -> None:
    rng = random.Random(seed)
    replicas = len(addresses)
    home = index % replicas
    seat_replicas = [(home + seat) % replicas if split_seats else home for seat in range(4)]
    async with contextlib.AsyncExitStack() as stack:
        channels = {
            replica: await stack.enter_async_context(grpc.aio.insecure_channel(addresses[replica]))
            for replica in sorted(set(seat_replicas))
        }
        calls = await open_table(channels, home, seat_replicas, f"bench {index}", batched)
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
            calls = await open_table(channels, home, seat_replicas, f"bench {index}", batched)
            open_calls.extend(calls)


async def client_main(
    addresses: list[str],
    split_seats: bool,
    tables: list[int],
    seconds: float,
    barrier: Barrier | None,
    batched: bool = True,
) -> Stats:
    stats = Stats()
    window = Window()
    started = asyncio.Event()
    readies = [asyncio.Event() for _ in tables]
    open_calls: list[Any] = []
    setup = time.perf_counter()
    runners = [
        asyncio.create_task(
            run_table(
                addresses,
                split_seats,
                index,
                1000 + index,
                window,
                ready,
                started,
                stats,
                open_calls,
                batched,
            )
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
    addresses: list[str],
    split_seats: bool,
    tables: list[int],
    seconds: float,
    barrier: Barrier,
    results: multiprocessing.Queue[Stats],
    batched: bool = True,
) -> None:
    results.put(asyncio.run(client_main(addresses, split_seats, tables, seconds, barrier, batched)))


# -- what the processes spend ------------------------------------------------------------------


def proc_status(pid: int, key: str) -> str:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return line.split(":", 1)[1].strip()
    return "?"


def peak_mib(pid: int) -> float:
    value = proc_status(pid, "VmHWM")  # "68284 kB"
    return int(value.split()[0]) / 1024 if value.endswith("kB") else float("nan")


def _stat_fields(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_seconds(pid: int) -> float:
    fields = _stat_fields(pid)
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICK


def postgres_processes() -> dict[int, float]:
    """Every live PostgreSQL process (any user's) -> its CPU seconds; the postmaster's count
    includes its reaped children, so backends that end during a window are not lost."""
    stats: dict[int, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError):
            if (entry / "comm").read_text().strip() == "postgres":
                stats[int(entry.name)] = _stat_fields(int(entry.name))
    found = {}
    for pid, fields in stats.items():
        ticks = int(fields[11]) + int(fields[12])
        if int(fields[1]) not in stats:  # the postmaster: + its reaped children
            ticks += int(fields[13]) + int(fields[14])
        found[pid] = ticks / CLOCK_TICK
    return found


def machine_busy_seconds() -> float:
    """CPU seconds all CPUs spent not idle (nor waiting for I/O) since boot."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]
    return (sum(fields[:8]) - idle) / CLOCK_TICK


def wait_for_quiet(limit: float, threshold: float = 0.3) -> str:
    """Wait (up to ``limit`` seconds) until the machine is nearly idle: other processes' load
    distorts every figure on a small machine. A note when it waited or gave up."""
    started = time.perf_counter()
    while True:
        before = machine_busy_seconds()
        time.sleep(0.5)
        busy = (machine_busy_seconds() - before) / 0.5
        waited = time.perf_counter() - started
        if busy <= threshold:
            return f"waited {waited:.0f} s for other load to end" if waited > 1 else ""
        if waited >= limit:
            return f"other load {busy:.0%} of a core before the run"


def tcp_peer_ports(pid: int, remote_port: int) -> set[int]:
    """Local ports of ``pid``'s TCP connections to ``remote_port`` (sockets in /proc/PID/fd)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    ports = set()
    for table in ("tcp", "tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
                columns = line.split()
                local, remote, inode = columns[1], columns[2], columns[9]
                if inode in inodes and int(remote.rsplit(":", 1)[1], 16) == remote_port:
                    ports.add(int(local.rsplit(":", 1)[1], 16))
    return ports


async def backend_pids(dsn: str, client_ports: set[int]) -> set[int]:
    """The PostgreSQL backends serving the connections from ``client_ports``."""
    connection = await asyncpg.connect(dsn)
    try:
        rows = await connection.fetch(
            "SELECT pid, client_port FROM pg_stat_activity WHERE client_port = ANY($1::int[])",
            list(client_ports),
        )
    finally:
        await connection.close()
    return {row["pid"] for row in rows}


def histogram(server: ServerProcess, name: str) -> tuple[float, float, list[tuple[float, float]]]:
    """A histogram's sum, count and cumulative buckets (upper bound, count) on /metrics."""
    samples = server.metrics()
    buckets = sorted(
        (float(dict(labels)["le"]), value)
        for (sample, labels), value in samples.items()
        if sample == f"{name}_bucket"
    )
    return (
        samples.get((f"{name}_sum", ()), 0.0),
        samples.get((f"{name}_count", ()), 0.0),
        buckets,
    )


Histogram = tuple[float, float, list[tuple[float, float]]]


def histogram_delta(befores: list[Histogram], afters: list[Histogram]) -> Histogram:
    """What every server observed between the two readings, summed over servers."""
    total = 0.0
    count = 0.0
    buckets: dict[float, float] = {}
    for before, after in zip(befores, afters, strict=True):
        total += after[0] - before[0]
        count += after[1] - before[1]
        earlier = dict(before[2])
        for bound, value in after[2]:
            buckets[bound] = buckets.get(bound, 0.0) + value - earlier.get(bound, 0.0)
    return total, count, sorted(buckets.items())


def histogram_quantile(q: float, buckets: list[tuple[float, float]]) -> float:
    """PromQL-style estimate from cumulative buckets, in ms (linear inside a bucket)."""
    if not buckets or buckets[-1][1] <= 0:
        return float("nan")
    rank = q * buckets[-1][1]
    lower, below = 0.0, 0.0
    for bound, cumulative in buckets:
        if cumulative >= rank:
            if math.isinf(bound):
                return lower * 1000
            share = (rank - below) / (cumulative - below) if cumulative > below else 1.0
            return (lower + (bound - lower) * share) * 1000
        lower, below = bound, cumulative
    return lower * 1000


# -- one run -----------------------------------------------------------------------------------


def with_search_path(dsn: str, schema: str) -> str:
    """``dsn`` with ``options=-c search_path=SCHEMA`` (URL form, or key=value form)."""
    if "://" not in dsn:
        return f"{dsn} options='-c search_path={schema}'"
    parts = urllib.parse.urlsplit(dsn)
    query = urllib.parse.parse_qsl(parts.query)
    query = [(key, value) for key, value in query if key != "options"]
    query.append(("options", f"-c search_path={schema}"))
    return urllib.parse.urlunsplit(
        parts._replace(query=urllib.parse.urlencode(query, quote_via=urllib.parse.quote))
    )


async def _schema(dsn: str, statement: str) -> None:
    connection = await asyncpg.connect(dsn, timeout=5)
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


@contextlib.contextmanager
def fresh_schema(dsn: str) -> Iterator[str]:
    """A new schema for one run: the DSN that selects it; dropped afterwards."""
    schema = f"bench_{uuid.uuid4().hex[:12]}"
    asyncio.run(_schema(dsn, f"CREATE SCHEMA {schema}"))
    try:
        yield with_search_path(dsn, schema)
    finally:
        asyncio.run(_schema(dsn, f"DROP SCHEMA {schema} CASCADE"))


def run_one(
    backend: Backend,
    tables: int,
    args: argparse.Namespace,
    folder: Path,
    source: str | None = None,
    fanout: str = "",
) -> dict[str, Any]:
    """One backend at N tables; ``source``: run the server from that source folder instead
    (``--baseline``); ``fanout``: the replicas' --fanout (a NATS URL; default LISTEN/NOTIFY)."""
    name = backend.name + ("-nats" if fanout else "") + ("@base" if source else "")
    tag = f"{name}-{tables}"
    note = wait_for_quiet(args.quiet_wait)
    common = [
        "--listen",
        "127.0.0.1:0",
        "--metrics",
        "127.0.0.1:0",
        "--log-format",
        "json",
        "--log-level",
        args.log_level,
    ]
    with contextlib.ExitStack() as stack:
        extra = {"PYTHONPATH": source} if source else {}
        if fanout:
            extra["SPADES_FANOUT"] = fanout
        if backend.postgres:
            dsn = stack.enter_context(fresh_schema(args.postgres_dsn))
            env = clean_environment(SPADES_POSTGRES_DSN=dsn, **extra)
            server_args = common
        else:
            env = clean_environment(**extra)
            server_args = [
                *common,
                "--database",
                str(folder / f"bench-{tag}.db"),
                "--durability",
                args.durability,
            ]
        servers = [
            stack.enter_context(
                spades_server(folder / f"server-{tag}-{replica}.log", *server_args, env=env)
            )
            for replica in range(backend.replicas)
        ]
        pids = [server.process.pid for server in servers]
        pg_backends: set[int] = set()
        if backend.postgres:
            port = urllib.parse.urlsplit(args.postgres_dsn).port or 5432
            ports = set().union(*(tcp_peer_ports(pid, port) for pid in pids))
            pg_backends = asyncio.run(backend_pids(args.postgres_dsn, ports))
        addresses = [server.address for server in servers]
        procs = min(args.client_procs, tables)
        shares = [list(range(tables))[i::procs] for i in range(procs)]
        context = multiprocessing.get_context("spawn")
        barrier = context.Barrier(procs + 1)
        results: multiprocessing.Queue[Stats] = context.Queue()
        workers = [
            context.Process(
                target=client_process,
                args=(
                    addresses[:1] if backend.idle_others else addresses,
                    backend.split_seats,
                    share,
                    args.seconds,
                    barrier,
                    results,
                    not args.unbatched,
                ),
                daemon=True,
            )
            for share in shares
        ]
        for worker in workers:
            worker.start()
        barrier.wait(timeout=120)
        action_before = [histogram(server, "spades_action_seconds") for server in servers]
        append_before = [histogram(server, "spades_log_append_seconds") for server in servers]
        server_cpu = [cpu_seconds(pid) for pid in pids]
        pg_before = postgres_processes()
        machine = machine_busy_seconds()
        begun = time.perf_counter()
        profilers = []
        if args.py_spy:
            # Collapsed stacks of each server during the window (py-spy: pip install py-spy).
            profilers = [
                subprocess.Popen(
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
                        f"{args.py_spy}-{tag}-{replica}.txt",
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                for replica, pid in enumerate(pids)
            ]
        time.sleep(args.seconds)
        server_cpu = [
            cpu_seconds(pid) - before for pid, before in zip(pids, server_cpu, strict=True)
        ]
        pg_after = postgres_processes()
        machine = machine_busy_seconds() - machine
        elapsed = time.perf_counter() - begun
        for profiler in profilers:
            profiler.wait(30)
        action = histogram_delta(
            action_before, [histogram(server, "spades_action_seconds") for server in servers]
        )
        append = histogram_delta(
            append_before, [histogram(server, "spades_log_append_seconds") for server in servers]
        )
        total = Stats()
        for _ in workers:
            total.merge(results.get(timeout=60))
        for worker in workers:
            worker.join(timeout=30)
        peaks = [peak_mib(pid) for pid in pids]
        for server in servers:
            server.terminate()
        for server in servers:
            server.wait(30)

    pg_ours = sum(
        pg_after[pid] - pg_before[pid]
        for pid in pg_backends
        if pid in pg_before and pid in pg_after
    )
    pg_other = sum(pg_after.values()) - sum(pg_before.values()) - pg_ours
    latencies = sorted(total.latencies)

    def quantile(q: float) -> float:
        if not latencies:
            return float("nan")
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000

    def mean_ms(observed: Histogram) -> float:
        return observed[0] / observed[1] * 1000 if observed[1] else float("nan")

    def per_action_ms(seconds: float) -> float:
        return seconds / total.actions * 1000 if total.actions else float("nan")

    return {
        "backend": name,
        "postgres": backend.postgres,
        "tables": tables,
        "actions": total.actions,
        "actions_per_s": total.actions / args.seconds,
        "hands_per_s": total.hands / args.seconds,
        "p50_ms": quantile(0.50),
        "p99_ms": quantile(0.99),
        "mean_ms": statistics.fmean(latencies) * 1000 if latencies else float("nan"),
        "refused": total.refused,
        "peak_mib": peaks,
        "server_cpu": [used / elapsed for used in server_cpu],
        "pg_cpu": pg_ours / elapsed,
        "pg_other_cpu": pg_other / elapsed,
        "pg_backends": len(pg_backends),
        "client_cpu": total.cpu_seconds / args.seconds,
        "machine_cpu": machine / elapsed,
        "other_cpu": (machine - sum(server_cpu) - pg_ours - pg_other - total.cpu_seconds) / elapsed,
        "note": note,
        "client_procs": procs,
        "server_action_ms": mean_ms(action),
        "append_ms": mean_ms(append),
        "append_p50_ms": histogram_quantile(0.50, append[2]),
        "append_p99_ms": histogram_quantile(0.99, append[2]),
        "server_ms_per_action": per_action_ms(sum(server_cpu)),
        "seconds": elapsed,
        "pg_ms_per_action": per_action_ms(pg_ours + pg_other) if backend.postgres else math.nan,
        "client_ms_per_action": per_action_ms(total.cpu_seconds),
        "setup_s": total.setup_seconds,
    }


def pingpong_process(
    address: str,
    streams: int,
    seconds: float,
    barrier: Barrier,
    results: multiprocessing.Queue[pingpong.PingStats],
    mode: str,
) -> None:
    results.put(asyncio.run(pingpong.client_main(address, streams, seconds, barrier.wait, mode)))


def run_reference(streams: int, args: argparse.Namespace, mode: str) -> dict[str, Any]:
    """The raw grpc.aio ping-pong over ``streams`` streams (the ceiling for this N), or
    (``mode="fanout"``) as many fan-out tables of four streams (the floor of an action's
    shape: one message in, one out to each seat)."""
    note = wait_for_quiet(args.quiet_wait)
    server = subprocess.Popen(
        [sys.executable, str(Path(pingpong.__file__)), "serve"],
        stdout=subprocess.PIPE,
        text=True,
        env=clean_environment(),
    )
    try:
        assert server.stdout is not None
        address = server.stdout.readline().split()[-1]
        procs = min(args.client_procs, streams)
        shares = [len(range(streams)[i::procs]) for i in range(procs)]
        context = multiprocessing.get_context("spawn")
        barrier = context.Barrier(procs + 1)
        results: multiprocessing.Queue[pingpong.PingStats] = context.Queue()
        workers = [
            context.Process(
                target=pingpong_process,
                args=(address, share, args.seconds, barrier, results, mode),
                daemon=True,
            )
            for share in shares
        ]
        for worker in workers:
            worker.start()
        barrier.wait(timeout=120)
        cpu_before = cpu_seconds(server.pid)
        begun = time.perf_counter()
        time.sleep(args.seconds)
        server_cpu = cpu_seconds(server.pid) - cpu_before
        elapsed = time.perf_counter() - begun
        total = pingpong.PingStats()
        for _ in workers:
            total.merge(results.get(timeout=60))
        for worker in workers:
            worker.join(timeout=30)
    finally:
        server.terminate()
        server.wait(30)
    latencies = sorted(total.latencies)
    return {
        "mode": mode,
        "streams": streams,
        "round_trips_per_s": total.round_trips / args.seconds,
        "server_ms_per_round_trip": (
            server_cpu / total.round_trips * 1000 if total.round_trips else math.nan
        ),
        "server_cpu": server_cpu / elapsed,
        "p99_ms": latencies[int(0.99 * (len(latencies) - 1))] * 1000 if latencies else math.nan,
        "note": note,
    }


# -- output ------------------------------------------------------------------------------------


def joined(values: list[float], spec: str, suffix: str = "") -> str:
    return "+".join(format(value, spec) for value in values) + suffix


def figures_row(row: dict[str, Any], sqlite: dict[str, Any] | None) -> str:
    share = (
        f"{row['actions_per_s'] / sqlite['actions_per_s']:.0%}"
        if sqlite and sqlite["actions_per_s"]
        else "-"
    )
    return (
        f"{row['backend']:<16} {row['tables']:>3} {row['actions_per_s']:>9,.0f} {share:>9}"
        f" {row['hands_per_s']:>7.1f} {row['p50_ms']:>6.1f} {row['p99_ms']:>6.1f}"
        f" {row['mean_ms']:>7.1f} {joined(row['peak_mib'], '.0f', ' MiB'):>13}"
        + (f"  ({row['refused']} refused)" if row["refused"] else "")
        + (f"  ({row['note']})" if row["note"] else "")
    )


FIGURES_HEADER = (
    f"{'backend':<16} {'N':>3} {'actions/s':>9} {'vs sqlite':>9} {'hands/s':>7} {'p50 ms':>6}"
    f" {'p99 ms':>6} {'mean ms':>7} {'peak RSS':>13}"
)


def costs_row(row: dict[str, Any]) -> str:
    pg = f"{row['pg_cpu']:.0%}/{row['pg_other_cpu']:.0%}" if row["postgres"] else "-"
    pg_ms = f"{row['pg_ms_per_action']:.2f}" if row["postgres"] else "-"
    return (
        f"{row['backend']:<16} {row['tables']:>3} {row['server_action_ms']:>7.2f}"
        f" {row['append_ms']:>6.2f} {row['append_p50_ms']:>5.2f} {row['append_p99_ms']:>5.1f}"
        f" {joined([100 * cpu for cpu in row['server_cpu']], '.0f', '%'):>8} {pg:>8}"
        f" {row['client_cpu']:>5.0%} {row['other_cpu']:>5.0%} {row['machine_cpu']:>5.0%}"
        f" {row['server_ms_per_action']:>6.2f} {pg_ms:>6} {row['client_ms_per_action']:>6.2f}"
    )


COSTS_HEADER = (
    f"{'':<16} {'':>3} {'srv act':>7} {'append (server histogram, ms)':>18}"
    f" {'CPU (100% = one core busy)':>36}   {'CPU ms per action':>20}\n"
    f"{'backend':<16} {'N':>3} {'mean ms':>7} {'mean':>6} {'p50':>5} {'p99':>5}"
    f" {'srv':>8} {'PG':>8} {'cli':>5} {'other':>5} {'mach':>5}"
    f" {'srv':>6} {'PG':>6} {'cli':>6}"
)


SCALING_HEADER = (
    f"{'backend':<16} {'N':>3} {'replicas':>8} {'actions/s':>9} {'srv CPU ms/action':>17}"
    f" {'vs 1 replica':>12}  each replica's CPU ms per action"
)


def scaling_row(row: dict[str, Any], one: dict[str, Any] | None) -> str:
    """Server CPU per action summed over the replicas (and each replica's part of it)."""
    replicas = len(row["server_cpu"])
    per_action = row["server_ms_per_action"]
    share = (
        f"{per_action / one['server_ms_per_action']:.2f}x"
        if one and one["server_ms_per_action"]
        else "-"
    )
    each = [
        cpu * row["seconds"] / row["actions"] * 1000 if row["actions"] else math.nan
        for cpu in row["server_cpu"]
    ]
    return (
        f"{row['backend']:<16} {row['tables']:>3} {replicas:>8} {row['actions_per_s']:>9,.0f}"
        f" {per_action:>17.2f} {share:>12}  {joined(each, '.2f')}"
    )


REFERENCE_HEADER = (
    f"{'':<16} {'N':>3} {'round trips/s':>13} {'srv CPU':>7} {'srv ms/rt':>9} {'p99 ms':>6}"
)


REFERENCE_NAMES = {"pingpong": "grpc.aio ping-pong", "fanout": "grpc.aio fan-out 1:4"}


def reference_row(reference: dict[str, Any]) -> str:
    return (
        f"{REFERENCE_NAMES[reference['mode']]:<16} {reference['streams']:>3}"
        f" {reference['round_trips_per_s']:>13,.0f} {reference['server_cpu']:>7.0%}"
        f" {reference['server_ms_per_round_trip']:>9.3f} {reference['p99_ms']:>6.1f}"
        + (f"  ({reference['note']})" if reference["note"] else "")
    )


RATIOS_HEADER = (
    f"{'backend':<16} {'N':>3} {'actions/s / round trips/s':>25}"
    f" {'srv CPU per action / per round trip':>35}"
)


def ratios_row(row: dict[str, Any], reference: dict[str, Any]) -> str:
    """One backend's figures over a reference's with the same N (the ping-pong's: issue 16's
    targets)."""
    rate = row["actions_per_s"] / reference["round_trips_per_s"]
    # Server CPU per action summed over replicas, against one ping-pong server's per round trip.
    cost = row["server_ms_per_action"] / reference["server_ms_per_round_trip"]
    return f"{row['backend']:<16} {row['tables']:>3} {rate:>25.2f} {cost:>34.1f}x"


def postgres_problem(dsn: str) -> str | None:
    async def probe() -> str:
        connection = await asyncpg.connect(dsn, timeout=3)
        try:
            settings = await connection.fetch(
                "SELECT name, setting FROM pg_settings WHERE name IN"
                " ('synchronous_commit', 'fsync', 'server_version')"
            )
        finally:
            await connection.close()
        return ", ".join(f"{row['name']} {row['setting']}" for row in settings)

    try:
        print(f"PostgreSQL: {asyncio.run(probe())}", flush=True)
    except (OSError, asyncpg.PostgresError, TimeoutError) as error:
        return f"{type(error).__name__}: {error}"
    return None


def main() -> None:
    parse = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parse.add_argument("--tables", default="1,16,64", help="comma-separated N (default 1,16,64)")
    parse.add_argument("--seconds", type=float, default=10.0, help="measured seconds per run")
    parse.add_argument(
        "--backends",
        default=",".join(BACKENDS),
        help=f"comma-separated, of {', '.join(BACKENDS)} (default: all)",
    )
    parse.add_argument(
        "--postgres-dsn",
        default=DEFAULT_DSN,
        help="PostgreSQL to use (a fresh schema per run; default SPADES_TEST_POSTGRES_DSN or "
        "postgresql://postgres@127.0.0.1:5432/test)",
    )
    parse.add_argument("--client-procs", type=int, default=1, help="client processes")
    parse.add_argument(
        "--unbatched",
        action="store_true",
        help="open the bench's Play streams without StartPlay.batched (one message per event, "
        "prompt and result, as clients before batches): to compare",
    )
    parse.add_argument(
        "--no-reference",
        action="store_true",
        help="skip the raw grpc.aio ping-pong and fan-out runs that the ratios are taken against",
    )
    parse.add_argument(
        "--quiet-wait",
        type=float,
        default=15.0,
        help="seconds to wait before each run for other processes' CPU load to end (default 15)",
    )
    parse.add_argument(
        "--durability", choices=["normal", "full"], default="normal", help="of the SQLite log"
    )
    parse.add_argument("--log-level", choices=["debug", "info", "warning", "error"], default="info")
    parse.add_argument(
        "--baseline",
        metavar="SRC",
        help="also run each backend, right after it, on the server source in SRC (for example "
        "DIR/server/src after `git archive REV server/src | tar -x -C DIR`), as BACKEND@base",
    )
    parse.add_argument(
        "--nats",
        metavar="URL",
        help="also run each backend of several replicas with --fanout URL (a NATS server, "
        "for example nats://127.0.0.1:4222), as BACKEND-nats",
    )
    parse.add_argument(
        "--py-spy",
        metavar="PREFIX",
        help="profile each server with py-spy during each window into "
        "PREFIX-BACKEND-N-REPLICA.txt (raw stacks)",
    )
    args = parse.parse_args()
    names = [name.strip() for name in args.backends.split(",") if name.strip()]
    unknown = [name for name in names if name not in BACKENDS]
    if unknown:
        parse.error(f"unknown backend(s) {', '.join(unknown)}; choose from {', '.join(BACKENDS)}")
    names = [name for name in BACKENDS if name in names]  # sqlite first: the others' reference
    os.environ.clear()
    os.environ.update(clean_environment())
    print(
        f"spades-server benchmark: {args.seconds:g} s per run, SQLite durability"
        f" {args.durability}, log level {args.log_level}, {args.client_procs} client"
        f" process(es), {'unbatched' if args.unbatched else 'batched'} Play streams,"
        f" {os.cpu_count()} CPUs",
        flush=True,
    )
    if any(BACKENDS[name].postgres for name in names):
        problem = postgres_problem(args.postgres_dsn)
        if problem is not None:
            print(f"PostgreSQL backends skipped: no server at {args.postgres_dsn!r}: {problem}")
            names = [name for name in names if not BACKENDS[name].postgres]
            if not names:
                return
    rows: list[dict[str, Any]] = []
    references: dict[int, dict[str, Any]] = {}
    fanouts: dict[int, dict[str, Any]] = {}
    print(FIGURES_HEADER, flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-server-") as folder:
        for tables in (int(n) for n in args.tables.split(",")):
            if not args.no_reference:
                references[tables] = run_reference(tables, args, "pingpong")
                fanouts[tables] = run_reference(tables, args, "fanout")
            sqlite: dict[str | None, dict[str, Any]] = {}
            for name in names:
                # Interleaved: each backend on this source, then on the baseline's, then NATS.
                variants: list[tuple[str | None, str]] = [(None, "")]
                if args.baseline:
                    variants.append((args.baseline, ""))
                if args.nats and BACKENDS[name].replicas > 1:
                    variants.append((None, args.nats))
                for source, fanout in variants:
                    row = run_one(BACKENDS[name], tables, args, Path(folder), source, fanout)
                    if name == "sqlite":
                        sqlite[source] = row
                    rows.append(row)
                    print(figures_row(row, sqlite.get(source)), flush=True)
    print("\nWhere the time goes (the window only):")
    print(COSTS_HEADER)
    for row in rows:
        print(costs_row(row))
    idle = [row for row in rows if "idle" in row["backend"]]
    if idle:
        print("\nWhat following the log costs a replica that serves none of the tables")
        print("(postgres-2-idle: every table on the first replica):")
        for row in idle:
            served, follower = (
                cpu * row["seconds"] / row["actions"] * 1000 if row["actions"] else math.nan
                for cpu in row["server_cpu"]
            )
            print(
                f"{row['backend']:<16} {row['tables']:>3} {row['actions_per_s']:>9,.0f} actions/s:"
                f" serving replica {served:.2f} ms CPU per action, idle replica {follower:.3f} ms"
                f" per action elsewhere ({row['server_cpu'][1]:.0%} of a core)"
            )
    scaling = [
        row
        for row in rows
        if row["postgres"] and "split" not in row["backend"] and "idle" not in row["backend"]
    ]
    if len({row["backend"] for row in scaling}) > 1:
        print("\nServer CPU per action by replica count (one PostgreSQL; each table on one")
        print("replica; issue 16's target: it does not grow with the replicas):")
        print(SCALING_HEADER)
        for row in scaling:
            base = "postgres@base" if row["backend"].endswith("@base") else "postgres"
            one = next(
                (r for r in scaling if r["tables"] == row["tables"] and r["backend"] == base),
                None,
            )
            print(scaling_row(row, one))
    if references:
        print("\nThe references (same run): a raw grpc.aio ping-pong, one stream per table, and")
        print("a raw fan-out, four streams per table, one message in and one out on each per")
        print("action (a round trip, for the fan-out, is one such action):")
        print(REFERENCE_HEADER)
        for tables, reference in references.items():
            print(reference_row(reference))
            print(reference_row(fanouts[tables]))
        print("\nAgainst the ping-pong with the same N (issue 16's targets: rate >= 0.25 at 64,")
        print("CPU per action <= 4x; the fan-out's own first: the least an action's messages")
        print("cost, with nothing of the service):")
        print(RATIOS_HEADER)
        for tables, reference in references.items():
            least = fanouts[tables]
            floor = {
                "backend": "fan-out 1:4",
                "tables": tables,
                "actions_per_s": least["round_trips_per_s"],
                "server_ms_per_action": least["server_ms_per_round_trip"],
            }
            print(ratios_row(floor, reference))
        for row in rows:
            print(ratios_row(row, references[row["tables"]]))
        print("\nAgainst the fan-out with the same N (what the service costs beyond the")
        print("messages an action needs at least):")
        print(RATIOS_HEADER)
        for row in rows:
            print(ratios_row(row, fanouts[row["tables"]]))
    if any(row["other_cpu"] > 0.2 for row in rows):
        print(
            "\nNote: other processes used CPU during some runs ('other' column): on a small"
            " machine their figures are low; compare the CPU ms per action instead."
        )


if __name__ == "__main__":
    main()
