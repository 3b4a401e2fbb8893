"""The event-log contract: what every backend must do, written once (backends: conftest.py)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
import time
from collections.abc import AsyncGenerator, Callable

import pytest

from spades_server.eventlog import (
    AppendNotifier,
    EventLog,
    LogClosed,
    StoredEvent,
    VersionConflict,
)
from tests.support.time import wait_for_state

from .conftest import NewLog

pytestmark = pytest.mark.asyncio

# Every test that waits runs under this bound, so a broken subscription fails, never hangs.
DEADLINE = 10.0


def payload(stream_id: str, version: int) -> bytes:
    return f"{stream_id}#{version}".encode()


async def append_run(log: EventLog, stream_id: str, count: int, *, chunk: int = 1) -> None:
    """Append ``count`` events to a stream, ``chunk`` at a time, yielding to others between."""
    version = await log.stream_version(stream_id)
    target = version + count
    while version < target:
        size = min(chunk, target - version)
        events = [payload(stream_id, version + offset) for offset in range(1, size + 1)]
        await log.append(stream_id, version, events)
        version += size
        await asyncio.sleep(0)


async def take(
    subscription: AsyncGenerator[StoredEvent, None], stop: Callable[[StoredEvent], bool]
) -> list[StoredEvent]:
    """Events from a subscription up to and including the first one ``stop`` accepts."""
    taken: list[StoredEvent] = []
    async with contextlib.aclosing(subscription):
        async for event in subscription:
            taken.append(event)
            if stop(event):
                return taken
    raise AssertionError("the subscription ended on its own")


# -- append and read ---------------------------------------------------------------------------


async def test_append_then_read_round_trip(log: EventLog) -> None:
    before = time.time()
    stored = await log.append("table-1", 0, [b"created", b"", b"\x00\xffbinary"])
    after = time.time()

    assert [event.version for event in stored] == [1, 2, 3]
    assert [event.data for event in stored] == [b"created", b"", b"\x00\xffbinary"]
    assert {event.stream_id for event in stored} == {"table-1"}
    assert stored[0].position < stored[1].position < stored[2].position
    assert all(before - 1 <= event.recorded_at <= after + 1 for event in stored)
    assert await log.read("table-1") == stored
    assert await log.read_all() == stored


async def test_versions_count_from_one_across_appends(log: EventLog) -> None:
    for expected in range(10):
        (stored,) = await log.append("table-1", expected, [payload("table-1", expected + 1)])
        assert stored.version == expected + 1
    events = await log.read("table-1")
    assert [event.version for event in events] == list(range(1, 11))
    assert [event.data for event in events] == [payload("table-1", v) for v in range(1, 11)]
    assert await log.stream_version("table-1") == 10


async def test_an_unknown_stream_is_empty_at_version_zero(log: EventLog) -> None:
    assert await log.stream_version("nobody") == 0
    assert await log.read("nobody") == []
    assert await log.read_all() == []


@pytest.mark.parametrize(
    ("stream_id", "expected"),
    [("table-1", 1), ("table-1", 2), ("table-1", 4), ("table-1", 10), ("table-new", 1)],
    ids=["stale", "stale-by-one", "ahead", "far-ahead", "new-stream-non-zero"],
)
async def test_a_version_conflict_writes_nothing(
    log: EventLog, stream_id: str, expected: int
) -> None:
    await log.append("table-1", 0, [b"a", b"b", b"c"])
    before = await log.read_all()

    with pytest.raises(VersionConflict) as raised:
        await log.append(stream_id, expected, [b"x", b"y"])

    conflict = raised.value
    assert (conflict.stream_id, conflict.expected) == (stream_id, expected)
    assert conflict.actual == (3 if stream_id == "table-1" else 0)
    assert f"version {conflict.actual}" in str(conflict)
    assert f"expected {expected}" in str(conflict)
    assert await log.read_all() == before
    assert await log.stream_version(stream_id) == conflict.actual


async def test_a_multi_event_append_is_atomic(log: EventLog) -> None:
    await log.append("table-1", 0, [b"a"])
    stored = await log.append("table-1", 1, [b"b", b"c", b"d", b"e"])
    assert [event.version for event in stored] == [2, 3, 4, 5]
    assert all(earlier.position < later.position for earlier, later in itertools.pairwise(stored))

    with pytest.raises(VersionConflict):
        await log.append("table-1", 1, [b"x", b"y", b"z"])
    assert [event.data for event in await log.read("table-1")] == [b"a", b"b", b"c", b"d", b"e"]


async def test_bad_arguments_are_refused(log: EventLog) -> None:
    with pytest.raises(ValueError):
        await log.append("table-1", 0, [])
    with pytest.raises(ValueError):
        await log.append("table-1", -1, [b"x"])
    with pytest.raises(ValueError):
        await log.append("", 0, [b"x"])
    with pytest.raises(ValueError):
        await log.read("table-1", -1)
    assert await log.read_all() == []


# -- racing writers ----------------------------------------------------------------------------


async def test_racing_appends_have_exactly_one_winner_per_version(log: EventLog) -> None:
    async def attempt(task: int, expected: int) -> bool:
        try:
            await log.append("table-1", expected, [f"task {task}".encode()])
        except VersionConflict as conflict:
            assert conflict.actual > expected
            return False
        return True

    for expected in range(5):
        async with asyncio.timeout(DEADLINE):
            won = await asyncio.gather(*(attempt(task, expected) for task in range(20)))
        assert won.count(True) == 1
        assert await log.stream_version("table-1") == expected + 1
    assert [event.version for event in await log.read("table-1")] == [1, 2, 3, 4, 5]


async def test_racing_writers_that_retry_all_land_once(log: EventLog) -> None:
    """20 writers each append 5 events to one stream, reloading after every conflict."""
    conflicts = 0

    async def writer(task: int) -> None:
        nonlocal conflicts
        for item in range(5):
            while True:
                version = await log.stream_version("table-1")
                try:
                    await log.append("table-1", version, [f"{task}:{item}".encode()])
                    break
                except VersionConflict:
                    conflicts += 1

    async with asyncio.timeout(DEADLINE):
        await asyncio.gather(*(writer(task) for task in range(20)))

    events = await log.read("table-1")
    assert [event.version for event in events] == list(range(1, 101))
    assert sorted(event.data for event in events) == sorted(
        f"{task}:{item}".encode() for task in range(20) for item in range(5)
    )
    # Each writer's own events stay in its order.
    for task in range(20):
        mine = [event.data for event in events if event.data.startswith(f"{task}:".encode())]
        assert mine == [f"{task}:{item}".encode() for item in range(5)]
    assert conflicts > 0  # they did race


async def test_many_streams_appended_concurrently(log: EventLog) -> None:
    streams = [f"table-{number}" for number in range(40)]
    async with asyncio.timeout(DEADLINE):
        await asyncio.gather(*(append_run(log, stream, 10, chunk=3) for stream in streams))

    for stream in streams:
        events = await log.read(stream)
        assert [event.version for event in events] == list(range(1, 11))
        assert [event.data for event in events] == [payload(stream, v) for v in range(1, 11)]
        assert await log.stream_version(stream) == 10
    everything = await log.read_all(limit=10_000)
    assert len(everything) == 400
    assert len({(event.stream_id, event.version) for event in everything}) == 400


async def test_read_after_version_and_limit(log: EventLog) -> None:
    await append_run(log, "table-1", 10, chunk=4)
    await append_run(log, "table-2", 3)

    def versions(events: list[StoredEvent]) -> list[int]:
        return [event.version for event in events]

    assert versions(await log.read("table-1", 2, 3)) == [3, 4, 5]
    assert versions(await log.read("table-1", 7)) == [8, 9, 10]
    assert versions(await log.read("table-1", limit=2)) == [1, 2]
    assert versions(await log.read("table-1", 8, 100)) == [9, 10]
    assert await log.read("table-1", 10) == []
    assert await log.read("table-1", 50) == []
    assert await log.read("table-1", 0, 0) == []
    assert {event.stream_id for event in await log.read("table-2")} == {"table-2"}


async def test_read_all_pages_through_everything_by_position(log: EventLog) -> None:
    order: list[tuple[str, int]] = []
    for round_number in range(5):
        for stream in ("a", "b", "c"):
            stored = await log.append(stream, round_number, [payload(stream, round_number + 1)])
            order.extend((event.stream_id, event.version) for event in stored)

    everything = await log.read_all()
    assert [(event.stream_id, event.version) for event in everything] == order
    positions = [event.position for event in everything]
    assert positions == sorted(set(positions))  # strictly increasing

    pages: list[StoredEvent] = []
    cursor = 0
    while page := await log.read_all(cursor, limit=4):
        assert len(page) <= 4
        pages.extend(page)
        cursor = page[-1].position
    assert pages == everything
    assert await log.read_all(positions[6]) == everything[7:]
    assert await log.read_all(positions[-1]) == []


# -- subscriptions -----------------------------------------------------------------------------

# Each live test runs with the default notifier and with one that keeps almost nothing in
# memory, so that subscribers also catch up from storage while appends race with them.
NOTIFIERS = {
    "roomy": AppendNotifier,
    "tiny": lambda: AppendNotifier(keep_all=5, keep_per_stream=3),
}


@pytest.fixture(params=sorted(NOTIFIERS))
def notifier_kind(request: pytest.FixtureRequest) -> str:
    kind: str = request.param
    return kind


async def open_log(new_log: NewLog, notifier_kind: str, batch_size: int = 7) -> EventLog:
    log = new_log()
    log.notifier = NOTIFIERS[notifier_kind]()
    log.subscription_batch_size = batch_size
    await log.open()
    return log


async def test_subscribe_catches_up_then_follows_live_appends(
    new_log: NewLog, notifier_kind: str
) -> None:
    log = await open_log(new_log, notifier_kind)
    await append_run(log, "table-1", 20, chunk=3)
    await append_run(log, "other", 5)
    rng = random.Random(7)
    final = 400

    async def writer() -> None:
        version = 20
        while version < final:
            size = min(rng.randint(1, 4), final - version)
            await log.append(
                "table-1", version, [payload("table-1", version + 1 + i) for i in range(size)]
            )
            version += size
            await log.append("other", await log.stream_version("other"), [b"noise"])
            for _ in range(rng.randint(0, 3)):
                await asyncio.sleep(0)

    async def subscriber(start_delay: int, after_version: int) -> list[StoredEvent]:
        for _ in range(start_delay):
            await asyncio.sleep(0)
        return await take(log.subscribe("table-1", after_version), lambda e: e.version == final)

    starts = [(0, 0), (0, 20), (5, 3), (20, 0), (50, 100), (80, 399)]
    async with asyncio.timeout(DEADLINE):
        writing = asyncio.create_task(writer())
        received = await asyncio.gather(*(subscriber(delay, after) for delay, after in starts))
        await writing

    stored = await log.read("table-1")
    for (_, after_version), events in zip(starts, received, strict=True):
        assert events == stored[after_version:]


async def test_subscribe_all_catches_up_then_follows_live_appends(
    new_log: NewLog, notifier_kind: str
) -> None:
    log = await open_log(new_log, notifier_kind)
    await append_run(log, "a", 10, chunk=2)
    streams = [f"table-{number}" for number in range(8)]
    per_stream = 40
    total = 10 + len(streams) * per_stream

    async def subscriber(start_delay: int, after_position: int) -> list[StoredEvent]:
        for _ in range(start_delay):
            await asyncio.sleep(0)
        seen = 0

        def done(event: StoredEvent) -> bool:
            nonlocal seen
            seen += 1
            return seen == total - after_position

        return await take(log.subscribe_all(after_position), done)

    starts = [(0, 0), (0, 10), (10, 4), (40, 0), (100, 200)]
    async with asyncio.timeout(DEADLINE):
        writers = [asyncio.create_task(append_run(log, s, per_stream, chunk=3)) for s in streams]
        received = await asyncio.gather(*(subscriber(delay, after) for delay, after in starts))
        await asyncio.gather(*writers)

    everything = await log.read_all(limit=10_000)
    assert len(everything) == total
    positions = [event.position for event in everything]
    assert positions == sorted(set(positions))
    for (_, after_position), events in zip(starts, received, strict=True):
        assert events == [event for event in everything if event.position > after_position]


async def test_live_subscribers_share_reads_instead_of_reading_per_event(log: EventLog) -> None:
    """Twenty subscribers at the head of a stream, then a burst of 200 appends."""
    await append_run(log, "table-1", 5)
    reads = 0
    real_read = log.read

    async def counting_read(
        stream_id: str, after_version: int = 0, limit: int | None = None
    ) -> list[StoredEvent]:
        nonlocal reads
        reads += 1
        return await real_read(stream_id, after_version, limit)

    log.read = counting_read  # type: ignore[method-assign]
    final = 205
    async with asyncio.timeout(DEADLINE):
        subscribers = [
            asyncio.create_task(
                take(log.subscribe("table-1", 5), lambda event: event.version == final)
            )
            for _ in range(20)
        ]
        for _ in range(5):
            await asyncio.sleep(0)
        reads_to_catch_up = reads
        await asyncio.gather(*(log.append("table-1", v, [b"burst"]) for v in range(5, final)))
        received = await asyncio.gather(*subscribers)

    assert all([event.version for event in events] == list(range(6, 206)) for events in received)
    assert reads_to_catch_up <= 20
    assert reads - reads_to_catch_up <= 20  # not 20 subscribers x 200 events


async def test_closing_the_log_ends_subscriptions(log: EventLog) -> None:
    await log.append("table-1", 0, [b"a"])
    got: list[StoredEvent] = []

    async def follow(subscription: AsyncGenerator[StoredEvent, None]) -> None:
        async for event in subscription:
            got.append(event)

    async with asyncio.timeout(DEADLINE):
        followers = [
            asyncio.create_task(follow(log.subscribe("table-1"))),
            asyncio.create_task(follow(log.subscribe("never-written"))),
            asyncio.create_task(follow(log.subscribe_all())),
        ]
        while len(got) < 2:
            await asyncio.sleep(0.001)
        await log.close()
        outcomes = await asyncio.gather(*followers, return_exceptions=True)

    assert all(isinstance(outcome, LogClosed) for outcome in outcomes), outcomes
    with pytest.raises(LogClosed):
        await log.append("table-1", 1, [b"b"])
    with pytest.raises(LogClosed):
        await log.read("table-1")
    with pytest.raises(LogClosed):
        await anext(log.subscribe("table-1"))
    with pytest.raises(LogClosed):
        await anext(log.subscribe_all())
    await log.close()  # idempotent


async def test_appends_queued_before_close_are_kept(new_log: NewLog) -> None:
    log = new_log()
    await log.open()
    finished: list[list[StoredEvent] | BaseException] = []
    for n in range(50):  # each append is queued when submit() returns
        log.submit(f"t{n}", 0, [b"x"], finished.append)
    await log.close()
    await wait_for_state(lambda: len(finished) == 50, "every queued append answered")
    acknowledged = {result[0].stream_id for result in finished if isinstance(result, list)}

    reopened = new_log()
    await reopened.open()
    kept = {event.stream_id for event in await reopened.read_all()}
    assert acknowledged <= kept
    assert acknowledged  # the appends queued before close() were finished, not dropped


async def test_a_reopened_log_sees_everything(new_log: NewLog) -> None:
    first = new_log()
    await first.open()
    for stream in ("a", "b", "c"):
        await append_run(first, stream, 7, chunk=2)
    written = await first.read_all()
    await first.close()

    log = new_log()
    await log.open()
    assert await log.read_all() == written
    assert await log.stream_version("b") == 7
    assert await log.read("b") == [event for event in written if event.stream_id == "b"]
    with pytest.raises(VersionConflict):
        await log.append("b", 6, [b"stale"])
    (appended,) = await log.append("b", 7, [b"more"])
    assert appended.version == 8
    assert appended.position > written[-1].position

    async with asyncio.timeout(DEADLINE):
        replayed = await take(log.subscribe_all(), lambda event: event == appended)
        stream_b = await take(log.subscribe("b", 3), lambda event: event.version == 8)
    assert replayed == [*written, appended]
    assert [event.version for event in stream_b] == [4, 5, 6, 7, 8]


async def test_submit_hands_each_outcome_to_its_callback(log: EventLog) -> None:
    """``submit`` is ``append`` with the outcome handed to a callback on the event loop: the
    stored events (durable, in call order per stream), or the exception, such as a conflict."""
    await log.append("s", 0, [payload("s", 1)])
    loop = asyncio.get_running_loop()
    outcomes: dict[str, asyncio.Future[list[StoredEvent] | BaseException]] = {}

    def collect(name: str) -> Callable[[list[StoredEvent] | BaseException], None]:
        outcomes[name] = loop.create_future()
        return outcomes[name].set_result

    log.submit("s", 1, [payload("s", 2), payload("s", 3)], collect("next"))
    log.submit("s", 1, [b"late"], collect("conflict"))
    log.submit("t", 0, [payload("t", 1)], collect("other"), claim=("k", b"v"))
    async with asyncio.timeout(DEADLINE):
        stored = await outcomes["next"]
        conflict = await outcomes["conflict"]
        other = await outcomes["other"]
    assert isinstance(stored, list) and [event.version for event in stored] == [2, 3]
    assert isinstance(conflict, VersionConflict) and conflict.actual == 3
    assert isinstance(other, list) and [event.stream_id for event in other] == ["t"]
    assert [event.data for event in await log.read("s")] == [payload("s", v) for v in (1, 2, 3)]
    assert await log.read_claim("t", "k") == b"v"


async def test_a_failing_submit_callback_costs_no_other_append_its_outcome(log: EventLog) -> None:
    """A callback that raises is reported to the event loop's exception handler; the appends
    submitted beside it (the same batch, where a backend batches) still get their outcomes,
    and its own append stands."""
    loop = asyncio.get_running_loop()
    reported: list[dict[str, object]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    try:

        def fail(outcome: list[StoredEvent] | BaseException) -> None:
            raise RuntimeError("a listener's fault")

        after: asyncio.Future[list[StoredEvent] | BaseException] = loop.create_future()
        log.submit("a", 0, [payload("a", 1)], fail)
        log.submit("b", 0, [payload("b", 1)], after.set_result)
        async with asyncio.timeout(DEADLINE):
            stored = await after
            while not reported:
                await asyncio.sleep(0.01)
    finally:
        loop.set_exception_handler(previous)
    assert isinstance(stored, list) and [event.stream_id for event in stored] == ["b"]
    assert isinstance(reported[0]["exception"], RuntimeError)
    assert [event.data for event in await log.read("a")] == [payload("a", 1)]
