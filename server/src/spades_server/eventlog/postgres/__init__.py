"""The event log on PostgreSQL: several server replicas share one log and see each other's events.

Why it is built the way it is, module by module (each opens with its own reasons and figures):

- ``log``: :class:`PostgresEventLog`, the class the server holds: open, close, append, read;
- ``core``: the driver (asyncpg, and why), the state the parts share, the pooled queries;
- ``writer``: one task storing the appends of many streams in one statement, and why that
  shape (the event loop's time per append, measured);
- ``order``: why ``position > last`` is not enough across replicas, and the proof by
  transaction ids that lets ``read_all`` and ``subscribe_all`` serve only a final prefix;
- ``fanout``: LISTEN/NOTIFY out of the insert, or a core NATS subject, to wake other replicas;
- ``schema``: the tables, their migrations under an advisory lock, the statements.

PostgreSQL guards its own storage (checksums, WAL, replication), so this backend offers no
storage check of its own: see :meth:`PostgresEventLog.inspection`.
"""

from spades_server.eventlog.postgres.core import NATS_SCHEMES
from spades_server.eventlog.postgres.log import PostgresEventLog
from spades_server.eventlog.postgres.schema import SCHEMA_VERSION

__all__ = ["NATS_SCHEMES", "SCHEMA_VERSION", "PostgresEventLog"]
