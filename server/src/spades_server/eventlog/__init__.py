"""The event log: every table is one append-only stream of events, the service's truth.

``EventLog`` is the interface (``base``); ``SqliteEventLog`` the embedded backend (``sqlite``).
"""

from spades_server.eventlog.base import (
    AppendNotifier,
    EventLog,
    LogClosed,
    StoredEvent,
    VersionConflict,
)
from spades_server.eventlog.sqlite import Durability, SqliteEventLog

__all__ = [
    "AppendNotifier",
    "Durability",
    "EventLog",
    "LogClosed",
    "SqliteEventLog",
    "StoredEvent",
    "VersionConflict",
]
