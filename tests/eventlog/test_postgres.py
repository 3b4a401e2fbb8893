"""What only the PostgreSQL backend promises: replicas sharing one log, gap-safe global order,
fan-out through LISTEN/NOTIFY, and a schema several processes may create at once.

Each test works in a schema of its own (dropped afterwards); skipped when no server answers at
``SPADES_TEST_POSTGRES_DSN``, failed when none does under CI (see tests/support/backends.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import urllib.parse
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from pathlib import Path

import asyncpg
import pytest
import pytest_asyncio

from spades_server.eventlog import LogUnavailable, PostgresEventLog, StoredEvent, VersionConflict
from spades_server.eventlog.base import ClaimTaken
from tests.support.backends import POSTGRES_DSN, drop_schema, require_postgres, schema_for
from tests.support.time import LOG_LISTENER, ORDER_TRACKER, ManualClock, wait_for_state

pytestmark = pytest.mark.asyncio

DEADLINE = 15.0

MakeLog = Callable[..., PostgresEventLog]


async def hole_examined(log: PostgresEventLog, times: int = 2) -> None:
    """Wait until the log's order tracker has read storage ``times`` more times to judge the
    hole it now sees: a second look is where a wrong proof would call the hole final."""
    start = log.holes_examined
    await wait_for_state(
        lambda: log.holes_examined >= start + times, f"the tracker looked at the hole {times}x"
    )


async def blocked_by(holder: asyncpg.Connection) -> None:
    """Wait until some statement waits for a lock ``holder``'s transaction holds (PostgreSQL's
    own view of who blocks whom: no time allowed for it, the state itself)."""
    pid = await holder.fetchval("SELECT pg_backend_pid()")

    async def waiting() -> bool:
        return bool(
            await holder.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))", pid
            )
        )

    await wait_for_state(waiting, f"a statement waits for backend {pid}'s lock")


@pytest.fixture
def schema(tmp_path: Path) -> str:
    require_postgres()
    return schema_for(tmp_path)


@pytest_asyncio.fixture
async def make_log(schema: str) -> AsyncIterator[MakeLog]:
    """Makes open-able log instances on this test's schema (each its own pool: a replica)."""
    made: list[PostgresEventLog] = []

    def make(**options: object) -> PostgresEventLog:
        options.setdefault("pool_size", 4)
        dsn = str(options.pop("dsn", POSTGRES_DSN))
        log = PostgresEventLog(dsn, schema=schema, **options)  # type: ignore[arg-type]
        made.append(log)
        return log

    yield make
    for log in made:
        await log.close()
    await drop_schema(schema)


@pytest_asyncio.fixture
async def admin(schema: str) -> AsyncIterator[asyncpg.Connection]:
    """A plain connection on the test's schema, for what the log must not be able to do."""
    connection = await asyncpg.connect(POSTGRES_DSN, server_settings={"search_path": schema})
    yield connection
    await connection.close()


async def opened(log: PostgresEventLog) -> PostgresEventLog:
    await log.open()
    return log


async def collect(subscription: AsyncGenerator[StoredEvent, None], count: int) -> list[StoredEvent]:
    taken: list[StoredEvent] = []
    async with contextlib.aclosing(subscription):
        async for event in subscription:
            taken.append(event)
            if len(taken) == count:
                return taken
    raise AssertionError("the subscription ended on its own")


async def test_the_schema_has_the_unique_key_and_a_version(
    make_log: MakeLog, admin: asyncpg.Connection
) -> None:
    log = await opened(make_log())
    await log.append("table-1", 0, [b"a"])
    assert await admin.fetchval("SELECT version FROM eventlog_schema") == 2  # events, claims
    with pytest.raises(asyncpg.UniqueViolationError):  # the unique key is the final guard
        await admin.execute(
            "INSERT INTO events (stream_id, version, recorded_at, data)"
            " VALUES ('table-1', 1, 0, '\\x00')"
        )


async def test_many_processes_may_create_the_schema_at_once(make_log: MakeLog) -> None:
    logs = [make_log(pool_size=1) for _ in range(6)]
    async with asyncio.timeout(DEADLINE):
        await asyncio.gather(*(log.open() for log in logs))
    await logs[0].append("table-1", 0, [b"a"])
    assert [await log.stream_version("table-1") for log in logs] == [1] * 6


