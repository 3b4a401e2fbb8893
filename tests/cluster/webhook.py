"""An Alertmanager webhook receiver for the tests: a small HTTP server on 127.0.0.1 that keeps
every notification Alertmanager POSTs to it, and lets a test wait for one.

Alertmanager's webhook payload (version 4) carries ``alerts``, each with its ``status``
(``firing`` or ``resolved``), ``labels`` and ``annotations``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Alert = dict[str, Any]


class Notifications:
    """Every alert received, in arrival order (one notification may carry several)."""

    def __init__(self) -> None:
        self.alerts: list[Alert] = []
        self.changed = threading.Condition()

    def add(self, payload: dict[str, Any]) -> None:
        with self.changed:
            self.alerts.extend(payload.get("alerts", []))
            self.changed.notify_all()

    def count(self) -> int:
        with self.changed:
            return len(self.alerts)

    def wait_for(
        self, matches: Callable[[Alert], bool], timeout: float, what: str, since: int = 0
    ) -> Alert:
        """The first alert received after the first ``since`` (a :meth:`count`) that
        ``matches``, waiting at most ``timeout`` seconds for it."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                found = next((alert for alert in self.alerts[since:] if matches(alert)), None)
                if found is not None:
                    return found
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"no notification within {timeout:.0f} s: {what}; received {self.alerts}"
                    )
                self.changed.wait(left)


@contextmanager
def webhook_receiver() -> Iterator[tuple[str, Notifications]]:
    """The receiver's URL and what it received; it stops on exit."""
    notifications = Notifications()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            notifications.add(json.loads(self.rfile.read(length)))
            self.send_response(200)
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        yield f"http://{host!s}:{port}/alerts", notifications
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
