"""The server's settings as one value: what every part of the service is configured with.

Where they come from (flags, ``SPADES_*`` environment variables, defaults) is
:mod:`spades_server.app.config`'s."""

from __future__ import annotations

from dataclasses import dataclass, field

from spades_server.eventlog import Durability

#: Tables the store keeps in memory by default (besides the pinned ones).
DEFAULT_CACHE_SIZE = 512
#: Worlds sampled per decision by default in an analysis (spades.analysis.DEFAULT_WORLDS).
DEFAULT_ANALYSIS_WORLDS = 64


@dataclass(frozen=True)
class Settings:
    listen: str = "127.0.0.1:50051"
    database: str = "spades.db"
    durability: Durability = "normal"
    #: A PostgreSQL DSN selects the PostgreSQL event log (for several replicas) over the file.
    postgres_dsn: str = field(default="", repr=False)
    #: How PostgreSQL replicas tell each other of commits: "postgres" (LISTEN/NOTIFY) or a NATS
    #: server's URL (nats://host:port, core subjects; the log of record stays PostgreSQL).
    fanout: str = "postgres"
    metrics: str = "127.0.0.1:9464"
    #: The web port: gRPC-Web for browsers and the web client's files (web.py); "off" for none.
    web: str = "127.0.0.1:8080"
    log_format: str = "auto"
    log_level: str = "info"
    shutdown_grace: float = 5.0
    stream_write_timeout: float = 30.0
    # Limits (limits.py): 0 turns one off. Generous: a 64-table loopback benchmark, where
    # every client has the address 127.0.0.1, is not throttled.
    max_message_bytes: int = 64 * 1024
    seat_action_rate: float = 400.0
    connection_action_rate: float = 4000.0
    max_play_streams: int = 4
    tables_per_address: int = 600
    quick_match_per_address: int = 64
    # People (api/account_service.py): sign-in and sign-up attempts a minute per account and
    # per client address (token buckets, bursts of as many), and how long a session works.
    sign_ins_per_account: int = 10
    sign_ins_per_address: int = 30
    session_days: float = 30.0
    #: Seconds between two records of a session's use (its last address and time), per session.
    session_use_interval: float = 60.0
    # Administration (admin.py) and transport security.
    operator_token: str = field(default="", repr=False)
    tls_cert: str = ""
    tls_key: str = ""
    # House bots (house.py): 0 turns them off.
    house_bots: int = 64
    quick_match_fill_after: float = 30.0
    # The rated queue (house_accounts.py): a lone rated player gets house-bot accounts after
    # this many seconds (0: never); the leaderboards are one per pool or one per pool and kind.
    rated_fill_after: float = 60.0
    leaderboards: str = "shared"
    # Absent players (absent.py): a house bot takes a seat after this many timeouts in a row,
    # or after its player had no Play stream for this many seconds; 0 turns either off.
    substitute_after_timeouts: int = 2
    disconnect_grace: float = 60.0
    # A seat taken at a table that waits for players is freed again (SeatLeft) when its holder
    # opened no Play or Seat stream for this many seconds after taking it; 0: never.
    unclaimed_seat_timeout: float = 300.0
    # Accounts (accounts.py): who may create one, "open" (anyone) or "operator" (its token).
    registration: str = "open"
    # Tournaments (tournaments.py): who may organise one, "operator" (its token) or "accounts"
    # (any account too); how often the driver looks at every running tournament, in seconds.
    tournaments: str = "operator"
    tournament_poll: float = 1.0
    # Memory (tables.py): tables kept loaded besides those a stream or command holds.
    table_cache_size: int = DEFAULT_CACHE_SIZE
    # Analysis of finished tables (processes/analysis_workers.py): worker processes, analyses
    # admitted at once (running or waiting; one more is refused), the worlds per decision when a
    # request names none, and the most a request may ask for.
    analysis_workers: int = 1
    analysis_queue: int = 4
    analysis_worlds: int = DEFAULT_ANALYSIS_WORLDS
    analysis_max_worlds: int = DEFAULT_ANALYSIS_WORLDS
