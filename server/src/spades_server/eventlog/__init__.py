"""The event log: every table is one append-only stream of events, the service's truth.

``EventLog`` is the interface (``base``, with its value types in ``records``, its exceptions in
``errors`` and the subscriptions' notifier in ``notifier``); ``SqliteEventLog`` the embedded
backend (the ``sqlite`` package), ``PostgresEventLog`` the shared one for several server
replicas (the ``postgres`` package). Each backend owns its writer, its follower, its storage
check and its driver's errors; ``factory`` chooses one by URL (``sqlite:///PATH``,
``postgresql://...``), so nothing above this package names a backend or a driver.
"""

from spades_server.eventlog.base import (
    AppendNotifier,
    ClaimTaken,
    EventLog,
    EventLogError,
    LogClosed,
    LogDamaged,
    LogIncompatible,
    LogInUse,
    LogUnavailable,
    LogUnreachable,
    LogUrlInvalid,
    ProjectionCheckpoint,
    ProjectionRow,
    StoredEvent,
    VersionConflict,
    WriteHealth,
)
from spades_server.eventlog.factory import (
    backup_from_url,
    inspection_from_url,
    log_from_url,
    log_url,
)
from spades_server.eventlog.inspection import (
    Depth,
    LogInspection,
    StorageFinding,
    StorageScan,
    StreamSummary,
)
from spades_server.eventlog.postgres import PostgresEventLog
from spades_server.eventlog.sqlite import Durability, SqliteEventLog

__all__ = [
    "AppendNotifier",
    "ClaimTaken",
    "Depth",
    "Durability",
    "EventLog",
    "EventLogError",
    "LogClosed",
    "LogDamaged",
    "LogInUse",
    "LogIncompatible",
    "LogInspection",
    "LogUnavailable",
    "LogUnreachable",
    "LogUrlInvalid",
    "PostgresEventLog",
    "ProjectionCheckpoint",
    "ProjectionRow",
    "SqliteEventLog",
    "StorageFinding",
    "StorageScan",
    "StoredEvent",
    "StreamSummary",
    "VersionConflict",
    "WriteHealth",
    "backup_from_url",
    "inspection_from_url",
    "log_from_url",
    "log_url",
]