async def test_a_newer_schema_is_refused(make_log: MakeLog, admin: asyncpg.Connection) -> None:
    await (await opened(make_log())).close()
    await admin.execute("UPDATE eventlog_schema SET version = 99")
    with pytest.raises(RuntimeError, match="schema 99"):
        await make_log().open()


async def test_a_replica_sees_another_replicas_events_in_order(make_log: MakeLog) -> None:
    a = await opened(make_log())
    b = await opened(make_log())
    total = 200

    async def writer() -> None:
        for version in range(total):
            via = b if version % 3 else a
            await via.append("table-1", version, [f"e{version + 1}".encode()])
            if version % 7 == 0:
                await b.append("other", await b.stream_version("other"), [b"noise"])

    async with asyncio.timeout(DEADLINE):
        on_a = asyncio.create_task(collect(a.subscribe("table-1"), total))
        all_on_a = asyncio.create_task(collect(a.subscribe_all(), total + 29))
        on_b = asyncio.create_task(collect(b.subscribe("table-1", 50), total - 50))
        await writer()
        stream_a, everything_a, stream_b = await asyncio.gather(on_a, all_on_a, on_b)

    stored = await a.read("table-1")
    assert [event.version for event in stored] == list(range(1, total + 1))
    assert stream_a == stored
    assert stream_b == stored[50:]
    assert everything_a == await b.read_all(limit=10_000)
    assert a.notifications_sent > 0 and b.notifications_sent > 0


async def test_racing_through_two_replicas_one_winner_per_version(make_log: MakeLog) -> None:
    a = await opened(make_log())
    b = await opened(make_log())

    async def attempt(task: int, expected: int) -> bool:
        via = a if task % 2 else b
        try:
            await via.append("table-1", expected, [f"task {task}".encode()])
        except VersionConflict as conflict:
            assert conflict.actual > expected
            return False
        return True

    for expected in range(10):
        async with asyncio.timeout(DEADLINE):
            won = await asyncio.gather(*(attempt(task, expected) for task in range(12)))
        assert won.count(True) == 1
    assert [event.version for event in await a.read("table-1")] == list(range(1, 11))


async def test_subscribe_all_misses_nothing_under_racing_replicas(make_log: MakeLog) -> None:
    """Writers on both replicas race on shared streams (losers burn positions: holes) while
    positions commit out of order; every subscribe_all sees exactly the final log."""
    a = await opened(make_log(pool_size=6))
    b = await opened(make_log(pool_size=6))
    streams = [f"table-{n}" for n in range(6)]
    per_writer = 25

    async def writer(task: int) -> None:
        via = a if task % 2 else b
        stream = streams[task % len(streams)]
        for item in range(per_writer):
            while True:
                version = await via.stream_version(stream)
                try:
                    await via.append(stream, version, [f"{task}:{item}".encode(), b"x"])
                    break
                except VersionConflict:
                    pass

    writers = 16
    total = writers * per_writer * 2
    async with asyncio.timeout(DEADLINE * 2):
        subscribers = [asyncio.create_task(collect(log.subscribe_all(), total)) for log in (a, b)]
        await asyncio.gather(*(writer(task) for task in range(writers)))
        received = await asyncio.gather(*subscribers)

    everything = await a.read_all(limit=100_000)
    assert len(everything) == total
    positions = [event.position for event in everything]
    assert positions == sorted(set(positions))
    for events in received:
        assert events == everything


async def test_positions_committed_out_of_order_are_not_skipped(
    make_log: MakeLog, admin: asyncpg.Connection
) -> None:
    """A transaction draws position 1 and commits only after position 2 committed: a reader
    that followed ``position > last`` would skip 1 for good."""
    log = await opened(make_log())
    slow = await asyncpg.connect(POSTGRES_DSN, server_settings={"search_path": log.schema or ""})
    try:
        transaction = slow.transaction()
        await transaction.start()
        # As the log's append does: take the transaction id, then draw the position.
        await slow.fetchval("SELECT pg_current_xact_id()")
        held = await slow.fetchval(
            "INSERT INTO events (stream_id, version, recorded_at, data)"
            " VALUES ('slow', 1, extract(epoch FROM now()), 'slow') RETURNING position"
        )
        (fast,) = await log.append("fast", 0, [b"fast"])
        assert held < fast.position
        # The naive reader's view: the later position is visible, the earlier one is not.
        naive = await admin.fetch("SELECT position FROM events WHERE position > 0")
        assert [row["position"] for row in naive] == [fast.position]

        subscription = asyncio.create_task(collect(log.subscribe_all(), 2))
        stream = asyncio.create_task(collect(log.subscribe("fast"), 1))
        assert await log.read_all() == []  # nothing is final yet
        async with asyncio.timeout(DEADLINE):
            assert [event.data for event in await stream] == [b"fast"]  # streams need no wait
        await hole_examined(log)
        assert await log.read_all() == []
        assert not subscription.done()  # subscribe_all waits for position 1
        await transaction.commit()
        async with asyncio.timeout(DEADLINE):
            received = await subscription
    finally:
        await slow.close()
    assert [(event.stream_id, event.position) for event in received] == [
        ("slow", held),
        ("fast", fast.position),
    ]
    assert await log.read_all() == received


