"""The event log: every table is one append-only stream of events, the service's truth.

``EventLog`` is the interface (``base``); ``SqliteEventLog`` the embedded backend (``sqlite``),
``PostgresEventLog`` the shared one for several server replicas (``postgres``).
"""

from spades_server.eventlog.base import (
    AppendNotifier,
    EventLog,
    LogClosed,
    LogDamaged,
    LogUnavailable,
    ProjectionCheckpoint,
    ProjectionRow,
    StoredEvent,
    VersionConflict,
    WriteHealth,
)
from spades_server.eventlog.postgres import PostgresEventLog
from spades_server.eventlog.sqlite import Durability, SqliteEventLog

__all__ = [
    "AppendNotifier",
    "Durability",
    "EventLog",
    "LogClosed",
    "LogDamaged",
    "LogUnavailable",
    "PostgresEventLog",
    "ProjectionCheckpoint",
    "ProjectionRow",
    "SqliteEventLog",
    "StoredEvent",
    "VersionConflict",
    "WriteHealth",
]
