"""``ops.tasks.stop_tasks``, through which every process's ``stop()`` ends its background tasks:
each task has ended when it returns, a failed one is logged and not raised, and a cancellation
of the stopping task itself is never swallowed."""

from __future__ import annotations

import asyncio

import pytest
from structlog.testing import capture_logs

from spades_server.ops.tasks import stop_tasks
from tests.support.time import wait_for_state


async def _forever() -> None:
    await asyncio.Event().wait()


async def _slow_to_end(started: asyncio.Event, cleaned: asyncio.Event) -> None:
    """Cancelled, it cleans up until ``cleaned`` is set, then ends cancelled."""
    started.set()
    try:
        await asyncio.Event().wait()
    finally:
        await cleaned.wait()


async def _fails() -> None:
    raise ValueError("broken")


@pytest.mark.asyncio
async def test_every_task_has_ended_when_it_returns() -> None:
    tasks = [asyncio.create_task(_forever()) for _ in range(3)]
    await stop_tasks(tasks[0], None, *tasks[1:])
    assert all(task.cancelled() for task in tasks)
    await stop_tasks()  # nothing to stop
    await stop_tasks(None)


@pytest.mark.asyncio
async def test_a_failed_task_is_logged_not_raised() -> None:
    failed = asyncio.create_task(_fails(), name="the-failing-one")
    running = asyncio.create_task(_forever())
    await asyncio.wait([failed])
    with capture_logs() as logs:
        await stop_tasks(failed, running)
    assert running.cancelled()
    assert [(entry["event"], entry["task"]) for entry in logs] == [
        ("task failed", "the-failing-one")
    ]


@pytest.mark.asyncio
async def test_a_cancellation_of_the_stopping_task_is_not_swallowed() -> None:
    started, cleaned = asyncio.Event(), asyncio.Event()
    slow = asyncio.create_task(_slow_to_end(started, cleaned))
    await started.wait()
    went_on = False

    async def stop() -> None:
        nonlocal went_on
        await stop_tasks(slow)
        went_on = True  # a stop() whose caller gave up must not go on

    stopping = asyncio.create_task(stop())
    # Cancelled by stop_tasks, which then waits for it (no turn of the loop in between).
    await wait_for_state(slow.cancelling, "the slow task cancelled by stop_tasks")
    assert not slow.done()
    stopping.cancel()
    await asyncio.wait([stopping])
    assert stopping.cancelled() and not went_on
    cleaned.set()
    await asyncio.wait([slow])
    assert slow.cancelled()