async def test_a_position_that_never_commits_is_skipped_once_final(make_log: MakeLog) -> None:
    log = await opened(make_log())
    slow = await asyncpg.connect(POSTGRES_DSN, server_settings={"search_path": log.schema or ""})
    try:
        transaction = slow.transaction()
        await transaction.start()
        await slow.fetchval("SELECT pg_current_xact_id()")
        held = await slow.fetchval(
            "INSERT INTO events (stream_id, version, recorded_at, data)"
            " VALUES ('doomed', 1, 0, 'x') RETURNING position"
        )
        (fast,) = await log.append("fast", 0, [b"fast"])
        subscription = asyncio.create_task(collect(log.subscribe_all(), 1))
        await hole_examined(log)
        assert await log.read_all() == []
        assert not subscription.done()
        await transaction.rollback()  # position `held` stays a hole forever
        async with asyncio.timeout(DEADLINE):
            (received,) = await subscription
    finally:
        await slow.close()
    assert received == fast and held < fast.position
    assert await log.read_all() == [fast]


async def test_a_lost_listener_reconnects_and_catches_up(
    make_log: MakeLog, admin: asyncpg.Connection
) -> None:
    a = await opened(make_log(poll_interval=60.0, reconnect_delay=0.5))
    b = await opened(make_log())
    await b.append("table-1", 0, [b"one"])
    async with asyncio.timeout(DEADLINE):
        stream = asyncio.create_task(collect(a.subscribe("table-1"), 3))
        everything = asyncio.create_task(collect(a.subscribe_all(), 3))
        while not a.notifier.watched_streams():
            await asyncio.sleep(0.01)
        await b.append("table-1", 1, [b"two"])  # delivered by NOTIFY
        listener = a.listener_pid
        assert listener is not None
        await admin.execute("SELECT pg_terminate_backend($1)", listener)
        while a.listener_pid is not None:  # A noticed
            await asyncio.sleep(0.01)
        await b.append("table-1", 2, [b"three"])  # its NOTIFY reaches nobody on A
        received = await stream
        received_all = await everything
    assert [event.data for event in received] == [b"one", b"two", b"three"]
    assert received_all == received
    assert a.listener_reconnects == 1


async def test_the_listeners_reconnect_waits_on_the_logs_clock(
    make_log: MakeLog, admin: asyncpg.Connection
) -> None:
    """The reconnection's delay is slept on the log's ``sleep`` (a server's clock): an hour of
    a test's clock passes at once, and nothing reconnects before the clock moves."""
    clock = ManualClock()
    log = make_log(reconnect_delay=3600.0)
    log.sleep = clock.sleep
    await opened(log)
    listener = log.listener_pid
    assert listener is not None
    await admin.execute("SELECT pg_terminate_backend($1)", listener)
    await clock.sleeping(LOG_LISTENER)  # the reconnection waits for the clock
    assert log.listener_reconnects == 0
    clock.advance(3600.0)
    await wait_for_state(lambda: log.listener_reconnects == 1, "the listener reconnected")
    assert log.listener_pid not in (None, listener)


async def test_the_periodic_re_read_waits_on_the_logs_clock(make_log: MakeLog) -> None:
    """The order tracker's re-read every ``poll_interval`` (the safety net for a notification
    that never came) waits on the log's ``sleep`` (a server's clock): an event no notification
    announced reaches ``subscribe_all`` once an hour of a test's clock has passed."""
    clock = ManualClock()
    writer = await opened(make_log(notify=False))  # its appends announce nothing
    log = make_log(poll_interval=3600.0)
    log.sleep = clock.sleep
    await opened(log)
    everything = asyncio.create_task(collect(log.subscribe_all(), 1))
    stored = await writer.append("table-1", 0, [b"unheard"])
    await clock.sleeping(ORDER_TRACKER)  # the re-read waits for the clock
    assert not everything.done()
    clock.advance(3600.0)
    async with asyncio.timeout(DEADLINE):
        assert await everything == stored


