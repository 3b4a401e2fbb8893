"""Soak benchmark: does the server's memory grow with history, and does its start-up?

Run with ``make bench-soak`` or ``python tests/benchmarks/bench_soak.py`` (``--help`` for the
options). A benchmark, not a timed test: it prints figures, it asserts nothing.

Two parts, each on a fresh log per backend (``--backends sqlite,postgres``):

* **memory**: a real ``spades-server`` process (the console script; house bots off) while
  ``--concurrency`` tables at a time play one-hand matches to the end (four SDK ``RandomBot``
  seats each, ``play_match``, one channel). The server's RSS (``VmRSS`` of ``/proc/PID/status``)
  is sampled every ``--sample-every`` finished tables. Printed: RSS after ``--warmup`` finished
  tables and at the end, and the growth per 1,000 finished tables after the warm-up (the issue's
  target: under 5 MiB).
* **start-up**: a log holding ``--history`` finished tables is written straight through the
  event-log API (the rows of one real finished match, from the engine and the journal, stored
  under a new table id each: no gRPC), the server is started on it once (no checkpoint yet: it
  folds every event and checkpoints) and stopped cleanly, then started again. Printed: seconds
  from running the command to the first SERVING health check, for both starts (target for the
  second: under 2 s with 100,000 finished tables).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from spades.bot import play_match
from spades.client import SpadesClient
from spades.engine import Concede, Rules, apply, apply_seat, legal_actions, new_match
from spades.engine import events as ev
from spades.v1 import lobby_pb2
from spades_bots.random_bot import RandomBot
from spades_server.domain import table_events, tokens
from spades_server.domain.table_events import Listing, Secrets
from spades_server.eventlog.base import EventLog, ProjectionCheckpoint, StoredEvent
from spades_server.processes import games
from spades_server.processes.projection import LOBBY, LobbyProjection
from spades_server.processes.projection import row_of as projection_row
from spades_server.store import journal
from spades_server.v1 import log_pb2
from tests.support.backends import LogStorage, postgres_unavailable
from tests.support.faults import seat_four
from tests.support.processes import SERVER, clean_environment, free_port, spades_server

ONE_HAND = Rules(max_hands=1)
MIB = 1024 * 1024


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


# -- memory ---------------------------------------------------------------------------------


async def play_matches(
    address: str, pid: int, matches: int, concurrency: int, sample_every: int
) -> list[tuple[int, float, int]]:
    """Play ``matches`` one-hand matches, ``concurrency`` at a time; (finished, seconds, RSS)
    every ``sample_every`` finished tables."""
    samples = [(0, 0.0, rss_bytes(pid))]
    started = time.monotonic()
    finished = 0
    next_sample = sample_every
    lock = asyncio.Lock()

    async with SpadesClient(address, timeout=30.0) as client:

        async def one_match(number: int) -> None:
            table_id, seat_tokens = await seat_four(client, ONE_HAND, f"soak {number}")
            await asyncio.gather(
                *(
                    play_match(client, RandomBot(number * 4 + seat), token, table_id=table_id)
                    for seat, token in enumerate(seat_tokens)
                )
            )

        async def worker(first: int) -> None:
            nonlocal finished, next_sample
            for number in range(first, matches, concurrency):
                await asyncio.wait_for(one_match(number), 120)
                async with lock:
                    finished += 1
                    if finished >= next_sample:
                        samples.append((finished, time.monotonic() - started, rss_bytes(pid)))
                        print(
                            f"  {finished:6d} finished  {samples[-1][1]:7.1f} s"
                            f"  RSS {samples[-1][2] / MIB:7.1f} MiB",
                            flush=True,
                        )
                        next_sample += sample_every

        await asyncio.gather(*(worker(first) for first in range(concurrency)))
    return samples


def memory_part(storage: LogStorage, folder: Path, args: argparse.Namespace) -> None:
    asyncio.run(storage.prepare())
    flags = [
        "--listen",
        "127.0.0.1:0",
        "--metrics",
        "off",
        *storage.flags(),
        "--house-bots",
        "0",
        "--log-level",
        "warning",
        "--log-format",
        "json",
        *args.server_args,
    ]
    with spades_server(folder / f"soak-{storage.backend}.log", *flags) as server:
        extra = " ".join(args.server_args) or "none"
        print(
            f"memory ({storage.backend}): {args.matches} one-hand matches, "
            f"{args.concurrency} at a time; extra server flags: {extra}"
        )
        samples = asyncio.run(
            play_matches(
                server.address,
                server.process.pid,
                args.matches,
                args.concurrency,
                args.sample_every,
            )
        )
    warm = next(sample for sample in samples if sample[0] >= args.warmup)
    last = samples[-1]
    growth = (last[2] - warm[2]) / MIB / max(1e-9, (last[0] - warm[0]) / 1000)
    rate = last[0] / last[1] if last[1] else 0.0
    print(
        f"memory ({storage.backend}): RSS {samples[0][2] / MIB:.1f} MiB at start, "
        f"{warm[2] / MIB:.1f} MiB after {warm[0]} finished (warm-up), "
        f"{last[2] / MIB:.1f} MiB after {last[0]}: "
        f"{growth:+.2f} MiB per 1,000 finished tables after the warm-up "
        f"({rate:.1f} matches/s)"
    )


# -- start-up -------------------------------------------------------------------------------


def finished_match_rows(seed: int) -> list[bytes]:
    """The stored rows of one real one-hand match played to its end by random legal actions
    (as the server's journal writes them), for a table of any id."""
    rng = random.Random(seed)
    state, events = new_match(ONE_HAND)
    drafts = table_events.drafts(events, listing=Listing("history"))
    for sitting in range(4):
        state, events = apply_seat(state, sitting, f"bot {sitting}", bot=True)
        secrets = Secrets(seat_token_sha256=tokens.digest(tokens.new_seat_token("history")))
        drafts += table_events.drafts(events, secrets=secrets)
    while not state.is_over:
        turn = state.turn
        if turn is None:
            raise RuntimeError("no one to act in a match that is not over")
        legal = legal_actions(state, turn)
        action = rng.choice(legal) if legal else Concede()
        state, events = apply(state, turn, action)
        drafts += table_events.drafts(events, action_id=f"a{len(drafts)}")
    assert isinstance(drafts[-1].event, ev.SeedRevealed), drafts[-1].event
    return [journal.encode(draft) for draft in drafts]


async def write_history(log: EventLog, tables: int, rows: Sequence[bytes]) -> None:
    """``tables`` finished tables, each ``rows``, appended through the log's API."""
    await log.open()
    in_flight = 256
    pending: set[asyncio.Future[object]] = set()
    for _ in range(tables):
        pending.add(asyncio.ensure_future(log.append(tokens.new_table_id(), 0, rows)))
        if len(pending) >= in_flight:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for future in done:
                future.result()
    await asyncio.gather(*pending)
    await log.close()


def seconds_to_serving(command: list[str], log_path: Path, timeout: float) -> float:
    """Run the server; seconds from the command to the first SERVING health answer; then stop
    it cleanly (SIGTERM), so the next start finds a clean log and a checkpoint."""
    started = time.monotonic()
    with log_path.open("w") as log_file:
        process = subprocess.Popen(
            [str(SERVER), *command],
            stdout=subprocess.DEVNULL,
            stderr=log_file,
            env=clean_environment(),
        )
    address = command[command.index("--listen") + 1]
    try:
        while True:
            if time.monotonic() - started > timeout:
                raise TimeoutError(f"not SERVING in {timeout} s (log: {log_path})")
            if process.poll() is not None:
                raise RuntimeError(f"the server exited with {process.returncode}: {log_path}")
            try:
                with grpc.insecure_channel(
                    address, options=[("grpc.use_local_subchannel_pool", 1)]
                ) as channel:
                    answer = health_pb2_grpc.HealthStub(channel).Check(
                        health_pb2.HealthCheckRequest(), timeout=0.5
                    )
                if answer.status == health_pb2.HealthCheckResponse.SERVING:
                    return time.monotonic() - started
            except grpc.RpcError:
                pass
            time.sleep(0.01)
    finally:
        process.terminate()
        process.wait(timeout)


async def write_lobby(log: EventLog, rows: Sequence[bytes]) -> int:
    """The lobby's rows and checkpoint for every table of the log, as a server that served
    them writes them: one table's summary, folded by the server's own projection code, then
    given each table's id and creation time. Returns how many tables it wrote."""
    await log.open()
    template = LobbyProjection(log)
    for sequence, data in enumerate(rows, start=1):
        stored = StoredEvent("template", sequence, sequence, 0.0, data)
        await template.fold(journal.decode(stored))
    summary = template.tables["template"]
    assert summary.status == lobby_pb2.TABLE_STATUS_FINISHED
    position, written, batch = 0, 0, []
    while events := await log.read_all(position, limit=20_000):
        for event in events:
            if event.version == 1:
                copy = lobby_pb2.Table()
                copy.CopyFrom(summary)
                copy.table_id = event.stream_id
                copy.create_time.FromNanoseconds(int(event.recorded_at * 1e9))
                batch.append(projection_row(copy))
        position = events[-1].position
        await log.save_projection(LOBBY, batch)
        written += len(batch)
        batch = []
    state = log_pb2.LobbyCheckpoint(finished_tables=written)
    await log.save_projection(LOBBY, [], ProjectionCheckpoint(position, state.SerializeToString()))
    # As a server that indexed every account's games would leave it (the synthetic tables seat
    # no account): else the server folds the whole log again to index them.
    await log.save_projection(games.MARKER, [], ProjectionCheckpoint(position, b""))
    await log.close()
    return written


def serving_log_line(log_path: Path) -> dict[str, object]:
    for line in log_path.read_text().splitlines():
        if '"serving"' in line:
            found: dict[str, object] = json.loads(line)
            return found
    return {}


def startup_part(storage: LogStorage, folder: Path, args: argparse.Namespace) -> None:
    asyncio.run(storage.prepare())
    rows = finished_match_rows(seed=14)
    began = time.monotonic()
    asyncio.run(write_history(storage.new_log(), args.history, rows))
    print(
        f"start-up ({storage.backend}): wrote {args.history} finished tables "
        f"({args.history * len(rows)} events, {len(rows)} a table) through the log API "
        f"in {time.monotonic() - began:.1f} s",
        flush=True,
    )
    if not args.fold_history:
        began = time.monotonic()
        written = asyncio.run(write_lobby(storage.new_log(), rows))
        print(
            f"start-up ({storage.backend}): wrote the lobby's rows and checkpoint for "
            f"{written} tables in {time.monotonic() - began:.1f} s",
            flush=True,
        )
    command = [
        "--listen",
        f"127.0.0.1:{free_port()}",
        "--metrics",
        "off",
        "--web",
        "off",
        *storage.flags(),
        "--house-bots",
        "0",
        "--log-format",
        "json",
    ]
    import_only = time.monotonic()
    subprocess.run([str(SERVER), "--help"], capture_output=True, check=True)
    import_only = time.monotonic() - import_only
    starts = []
    for name in ("first", "second"):
        log_path = folder / f"{name}-start.log"
        seconds = seconds_to_serving(command, log_path, args.start_timeout)
        starts.append((seconds, serving_log_line(log_path)))
    for name, (seconds, line) in zip(("first", "second"), starts, strict=True):
        print(
            f"start-up ({storage.backend}), {name} start: SERVING {seconds:.2f} s after the command"
            f" (in the server: {line.get('startup_seconds')} s from opening the log; "
            f"{line.get('lobby_tables_in_memory')} lobby tables in memory)"
        )
    first_start = []
    if storage.backend == "sqlite":
        first_start.append("checks the file (not closed cleanly by a server)")
    if args.fold_history:
        first_start.append("folds every event (no checkpoint)")
    print(
        f"start-up ({storage.backend}): {args.history} finished tables in the log; the first "
        f"start {' and '.join(first_start) or 'resumes from the checkpoint too'}; "
        f"`spades-server --help` alone takes {import_only:.2f} s (interpreter and imports)"
    )


def main() -> None:
    parse = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parse.add_argument("--backends", default="sqlite", help="sqlite, postgres or both (a,b)")
    parse.add_argument("--matches", type=int, default=3000, help="one-hand matches played")
    parse.add_argument("--warmup", type=int, default=1000, help="finished tables before growth")
    parse.add_argument("--concurrency", type=int, default=16, help="tables playing at once")
    parse.add_argument("--sample-every", type=int, default=250)
    parse.add_argument("--history", type=int, default=100_000, help="finished tables (start-up)")
    parse.add_argument("--start-timeout", type=float, default=1800.0)
    parse.add_argument(
        "--fold-history",
        action="store_true",
        help="let the first start fold every event (the lobby's first checkpoint) instead of"
        " writing the lobby's rows beside the events",
    )
    parse.add_argument("--skip-memory", action="store_true")
    parse.add_argument("--skip-startup", action="store_true")
    parse.add_argument(
        "--server-arg",
        dest="server_args",
        action="append",
        default=[],
        help="an extra flag for the memory part's server (repeat), for example"
        " --server-arg=--table-cache-size=256",
    )
    args = parse.parse_args()
    for backend in args.backends.split(","):
        if backend == "postgres" and (reason := postgres_unavailable()) is not None:
            print(f"postgres skipped: {reason}")
            continue
        folder = Path(tempfile.mkdtemp(prefix=f"bench-soak-{backend}-"))
        if not args.skip_memory:
            storage = LogStorage(backend, folder / "soak.db")
            try:
                memory_part(storage, folder, args)
            finally:
                asyncio.run(storage.remove())
        if not args.skip_startup:
            storage = LogStorage(backend, folder / "history.db")
            try:
                startup_part(storage, folder, args)
            finally:
                asyncio.run(storage.remove())
        shutil.rmtree(folder, ignore_errors=True)  # the SQLite logs (about 1 GB at 100,000)


if __name__ == "__main__":
    main()
