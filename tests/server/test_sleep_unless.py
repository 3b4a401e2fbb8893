"""``ops.clocks.sleep_unless``, on which the turn clock and the other timed processes wait: a
cancellation of the waiting task is never lost, whenever it lands. One landing while the sleep
was ending (its two waiters cancelled and awaited) used to be swallowed: the turn clock's loop
then went on waiting, and a server's ``stop()`` waited for it forever (a rated-play test's
shutdown on PostgreSQL hung about one run in fifteen)."""

from __future__ import annotations

import asyncio

import pytest

from spades_server.ops.clocks import SystemClock, sleep_unless


@pytest.mark.asyncio
@pytest.mark.parametrize("turns", range(8))
async def test_a_cancellation_is_never_lost_whenever_it_lands(turns: int) -> None:
    """The task is cancelled after ``turns`` turns of the event loop: before, during and after
    the end of a zero-second sleep. If the cancellation was taken (the task had not ended), the
    task ends cancelled."""
    task = asyncio.create_task(sleep_unless(SystemClock(), asyncio.Event(), 0))
    for _ in range(turns):
        await asyncio.sleep(0)
    taken = task.cancel()
    await asyncio.wait([task])
    assert task.cancelled() == taken


@pytest.mark.asyncio
async def test_the_event_or_the_time_ends_the_sleep() -> None:
    event = asyncio.Event()
    waiting = asyncio.create_task(sleep_unless(SystemClock(), event, 3600))
    asyncio.get_running_loop().call_soon(event.set)  # once the task waits
    await asyncio.wait_for(waiting, 5)  # the event, long before the hour
    await asyncio.wait_for(sleep_unless(SystemClock(), asyncio.Event(), 0.01), 5)  # the time