async def test_the_periodic_re_read_is_not_put_off_by_other_streams_traffic(
    make_log: MakeLog,
) -> None:
    """The re-read every ``poll_interval`` runs however often other streams' notifications
    wake the order tracker: an append no notification announced reaches its stream's
    subscriber while another stream's appends are heard every few milliseconds. (They used to
    put the re-read off for as long as they came, each one starting its wait again: a replica
    cut off from the fan-out for a while then served a table's view from before the cut.)"""
    quiet = await opened(make_log(notify=False))  # its appends announce nothing
    busy = await opened(make_log())
    log = await opened(make_log(poll_interval=0.2))
    stream = asyncio.create_task(collect(log.subscribe("table-1"), 1))
    stop = asyncio.Event()

    async def chatter() -> None:
        version = 0
        while not stop.is_set():  # bounded by the test's deadline below
            await busy.append("table-2", version, [b"heard"])
            version += 1
            await asyncio.sleep(0.02)

    talking = asyncio.create_task(chatter())
    try:
        async with asyncio.timeout(DEADLINE):
            while not log.notifier.watched_streams():
                await asyncio.sleep(0.01)
            stored = await quiet.append("table-1", 0, [b"unheard"])
            assert await stream == stored
    finally:
        stop.set()
        await talking


async def test_notifications_are_coalesced(make_log: MakeLog) -> None:
    log = await opened(make_log(pool_size=8))
    streams = [f"table-{n}" for n in range(32)]

    async def run(stream: str) -> None:
        for version in range(10):
            await log.append(stream, version, [b"x"])

    async with asyncio.timeout(DEADLINE):
        await asyncio.gather(*(run(stream) for stream in streams))
    await log.close()
    assert log.appends == 320
    assert 0 < log.notifications_sent < log.appends


async def test_a_writer_with_a_newer_transaction_id_still_counts(
    make_log: MakeLog, admin: asyncpg.Connection
) -> None:
    """R takes its transaction id, then H takes a newer one and draws position g, then R draws
    g + 1 and commits. H is then newer than every completed transaction, so the snapshot does
    not list it (xmin = xmax): "nobody is writing" is wrong there, and g must still be waited
    for."""
    log = await opened(make_log())
    settings = {"search_path": log.schema or ""}
    first = await asyncpg.connect(POSTGRES_DSN, server_settings=settings)
    held = await asyncpg.connect(POSTGRES_DSN, server_settings=settings)
    insert = (
        "INSERT INTO events (stream_id, version, recorded_at, data)"
        " VALUES ($1, 1, extract(epoch FROM now()), 'x') RETURNING position"
    )
    try:
        first_tx, held_tx = first.transaction(), held.transaction()
        await first_tx.start()
        await held_tx.start()
        older = await first.fetchval("SELECT pg_current_xact_id()::text::bigint")
        newer = await held.fetchval("SELECT pg_current_xact_id()::text::bigint")
        assert older < newer
        gap = await held.fetchval(insert, "held")
        later = await first.fetchval(insert, "first")
        await first_tx.commit()
        assert gap < later
        subscription = asyncio.create_task(collect(log.subscribe_all(), 2))
        await hole_examined(log)
        assert await log.read_all() == []
        assert not subscription.done()
        await held_tx.commit()
        async with asyncio.timeout(DEADLINE):
            received = await subscription
    finally:
        await first.close()
        await held.close()
    assert [event.position for event in received] == [gap, later]


# -- appends of many streams in one statement -------------------------------------------------


