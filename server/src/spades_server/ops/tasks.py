"""Stopping a process's background tasks (its sweeper or loop, the bots it supervises, the work
under way): every ``stop()`` of ``processes/`` ends its tasks through :func:`stop_tasks`.

The one way to do it, because the obvious one is wrong: awaiting each cancelled task under a
suppressed ``CancelledError`` also swallows a cancellation of the stopping task itself, landing
while it waits (``ops.clocks.sleep_unless`` lost the turn clock's stop that way, and a server's
``stop()`` waited forever).
"""

from __future__ import annotations

import asyncio
from typing import Any

import structlog

log = structlog.get_logger(__name__)


async def stop_tasks(*tasks: asyncio.Task[Any] | None) -> None:
    """Cancel ``tasks`` (None for one never started) and return once every one has ended.

    What a task ended with is not raised: the process is stopping and its ``stop()`` goes on;
    a task that had failed is logged with its exception. A cancellation of the caller while it
    waits is raised (the tasks are cancelled already and end by themselves).
    """
    started = [task for task in tasks if task is not None]
    if not started:
        return
    for task in started:
        task.cancel()
    await asyncio.wait(started)
    for task in started:
        if not task.cancelled() and task.exception() is not None:
            log.error("task failed", task=task.get_name(), exc_info=task.exception())
