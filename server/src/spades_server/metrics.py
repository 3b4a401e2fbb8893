"""The server's Prometheus metrics (exported at /metrics by the metrics HTTP server)."""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import Counter, Gauge, Histogram, start_http_server

_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)

TABLES = Gauge("spades_tables", "Tables known to this server, by status.", ["status"])
OPEN_STREAMS = Gauge("spades_open_streams", "Open streaming calls, by kind.", ["kind"])
ACTIONS = Counter(
    "spades_actions_total", "Actions received from seats, by type and result.", ["type", "result"]
)
ACTION_SECONDS = Histogram(
    "spades_action_seconds",
    "Time from receiving an action to its result (decide, append, fold).",
    buckets=_LATENCY_BUCKETS,
)
APPEND_SECONDS = Histogram(
    "spades_log_append_seconds",
    "Time to append to the event log (durable when it returns).",
    buckets=_LATENCY_BUCKETS,
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


def serve(host: str, port: int) -> tuple[str, Callable[[], None]]:
    """Start the /metrics HTTP server on a daemon thread; returns its URL and a stop function.

    Port 0 picks a free port; the URL carries the bound one.
    """
    httpd, thread = start_http_server(port, addr=host)
    bound = httpd.server_address[1]
    shown = f"[{host}]" if ":" in host else host

    def stop() -> None:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)

    return f"http://{shown}:{bound}/metrics", stop