async def test_appends_to_many_streams_share_a_commit_each_with_its_own_outcome(
    make_log: MakeLog,
) -> None:
    """Appends requested together go to PostgreSQL together, yet each is checked against its
    own expected version and claim: the conflicting ones fail alone, nothing of them written."""
    log = await opened(make_log())
    await log.append("behind", 0, [b"one", b"two"])
    await log.append("claimed", 0, [b"one"], claim=("action-1", b"first"))
    commits = log.commits
    calm = [f"calm-{n}" for n in range(20)]

    async with asyncio.timeout(DEADLINE):
        outcomes = await asyncio.gather(
            *(log.append(stream, 0, [stream.encode()]) for stream in calm),
            log.append("behind", 1, [b"stale"]),
            log.append("claimed", 1, [b"again"], claim=("action-1", b"second")),
            log.append("new", 0, [b"a", b"b", b"c"], claim=("action-2", b"")),
            log.append("pair", 0, [b"first"]),
            log.append("pair", 1, [b"second"]),  # sees the first one: call order holds
            log.append("pair", 0, [b"late"]),
            return_exceptions=True,
        )

    *stored_calm, behind, claimed, new, pair_first, pair_second, pair_late = outcomes
    for stream, stored in zip(calm, stored_calm, strict=True):
        assert isinstance(stored, list)
        assert [(event.stream_id, event.version, event.data) for event in stored] == [
            (stream, 1, stream.encode())
        ]
    assert isinstance(behind, VersionConflict) and behind.actual == 2
    assert isinstance(claimed, ClaimTaken) and claimed.data == b"first"
    assert isinstance(new, list) and [event.version for event in new] == [1, 2, 3]
    assert isinstance(pair_first, list) and isinstance(pair_second, list)
    assert [pair_first[0].version, pair_second[0].version] == [1, 2]
    assert isinstance(pair_late, VersionConflict) and pair_late.actual == 2

    # Nothing of the refused appends was written, and the first claim stands.
    assert [event.data for event in await log.read("behind")] == [b"one", b"two"]
    assert [event.data for event in await log.read("claimed")] == [b"one"]
    assert await log.read_claim("claimed", "action-1") == b"first"
    assert await log.read_claim("new", "action-2") == b""
    assert [event.data for event in await log.read("pair")] == [b"first", b"second"]
    # One transaction for all the first appends of each stream (one statement timestamp),
    # then one for the pair's second: not one per append.
    first_batch = [
        events[0] for events in (*stored_calm, new, pair_first) if isinstance(events, list)
    ]
    assert len(first_batch) == 22
    assert len({event.recorded_at for event in first_batch}) == 1
    assert log.commits - commits == 2
    assert log.appends == 2 + 20 + 1 + 2


async def test_a_streams_appends_keep_their_call_order(make_log: MakeLog) -> None:
    """Appends to one stream issued back to back, without awaiting each, land in call order
    while other streams' appends go in the same batches."""
    log = await opened(make_log())
    count = 30

    async with asyncio.timeout(DEADLINE):
        appends = []
        for version in range(count):
            ordered = log.append("ordered", version, [f"ordered:{version}".encode()])
            appends.append(asyncio.create_task(ordered))
            appends.append(asyncio.create_task(log.append(f"other-{version}", 0, [b"x"])))
        await asyncio.gather(*appends)

    events = await log.read("ordered")
    assert [event.data for event in events] == [f"ordered:{v}".encode() for v in range(count)]
    assert log.commits < len(appends)  # the other streams' appends shared commits


async def test_a_cancelled_caller_does_not_withdraw_its_append(make_log: MakeLog) -> None:
    """A caller that stops waiting (a gRPC call cancelled) leaves its append in place: it is
    committed and published like any other, and the appends batched with it are not disturbed."""
    log = await opened(make_log())
    locker = await asyncpg.connect(POSTGRES_DSN, server_settings={"search_path": log.schema or ""})
    try:
        async with asyncio.timeout(DEADLINE):
            followed = asyncio.create_task(collect(log.subscribe("cancelled"), 1))
            while not log.notifier.watched_streams():
                await asyncio.sleep(0.01)
            # Inserts wait for this lock: the appends' statement is in flight while it is held.
            holding = locker.transaction()
            await holding.start()
            await locker.execute("LOCK TABLE events IN SHARE MODE")
            cancelled = asyncio.create_task(log.append("cancelled", 0, [b"kept"]))
            other = asyncio.create_task(log.append("other", 0, [b"also"]))
            await blocked_by(locker)
            cancelled.cancel()
            with pytest.raises(asyncio.CancelledError):
                await cancelled
            await holding.rollback()
            (stored,) = await other
            (published,) = await followed
    finally:
        await locker.close()
    assert stored.data == b"also"
    assert published.data == b"kept" and published.version == 1
    assert [event.data for event in await log.read("cancelled")] == [b"kept"]
    with pytest.raises(VersionConflict):
        await log.append("cancelled", 0, [b"again"])


