"""Micro-benchmark: the table service's own work per action, without gRPC.

Run with ``python tests/benchmarks/bench_service_alone.py`` (``--tables 64 --seconds 5``).

What it measures: everything one action costs the server except gRPC itself, with the server's
own code on the embedded SQLite log (durability ``normal``): ``--tables`` tables of four seats,
each seat a real batched :class:`~spades_server.streams.feeds.SeatFeed` (the feed of a Play stream)
read by a task of this process instead of a gRPC stream; the seat whose turn it is acts through
:meth:`PlayServicer._act <spades_server.api.play.PlayServicer>` (the checks, limits, idempotency,
the engine, the append, the fold, the result) with a random legal action, as a Play stream's
reader would. The lobby projection, the turn clock and the other listeners of a serving process
do not run here. Nothing crosses a socket: this is what the server spends beyond the messages
gRPC carries, measured alone.

Printed: actions per second and this process's CPU per action (one thread: the event loop's,
plus the log's checkpointer). ``bench_server.py`` measures the whole server; its fan-out
reference, the messages an action needs at least, plus this, is about what the server costs.

Then (``--parts``) the part of that no design avoids, in a plain loop with no event loop at
all: the engine deciding each action (``decide_action``), its events made into rows
(``journal.encode``) and folded into the table, and each of the four seats' batch redacted and
serialised (``frames.batch``, the seat on turn with its prompt); the rows' commit is not in it
(``bench_eventlog.py`` measures the log alone).

Then (``--calls``) the Python calls per action in one more round under cProfile: a count that
does not drift with the machine's other load (its time does), for comparing two versions of
the code on a shared machine. Then (``--shape``) asyncio's own work for an action's shape,
with nothing else in it: the tasks woken and the futures settled per action (see
:func:`shape`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import pstats
import random
import sys
import tempfile
import time
from pathlib import Path

import structlog

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from spades import protocol
from spades.engine import Rules, legal_actions, new_match
from spades.v1 import play_pb2
from spades_server.api.limits import PEER, Limits
from spades_server.api.play import PlayServicer, Shutdown
from spades_server.domain import tokens
from spades_server.domain.decisions import (
    ActionRequest,
    decide_action,
    decide_join,
    decide_new_table,
)
from spades_server.domain.tables import Decided, Table
from spades_server.eventlog.base import StoredEvent
from spades_server.eventlog.sqlite import SqliteEventLog
from spades_server.ops import logs
from spades_server.ops.settings import Settings
from spades_server.store import journal
from spades_server.store.table_store import TableStore
from spades_server.streams import frames
from spades_server.streams.feeds import Outbox, SeatFeed, SeatSession


async def seated_table(store: TableStore, name: str, seed: int) -> tuple[str, list[str]]:
    created = new_match(Rules(), seed=seed.to_bytes(32, "big"))
    table = await store.create(
        name, decide_new_table(created, name=name, private=False, join_code="")
    )
    seat_tokens = [f"{name}.{'s' * 20}{seat}" for seat in range(4)]
    for seat, token in enumerate(seat_tokens):

        def join(latest: Table, seat: int = seat, token: str = token) -> Decided:
            return decide_join(latest, seat, f"p{seat}", True, "", token)

        await store.execute(table.table_id, join)
    return table.table_id, seat_tokens


async def _until(event: asyncio.Event) -> None:
    await event.wait()


async def seat(
    play: PlayServicer,
    store: TableStore,
    table_id: str,
    number: int,
    token: str,
    rng: random.Random,
    counts: list[int],
    stop: asyncio.Event,
) -> None:
    """One seat: its feed read to the end of the window; on its turn, a random legal action
    through the Play servicer's action path (the result goes out with the events, as on a
    stream)."""
    # Each seat on a connection of its own, as the interceptor records a bot's: the limit per
    # connection (4000 actions a second) would otherwise count every seat of the run as one
    # connection, and refuse some of their actions once the run goes faster than that.
    PEER.set(f"bench:{table_id}:{number}")
    superseded = asyncio.Event()
    session = SeatSession(
        table_id, number, tokens.digest(token), False, superseded, structlog.get_logger()
    )
    outbox = Outbox(64)
    reader = asyncio.ensure_future(_until(stop))  # "the client's side", open until the end
    feed = SeatFeed(
        store,
        session,
        None,
        stop,
        outbox=outbox,
        actions=reader,
        reclaim=asyncio.sleep,  # type: ignore[arg-type]
        batched=True,
    )
    ids = 0
    with contextlib.suppress(Exception):
        async for _ in feed:
            if stop.is_set():
                break
            table = store.cached(table_id)
            state = table.state
            if state.turn != number or outbox.deciding:
                continue
            legal = legal_actions(state, number)
            if not legal:
                continue
            ids += 1
            request = play_pb2.ActionRequest(
                action_id=f"{number}-{ids}",
                sequence=table.version,
                action=protocol.action_to_proto(legal[rng.randrange(len(legal))]),
            )
            owed = outbox.begin()
            result = await play._act(session, request, owed.settle)
            owed.abandon()
            if result.accepted:
                counts[0] += 1
    reader.cancel()


async def main(
    tables: int, seconds: float, profile: cProfile.Profile | None = None
) -> tuple[int, float, float]:
    folder = Path(tempfile.mkdtemp(prefix="bench-service-alone-"))
    async with SqliteEventLog(folder / "events.db") as log:
        store = TableStore(log)
        shutdown = Shutdown()
        # The server's limits, as it checks them (no seat comes near them here).
        play = PlayServicer(store, shutdown, Limits(Settings()))
        rng = random.Random(16)
        stop = asyncio.Event()
        counts = [0]
        seats = []
        for number in range(tables):
            table_id, seat_tokens = await seated_table(store, f"t{number}", number + 1)
            for seat_number, token in enumerate(seat_tokens):
                seats.append(
                    asyncio.ensure_future(
                        seat(play, store, table_id, seat_number, token, rng, counts, stop)
                    )
                )
        await asyncio.sleep(0.5)  # every feed sent its snapshot and first batch
        before, cpu = counts[0], time.process_time()
        if profile is not None:
            profile.enable()
        began = time.perf_counter()
        await asyncio.sleep(seconds)
        actions = counts[0] - before
        spent = time.process_time() - cpu
        if profile is not None:
            profile.disable()
        wall = time.perf_counter() - began
        stop.set()
        store.wake_all()
        await asyncio.gather(*seats, return_exceptions=True)
    return actions, spent, wall


def parts(actions: int) -> dict[str, float]:
    """CPU seconds per action of each unavoidable part, over ``actions`` random actions on
    tables played from their start (a new one when a match ends), with no event loop."""
    rng = random.Random(16)
    spent = dict.fromkeys(("decide", "encode", "fold", "batches"), 0.0)
    seat_tokens = [f"p.{'s' * 20}{seat}" for seat in range(4)]
    table = _played_table(seat_tokens)
    feeds = _seat_feeds(table, seat_tokens)
    done = 0
    while done < actions:
        state = table.state
        if state.turn is None or table.finished:
            table = _played_table(seat_tokens)
            feeds = _seat_feeds(table, seat_tokens)
            continue
        seat = state.turn
        legal = legal_actions(state, seat)
        request = ActionRequest(
            seat,
            tokens.digest(seat_tokens[seat]),
            False,
            legal[rng.randrange(len(legal))],
            f"a{done}",
            table.version,
        )
        started = time.thread_time()
        decided = decide_action(table, request)
        decided_at = time.thread_time()
        rows = [journal.encode(draft) for draft in decided.drafts]
        encoded_at = time.thread_time()
        start = table.version
        entries = [
            journal.appended(StoredEvent(table.table_id, start + n, 0, time.time(), row), draft)
            for n, (row, draft) in enumerate(zip(rows, decided.drafts, strict=True), 1)
        ]
        table.adopt(decided.state, entries)
        folded_at = time.thread_time()
        turn = frames.turn_payload(table)
        for feed in feeds:
            feed.position = table.version
            frames.batch(table, start, table.version, feed.viewer, (), feed._prompt(table), turn)
        batched_at = time.thread_time()
        spent["decide"] += decided_at - started
        spent["encode"] += encoded_at - decided_at
        spent["fold"] += folded_at - encoded_at
        spent["batches"] += batched_at - folded_at
        done += 1
    return {part: seconds / actions for part, seconds in spent.items()}


async def shape(tables: int, seconds: float) -> float:
    """CPU seconds per action of asyncio's own work for an action's shape, with nothing else:
    four tasks a table, the one on turn appending (a future settled by a callback run once per
    loop iteration for every append queued, as the log's commit is), each settled append waking
    the table's other three, which look at the turn and wait again. What the service spends
    beyond this and :func:`parts` is its own Python."""
    loop = asyncio.get_running_loop()
    queued: list[tuple[asyncio.Future[None], int]] = []
    waiting: dict[int, list[asyncio.Future[None]]] = {}
    turns = [0] * tables
    counts = [0]
    stop = [False]

    def commit() -> None:
        batch = queued[:]
        queued.clear()
        for appended, table in batch:
            appended.set_result(None)
            for waiter in waiting.pop(table, ()):
                if not waiter.done():
                    waiter.set_result(None)

    def append(table: int) -> asyncio.Future[None]:
        if not queued:
            loop.call_soon(commit)
        appended = loop.create_future()
        queued.append((appended, table))
        return appended

    async def seat(table: int, number: int) -> None:
        while not stop[0]:
            if turns[table] == number:
                turns[table] = (number + 1) % 4
                await append(table)
                counts[0] += 1
                continue
            waiter = loop.create_future()
            waiting.setdefault(table, []).append(waiter)
            await waiter

    seats = [
        asyncio.ensure_future(seat(table, number)) for table in range(tables) for number in range(4)
    ]
    await asyncio.sleep(0.2)
    before, cpu = counts[0], time.process_time()
    await asyncio.sleep(seconds)
    per_action = (time.process_time() - cpu) / max(counts[0] - before, 1)
    stop[0] = True
    for waiters in waiting.values():
        for waiter in waiters:
            waiter.set_result(None)
    await asyncio.gather(*seats)
    return per_action


def _played_table(seat_tokens: list[str]) -> Table:
    """A table with four seats taken, folded without a log."""
    table = Table("p")

    def fold(decided: Decided) -> None:
        entries = [
            journal.appended(StoredEvent("p", table.version + n, 0, time.time(), b""), draft)
            for n, draft in enumerate(decided.drafts, 1)
        ]
        table.adopt(decided.state, entries)

    fold(decide_new_table(new_match(Rules()), name="p", private=False, join_code=""))
    for seat, token in enumerate(seat_tokens):
        fold(decide_join(table, seat, f"p{seat}", True, "", token))
    return table


def _seat_feeds(table: Table, seat_tokens: list[str]) -> list[SeatFeed]:
    """Each seat's feed object, for its prompt (never run)."""
    feeds = []
    for seat, token in enumerate(seat_tokens):
        session = SeatSession(
            table.table_id,
            seat,
            tokens.digest(token),
            False,
            asyncio.Event(),
            structlog.get_logger(),
        )
        feeds.append(
            SeatFeed(
                None,  # type: ignore[arg-type]
                session,
                table.version,
                asyncio.Event(),
                outbox=Outbox(1),
                actions=None,  # type: ignore[arg-type]
                reclaim=asyncio.sleep,  # type: ignore[arg-type]
                batched=True,
            )
        )
    return feeds


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--parts", type=int, default=0, metavar="ACTIONS", help="then time the parts over so many"
    )
    parser.add_argument(
        "--calls",
        action="store_true",
        help="then count the Python calls per action in one more round, under cProfile",
    )
    parser.add_argument(
        "--shape",
        action="store_true",
        help="then time asyncio's own work for an action's shape (tasks woken, futures settled)",
    )
    args = parser.parse_args()
    logs.configure("json", "info")  # as a serving process logs: actions at debug, filtered out
    print(f"the service alone (no gRPC), SQLite, {args.tables} tables, {args.seconds:g} s a round")
    for round_number in range(args.rounds):
        actions, spent, wall = asyncio.run(main(args.tables, args.seconds))
        print(
            f"round {round_number + 1}: {actions / wall:,.0f} actions/s,"
            f" {spent / max(actions, 1) * 1000:.3f} ms CPU per action"
            f" ({spent / wall:.0%} of a core)"
        )
    if args.parts:
        measured = parts(args.parts)
        shown = ", ".join(f"{part} {seconds * 1e6:.1f}" for part, seconds in measured.items())
        total = sum(measured.values()) * 1e6
        print(f"the parts no design avoids, µs per action: {shown}; {total:.1f} in all")
    if args.calls:
        profile = cProfile.Profile()
        actions, _, _ = asyncio.run(main(args.tables, args.seconds, profile))
        calls = pstats.Stats(profile).total_calls  # type: ignore[attr-defined]  # (not in typeshed)
        print(f"Python calls per action (cProfile, one round): {calls / max(actions, 1):.0f}")
    if args.shape:
        floor = asyncio.run(shape(args.tables, min(args.seconds, 2.0)))
        print(f"asyncio's own work for an action's shape alone: {floor * 1e6:.1f} µs per action")
