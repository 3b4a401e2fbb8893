"""The server's Prometheus metrics (exported at /metrics by the metrics HTTP server)."""

from __future__ import annotations

import bisect
import functools
import math
import threading
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import Any

from prometheus_client import REGISTRY, Counter, Gauge, Histogram, start_http_server
from prometheus_client.core import HistogramMetricFamily
from prometheus_client.registry import Collector, CollectorRegistry

_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class LoopHistogram(Collector):
    """A histogram observed only on the event loop's thread: a count per bucket and a sum, with
    no lock per observation (prometheus_client's Histogram takes one per bucket and sum, on
    every action); the exporter's thread reads a copy when it is scraped. Exported as a
    Prometheus histogram like any other (``_bucket``, ``_count``, ``_sum``)."""

    def __init__(
        self,
        name: str,
        documentation: str,
        buckets: Sequence[float],
        registry: CollectorRegistry = REGISTRY,
    ) -> None:
        self._name = name
        self._documentation = documentation
        self._bounds = (*buckets, math.inf)
        self._counts = [0] * len(self._bounds)
        self._sum = 0.0
        registry.register(self)

    def observe(self, value: float) -> None:
        self._counts[bisect.bisect_left(self._bounds, value)] += 1
        self._sum += value

    def collect(self) -> Iterator[HistogramMetricFamily]:
        counts, total = list(self._counts), self._sum
        family = HistogramMetricFamily(self._name, self._documentation)
        cumulative = 0
        buckets = []
        for bound, count in zip(self._bounds, counts, strict=True):
            cumulative += count
            buckets.append((_bound_text(bound), cumulative))
        family.add_metric([], buckets, total)
        yield family

    def describe(self) -> Iterator[HistogramMetricFamily]:
        yield HistogramMetricFamily(self._name, self._documentation)


def _bound_text(bound: float) -> str:
    return "+Inf" if bound == math.inf else repr(float(bound))


TABLES = Gauge("spades_tables", "Tables known to this server, by status.", ["status"])
OPEN_STREAMS = Gauge("spades_open_streams", "Open streaming calls, by kind.", ["kind"])
ACTIONS = Counter(
    "spades_actions_total", "Actions received from seats, by type and result.", ["type", "result"]
)
ACTION_SECONDS = LoopHistogram(
    "spades_action_seconds",
    "Time from receiving an action to its result (decide, append, fold).",
    _LATENCY_BUCKETS,
)
APPEND_SECONDS = LoopHistogram(
    "spades_log_append_seconds",
    "Time to append to the event log (durable when it returns).",
    _LATENCY_BUCKETS,
)
#: ACTIONS' child of each (type, result): labels() takes a lock and builds the key on every
#: call, and every action counts once.
_ACTION_COUNTERS: dict[tuple[str, str], Counter] = {}


def count_action(kind: str, result: str) -> None:
    """Count one action of ``kind`` with ``result`` (accepted, repeated, refused) in ACTIONS."""
    counter = _ACTION_COUNTERS.get((kind, result))
    if counter is None:
        counter = _ACTION_COUNTERS[kind, result] = ACTIONS.labels(kind, result)
    counter.inc()


EVENTS_APPENDED = Counter("spades_events_appended_total", "Events appended to the event log.")
APPEND_CONFLICTS = Counter(
    "spades_append_conflicts_total",
    "Appends refused because another writer moved the table first (then retried).",
)
ERRORS = Counter("spades_errors_total", "Requests refused, by gRPC status code.", ["code"])
QUICK_MATCH_WAITING = Gauge(
    "spades_quick_match_waiting", "Players seated at quick-match tables that have not started."
)
SUBSTITUTIONS = Counter(
    "spades_substitutions_total",
    "House bots that took the seat of an absent player, by reason (timeouts, disconnected).",
    ["reason"],
)
LOG_WRITABLE = Gauge(
    "spades_log_writable", "1 while the event log accepts writes, 0 while storage refuses them."
)
LOG_WRITE_FAILURES = Counter(
    "spades_log_write_failures_total",
    "Times the event log started refusing writes (disk full, I/O error, read-only).",
)

ANALYSES = Counter(
    "spades_analyses_total",
    "Analyses of finished tables, by result: started (admitted to the worker pool), finished "
    "(computed and kept), stored (a kept one returned), refused (a live table, the queue "
    "full), failed, abandoned (every caller left before it finished).",
    ["result"],
)
ANALYSIS_QUEUE = Gauge(
    "spades_analysis_queue",
    "Analyses admitted and not finished: running in the worker pool or waiting for a worker.",
)
ANALYSIS_SECONDS = Histogram(
    "spades_analysis_seconds",
    "Wall time of one analysis, from its admission to its result kept.",
    buckets=(1, 5, 15, 60, 300, 900, 3600, 4 * 3600, 12 * 3600),
)


def serve(host: str, port: int, avoid: Collection[int] = ()) -> tuple[str, Callable[[], None]]:
    """Start the /metrics HTTP server on a daemon thread; returns its URL and a stop function.

    Port 0 picks a free port other than those in ``avoid``; the URL carries the bound one. The
    service's other ports are bound after this one, so the kernel could hand one of them out
    here (and the service then could not listen on its own port): a pick in ``avoid`` is kept
    bound while the kernel picks again, then let go.
    """
    refused: list[tuple[Any, threading.Thread]] = []
    try:
        while True:
            httpd, thread = start_http_server(port, addr=host)
            bound = httpd.server_address[1]
            if port != 0 or bound not in avoid:
                break
            refused.append((httpd, thread))
    finally:
        for unwanted, its_thread in refused:
            _stop(unwanted, its_thread)
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{bound}/metrics", functools.partial(_stop, httpd, thread)


def _stop(httpd: Any, thread: threading.Thread) -> None:
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=5)
