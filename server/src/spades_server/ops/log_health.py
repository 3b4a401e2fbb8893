"""The service's health follows its event log's writes: NOT_SERVING while storage refuses them.

When the log cannot write (disk full, I/O error, a read-only file), every action is refused with
``UNAVAILABLE`` and the reason (``tables.py``); here the gRPC health of every service turns
``NOT_SERVING`` (so a load balancer sends players elsewhere), an error is logged and
``spades_log_writable`` drops to 0. The log probes its storage by itself; once a write works
again, health turns ``SERVING`` and the gauge 1, with no operator action.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import structlog
from grpc_health.v1 import _async as health_aio  # = health.aio, which mypy cannot see
from grpc_health.v1 import health_pb2

from spades_server.eventlog.base import EventLog
from spades_server.ops import metrics

log = structlog.get_logger(__name__)


class LogHealth:
    """Keeps the health servicer's status in step with the log's ``write_health``."""

    def __init__(
        self, event_log: EventLog, health: health_aio.HealthServicer, services: Sequence[str]
    ) -> None:
        self._health = health
        self._services = ("", *services)
        self._tasks: set[asyncio.Task[None]] = set()
        self.stopped = False
        metrics.LOG_WRITABLE.set(1)
        event_log.write_health.listeners.append(self._changed)

    def _changed(self, failure: str | None) -> None:
        if self.stopped:
            return  # shutting down: health is NOT_SERVING for good
        if failure is None:
            metrics.LOG_WRITABLE.set(1)
            log.warning("event log writable again; serving")
            status = health_pb2.HealthCheckResponse.SERVING
        else:
            metrics.LOG_WRITABLE.set(0)
            metrics.LOG_WRITE_FAILURES.inc()
            log.error("event log cannot be written; not serving until it can", reason=failure)
            status = health_pb2.HealthCheckResponse.NOT_SERVING
        task = asyncio.get_running_loop().create_task(self._set(status))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _set(self, status: health_pb2.HealthCheckResponse.ServingStatus.ValueType) -> None:
        for name in self._services:
            await self._health.set(name, status)