async def test_a_unique_key_race_lost_in_a_batch_fails_only_that_append(
    make_log: MakeLog,
) -> None:
    """Another writer holds version 1 of a stream uncommitted; the batch that also writes it
    waits, and when that writer commits the batch's statement fails on the unique key. Each of
    its appends is then tried alone: only the one that lost the race fails."""
    log = await opened(make_log())
    other = await asyncpg.connect(POSTGRES_DSN, server_settings={"search_path": log.schema or ""})
    try:
        transaction = other.transaction()
        await transaction.start()
        await other.fetchval("SELECT pg_current_xact_id()")
        await other.execute(
            "INSERT INTO events (stream_id, version, recorded_at, data)"
            " VALUES ('raced', 1, extract(epoch FROM now()), 'theirs')"
        )
        async with asyncio.timeout(DEADLINE):
            raced = asyncio.create_task(log.append("raced", 0, [b"ours"]))
            calm = asyncio.create_task(log.append("calm", 0, [b"calm"]))
            # They share one statement, which waits on the key with the other writer.
            await blocked_by(other)
            assert not raced.done() and not calm.done()
            await transaction.commit()
            with pytest.raises(VersionConflict) as lost:
                await raced
            (stored,) = await calm
    finally:
        await other.close()
    assert lost.value.actual == 1
    assert stored.version == 1
    assert [event.data for event in await log.read("raced")] == [b"theirs"]
    assert log.write_health.failure is None
    # The failed statement drew positions that never commit: holes, proven final, not waited
    # for forever, and nothing committed is skipped.
    async with asyncio.timeout(DEADLINE):
        everything = await collect(log.subscribe_all(), 2)
    assert [event.data for event in everything] == [b"theirs", b"calm"]
    assert everything[1].position > everything[0].position + 1


async def test_a_value_postgres_refuses_fails_only_its_append(make_log: MakeLog) -> None:
    log = await opened(make_log())
    async with asyncio.timeout(DEADLINE):
        refused, stored = await asyncio.gather(
            log.append("nul\x00", 0, [b"x"]),  # PostgreSQL's text holds no NUL
            log.append("fine", 0, [b"y"]),
            return_exceptions=True,
        )
    assert isinstance(refused, asyncpg.PostgresError)
    assert isinstance(stored, list) and stored[0].data == b"y"
    assert log.write_health.failure is None


class CuttableLink:
    """A TCP relay to PostgreSQL on 127.0.0.1 that a test can cut (every connection closed,
    new ones refused) and restore: the way to the database failing for real."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    async def restore(self) -> None:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def cut(self) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()
        for writer in list(self._writers):
            writer.close()
        self._writers.clear()

    async def _relay(
        self, client_in: asyncio.StreamReader, client_out: asyncio.StreamWriter
    ) -> None:
        server_in, server_out = await asyncio.open_connection("127.0.0.1", self.target_port)
        self._writers |= {client_out, server_out}

        async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError, ConnectionError):
                while data := await reader.read(65536):
                    writer.write(data)
                    await writer.drain()
            writer.close()

        await asyncio.gather(pipe(client_in, server_out), pipe(server_in, client_out))


async def test_reads_of_a_log_out_of_reach_are_unavailable_and_a_subscription_resumes(
    make_log: MakeLog,
) -> None:
    # PostgreSQL out of reach: a read is refused as LogUnavailable (never a driver's error), and
    # a subscription opened meanwhile neither ends nor skips anything: it delivers every event
    # once the log answers again. (A subscription whose read fails goes on too, see
    # EventLog.subscribe_all: found by the cluster suite, where the lobby's ended and every call
    # waiting on the lobby hung; not provoked here, where nothing makes it read during the cut.)
    dsn = urllib.parse.urlsplit(POSTGRES_DSN)
    link = CuttableLink(dsn.port or 5432)
    await link.restore()
    through_link = dsn._replace(netloc=f"{dsn.username}@127.0.0.1:{link.port}").geturl()
    direct = await opened(make_log())
    await direct.append("s1", 0, [b"before"])
    # Opened after it: "before" is in no memory of this log's, only in storage.
    cut_off = await opened(make_log(dsn=through_link))
    await link.cut()
    with pytest.raises(LogUnavailable):
        await cut_off.read("s1")
    subscription = cut_off.subscribe_all(0)
    first = asyncio.ensure_future(anext(subscription))
    await direct.append("s1", 1, [b"meanwhile"])
    done, _ = await asyncio.wait([first], timeout=0.5)
    assert not done  # nothing can be read yet, and the subscription has not ended
    await link.restore()
    async with asyncio.timeout(DEADLINE):
        assert (await first).data == b"before"
        assert (await anext(subscription)).data == b"meanwhile"
    await subscription.aclose()
