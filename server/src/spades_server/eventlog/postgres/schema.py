"""The PostgreSQL log's schema: its tables, their migrations, and the statements of the reads,
the claims and the projections (the writer's batch statement and the tracker's live with them).

Created or migrated on ``open`` inside one transaction under an advisory lock, so several
processes may open the log at once. ``schema=`` puts the tables in that schema (created if
missing); otherwise the connection's ``search_path`` decides (for example a DSN with
``options=-c search_path=spades``). NOTIFY channels are per schema. Every write must go through
:meth:`PostgresEventLog.append`: an insert that draws a position before taking its transaction
id would void the proof of the global order (see ``order``).
"""

from __future__ import annotations

SCHEMA_VERSION = 2

# Held (per transaction) while the schema is created or migrated: key = hash of this + schema.
_MIGRATION_LOCK = "spades_server.eventlog.postgres:migrate:"

_MIGRATIONS: dict[int, list[str]] = {
    1: [
        """
        CREATE TABLE events (
            position    bigint GENERATED ALWAYS AS IDENTITY (CACHE 1) PRIMARY KEY,
            stream_id   text             NOT NULL,
            version     integer          NOT NULL CHECK (version >= 1),
            recorded_at double precision NOT NULL,
            data        bytea            NOT NULL,
            UNIQUE (stream_id, version)
        )
        """,
    ],
    # Write-once keys beside each stream (the first result of each action id).
    2: [
        """
        CREATE TABLE claims (
            stream_id text  NOT NULL,
            key       text  NOT NULL,
            data      bytea NOT NULL,
            PRIMARY KEY (stream_id, key)
        )
        """,
    ],
}

#: What projections store (see ``ProjectionRow``): derived from the events, so these are created
#: when missing whatever the schema version, and dropping them loses nothing. Keys sort as
#: bytes (COLLATE "C"), as on SQLite, so both backends page in one order.
_PROJECTION_SCHEMA = [
    """
    CREATE TABLE IF NOT EXISTS projection_checkpoints (
        projection text PRIMARY KEY, position bigint NOT NULL, data bytea NOT NULL
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS projection_rows (
        projection text NOT NULL, key text COLLATE "C" NOT NULL, sort_key bigint NOT NULL,
        listed boolean NOT NULL, version integer NOT NULL, data bytea NOT NULL,
        PRIMARY KEY (projection, key)
    )
    """,
    "CREATE INDEX IF NOT EXISTS projection_rows_by_order"
    " ON projection_rows (projection, sort_key DESC, key DESC)",
    "CREATE INDEX IF NOT EXISTS projection_rows_listed_by_order"
    " ON projection_rows (projection, listed, sort_key DESC, key DESC)",
]
_PUT_ROW = """
INSERT INTO projection_rows AS r (projection, key, sort_key, listed, version, data)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (projection, key) DO UPDATE SET
    sort_key = excluded.sort_key, listed = excluded.listed, version = excluded.version,
    data = excluded.data
WHERE excluded.version >= r.version
"""
_DELETE_ROW = "DELETE FROM projection_rows WHERE projection = $1 AND key = $2 AND version = $3"
_PUT_CHECKPOINT = """
INSERT INTO projection_checkpoints AS c (projection, position, data) VALUES ($1, $2, $3)
ON CONFLICT (projection) DO UPDATE SET position = excluded.position, data = excluded.data
WHERE excluded.position >= c.position
"""
_GET_CHECKPOINT = "SELECT position, data FROM projection_checkpoints WHERE projection = $1"
_ROW_COLUMNS = "key, sort_key, listed, version, data"
_GET_ROW = f"SELECT {_ROW_COLUMNS} FROM projection_rows WHERE projection = $1 AND key = $2"
_LIST_ROWS = (
    f"SELECT {_ROW_COLUMNS} FROM projection_rows WHERE projection = $1 AND (listed OR NOT $2)"
    " AND NOT (key = ANY($5::text[])) ORDER BY sort_key DESC, key DESC LIMIT $3 OFFSET $4"
)

_STREAM_VERSION = "SELECT coalesce(max(version), 0) FROM events WHERE stream_id = $1"
# A concurrent claim of the same key waits for the first to commit, then inserts nothing.
_CLAIM = (
    "INSERT INTO claims (stream_id, key, data) VALUES ($1, $2, $3)"
    " ON CONFLICT (stream_id, key) DO NOTHING RETURNING true"
)
_READ_CLAIM = "SELECT data FROM claims WHERE stream_id = $1 AND key = $2"
_READ_STREAM = (
    "SELECT position, version, recorded_at, data FROM events"
    " WHERE stream_id = $1 AND version > $2 ORDER BY version LIMIT $3"
)
# The snapshot's xmin comes from the very snapshot that reads the rows (the statement's).
_READ_ALL = """
SELECT pg_snapshot_xmin(s)::text::bigint AS xmin,
       e.position, e.stream_id, e.version, e.recorded_at, e.data
FROM pg_current_snapshot() AS s
LEFT JOIN LATERAL (
    SELECT position, stream_id, version, recorded_at, data FROM events
    WHERE position > $1 ORDER BY position LIMIT $2
) AS e ON true
ORDER BY e.position
"""
# Takes a transaction id after the snapshot: a bound for the writers of the holes it sees.


def _quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
