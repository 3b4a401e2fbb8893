"""The server's settings: command-line flags, each with an environment-variable equivalent.

A flag beats its environment variable, which beats the built-in default. Values from the
environment are checked like flags (a bad ``SPADES_LOG_FORMAT`` is an error, not ignored)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import NoReturn, cast

from spades_server.domain import tokens
from spades_server.eventlog import Durability
from spades_server.ops.settings import Settings

#: Every flag's environment variable (flag destination -> variable).
ENVIRONMENT = {
    "listen": "SPADES_LISTEN",
    "database": "SPADES_DATABASE",
    "postgres_dsn": "SPADES_POSTGRES_DSN",
    "fanout": "SPADES_FANOUT",
    "durability": "SPADES_DURABILITY",
    "metrics": "SPADES_METRICS",
    "web": "SPADES_WEB",
    "log_format": "SPADES_LOG_FORMAT",
    "log_level": "SPADES_LOG_LEVEL",
    "shutdown_grace": "SPADES_SHUTDOWN_GRACE",
    "stream_write_timeout": "SPADES_STREAM_WRITE_TIMEOUT",
    "max_message_bytes": "SPADES_MAX_MESSAGE_BYTES",
    "seat_action_rate": "SPADES_SEAT_ACTION_RATE",
    "connection_action_rate": "SPADES_CONNECTION_ACTION_RATE",
    "max_play_streams": "SPADES_MAX_PLAY_STREAMS",
    "tables_per_address": "SPADES_TABLES_PER_ADDRESS",
    "quick_match_per_address": "SPADES_QUICK_MATCH_PER_ADDRESS",
    "sign_ins_per_account": "SPADES_SIGN_INS_PER_ACCOUNT",
    "sign_ins_per_address": "SPADES_SIGN_INS_PER_ADDRESS",
    "session_days": "SPADES_SESSION_DAYS",
    "operator_token": "SPADES_OPERATOR_TOKEN",
    "tls_cert": "SPADES_TLS_CERT",
    "tls_key": "SPADES_TLS_KEY",
    "house_bots": "SPADES_HOUSE_BOTS",
    "quick_match_fill_after": "SPADES_QUICK_MATCH_FILL_AFTER",
    "rated_fill_after": "SPADES_RATED_FILL_AFTER",
    "leaderboards": "SPADES_LEADERBOARDS",
    "substitute_after_timeouts": "SPADES_SUBSTITUTE_AFTER_TIMEOUTS",
    "disconnect_grace": "SPADES_DISCONNECT_GRACE",
    "unclaimed_seat_timeout": "SPADES_UNCLAIMED_SEAT_TIMEOUT",
    "registration": "SPADES_REGISTRATION",
    "tournaments": "SPADES_TOURNAMENTS",
    "tournament_poll": "SPADES_TOURNAMENT_POLL",
    "table_cache_size": "SPADES_TABLE_CACHE_SIZE",
    "analysis_workers": "SPADES_ANALYSIS_WORKERS",
    "analysis_queue": "SPADES_ANALYSIS_QUEUE",
    "analysis_worlds": "SPADES_ANALYSIS_WORLDS",
    "analysis_max_worlds": "SPADES_ANALYSIS_MAX_WORLDS",
}


def parser(environ: Mapping[str, str] | None = None) -> argparse.ArgumentParser:
    environ = os.environ if environ is None else environ
    defaults = Settings()
    parse = argparse.ArgumentParser(
        prog="spades-server",
        description="The Spades table service: gRPC lobby, play and watch streams on an event log.",
        epilog="Every flag can also be set by its environment variable; a flag wins over it.",
    )

    def option(flag: str, help_text: str, **kwargs: object) -> None:
        dest = flag.removeprefix("--").replace("-", "_")
        env = ENVIRONMENT[dest]
        builtin = getattr(defaults, dest)
        parse.add_argument(
            flag,
            # The variable's value is converted by from_args, not by argparse: argparse
            # would blame the flag for a bad value no one typed.
            default=_FROM_ENVIRONMENT,
            help=f"{help_text} [env {env}; default: {builtin}]",
            **kwargs,  # type: ignore[arg-type]
        )

    option("--listen", "host:port to serve gRPC on (port 0: any free port)")
    option("--database", "SQLite event-log file (its folder is created if missing)")
    option(
        "--postgres-dsn",
        "PostgreSQL DSN: use a PostgreSQL event log instead of the file (several replicas "
        "may share it)",
    )
    option(
        "--fanout",
        "how replicas on one PostgreSQL hear of each other's commits: postgres (LISTEN/NOTIFY) "
        "or a NATS server, nats://host:port (core subjects; PostgreSQL stays the log)",
    )
    option(
        "--durability",
        "normal: a killed process loses nothing acknowledged; full: also survives power loss",
        choices=["normal", "full"],
    )
    option(
        "--metrics",
        "host:port for Prometheus /metrics (port 0: any free port; 'off' to disable)",
    )
    option(
        "--web",
        "host:port for the web port: gRPC-Web for browsers and the web client (port 0: any "
        "free port; 'off' to disable)",
    )
    option(
        "--log-format",
        "json (one object a line), console (pretty), or auto (console on a terminal)",
        choices=["auto", "json", "console"],
    )
    option(
        "--log-level", "least severe level logged", choices=["debug", "info", "warning", "error"]
    )
    option(
        "--shutdown-grace",
        "seconds in-flight calls get to finish on SIGTERM/SIGINT",
        type=float,
    )
    option(
        "--stream-write-timeout",
        "seconds a stream may wait for its client to read before it is closed",
        type=float,
    )
    # Limits: each refused with RESOURCE_EXHAUSTED; 0 turns one off (see limits.py).
    option(
        "--max-message-bytes",
        "largest message a client may send, in bytes (0: gRPC's own 4 MiB)",
        type=int,
    )
    option(
        "--seat-action-rate",
        "actions a second one seat may send (bursts of twice as many)",
        type=float,
    )
    option(
        "--connection-action-rate",
        "actions a second one connection may send, all its seats together (bursts of 2x)",
        type=float,
    )
    option(
        "--max-play-streams",
        "Play/Seat calls one seat token may have open at once: newest wins (each replaces the "
        "one before), this bounds replaced ones still closing",
        type=int,
    )
    option(
        "--tables-per-address",
        "tables one client address may create a minute (loopback clients share one address)",
        type=int,
    )
    option(
        "--quick-match-per-address",
        "players one client address may have waiting in the quick-match queue",
        type=int,
    )
    option(
        "--sign-ins-per-account",
        "sign-in attempts a minute for one account (bursts of as many; 0: no limit)",
        type=int,
    )
    option(
        "--sign-ins-per-address",
        "sign-in and sign-up attempts a minute from one client address (0: no limit)",
        type=int,
    )
    option(
        "--session-days",
        "days a person's session works after signing in (a fraction is fine)",
        type=float,
    )
    option(
        "--operator-token",
        "secret for AdminService calls (metadata spades-operator-token); empty: admin is off."
        " Prefer the environment variable: a flag shows in the process list",
    )
    option("--tls-cert", "PEM certificate chain file: serve TLS (needs --tls-key)")
    option("--tls-key", "PEM private key file of --tls-cert")
    option(
        "--house-bots",
        "house bots this server may run at once (AddHouseBot, quick-match filling); 0: none",
        type=int,
    )
    option(
        "--quick-match-fill-after",
        "seconds a quick-match player waits before house bots complete the table; 0: never",
        type=float,
    )
    option(
        "--rated-fill-after",
        "seconds a rated quick-match player waits before the house-bot accounts (House "
        "Heuristic, House Search) complete the table; 0: never",
        type=float,
    )
    option(
        "--leaderboards",
        "shared: bots and people on one board per pool; separate: a board each "
        "(ListLeaderboard then needs a kind)",
        choices=["shared", "separate"],
    )
    option(
        "--substitute-after-timeouts",
        "turns of a seat timed out in a row before a house bot plays it (until its player "
        "reconnects); 0: never",
        type=int,
    )
    option(
        "--disconnect-grace",
        "seconds a seat's player may have no Play stream open during the match before a house "
        "bot plays it (until the player reconnects); 0: never",
        type=float,
    )
    option(
        "--unclaimed-seat-timeout",
        "seconds a seat taken at a waiting table stays taken while its holder opens no Play "
        "stream; then it is free again; 0: never",
        type=float,
    )
    option(
        "--registration",
        "who may create accounts: open (anyone) or operator (only with the operator token)",
        choices=["open", "operator"],
    )
    option(
        "--tournaments",
        "who may create tournaments: operator (only with the operator token) or accounts "
        "(any account too)",
        choices=["operator", "accounts"],
    )
    option(
        "--tournament-poll",
        "seconds between the tournament driver's looks at every running tournament (it also "
        "moves on at once when a board ends at a table this server serves)",
        type=float,
    )
    option(
        "--table-cache-size",
        "tables kept in memory, the most recently used (besides those with an open stream);"
        " the others are loaded from the log when needed",
        type=int,
    )
    option(
        "--analysis-workers",
        "worker processes that analyse finished tables (AnalysisService)",
        type=int,
    )
    option(
        "--analysis-queue",
        "analyses admitted at once, running or waiting for a worker; one more is refused "
        "(RESOURCE_EXHAUSTED)",
        type=int,
    )
    option(
        "--analysis-worlds",
        "worlds sampled per decision when an analysis request names none (0: double dummy only)",
        type=int,
    )
    option(
        "--analysis-max-worlds",
        "the most worlds per decision an analysis request may ask for",
        type=int,
    )
    return parse


def from_args(argv: list[str] | None = None, environ: Mapping[str, str] | None = None) -> Settings:
    environ = os.environ if environ is None else environ
    parse = parser(environ)
    args = parse.parse_args(argv)
    _fill_from_environment(args, parse, environ)
    # argparse checks `choices` only for values given on the command line: check the
    # environment's too.
    for action in parse._actions:
        value = getattr(args, action.dest, None)
        if action.choices is not None and value not in action.choices:
            env = ENVIRONMENT.get(action.dest, "")
            refuse(parse, f"{env}={value!r} is not one of {', '.join(map(str, action.choices))}")
    if args.metrics != "off":
        split_address(args.metrics, parse, "--metrics/SPADES_METRICS")
    if args.web != "off":
        split_address(args.web, parse, "--web/SPADES_WEB")
    split_address(args.listen, parse, "--listen/SPADES_LISTEN")
    if args.fanout != "postgres" and not args.fanout.startswith(("nats://", "tls://")):
        refuse(
            parse,
            f"--fanout/SPADES_FANOUT {args.fanout!r} is neither postgres nor a NATS URL "
            "(nats://host:port)",
        )
    if args.shutdown_grace < 0:
        refuse(parse, "--shutdown-grace/SPADES_SHUTDOWN_GRACE must not be negative")
    for dest in (
        "max_message_bytes",
        "seat_action_rate",
        "connection_action_rate",
        "max_play_streams",
        "tables_per_address",
        "quick_match_per_address",
        "sign_ins_per_account",
        "sign_ins_per_address",
        "house_bots",
        "quick_match_fill_after",
        "rated_fill_after",
        "substitute_after_timeouts",
        "disconnect_grace",
        "unclaimed_seat_timeout",
        "table_cache_size",
        "analysis_worlds",
        "analysis_max_worlds",
    ):
        if getattr(args, dest) < 0:
            flag = "--" + dest.replace("_", "-")
            refuse(parse, f"{flag}/{ENVIRONMENT[dest]} must not be negative (0 turns it off)")
    for dest in ("analysis_workers", "analysis_queue"):
        if getattr(args, dest) < 1:
            flag = "--" + dest.replace("_", "-")
            refuse(parse, f"{flag}/{ENVIRONMENT[dest]} must be at least 1")
    if args.analysis_worlds > args.analysis_max_worlds:
        refuse(
            parse,
            "--analysis-worlds/SPADES_ANALYSIS_WORLDS must not be above "
            "--analysis-max-worlds/SPADES_ANALYSIS_MAX_WORLDS",
        )
    if not args.session_days > 0:
        refuse(parse, "--session-days/SPADES_SESSION_DAYS must be more than 0")
    refusal = tokens.operator_token_refusal(args.operator_token)
    if refusal is not None:
        refuse(parse, f"--operator-token/SPADES_OPERATOR_TOKEN: {refusal}")
    if args.registration == "operator" and not args.operator_token:
        refuse(
            parse,
            "--registration/SPADES_REGISTRATION operator needs --operator-token "
            "(SPADES_OPERATOR_TOKEN): no one else may create accounts",
        )
    if bool(args.tls_cert) != bool(args.tls_key):
        refuse(parse, "--tls-cert/SPADES_TLS_CERT and --tls-key/SPADES_TLS_KEY go together")
    return Settings(
        listen=args.listen,
        database=args.database,
        postgres_dsn=args.postgres_dsn,
        fanout=args.fanout,
        durability=cast(Durability, args.durability),
        metrics=args.metrics,
        web=args.web,
        log_format=args.log_format,
        log_level=args.log_level,
        shutdown_grace=float(args.shutdown_grace),
        stream_write_timeout=float(args.stream_write_timeout),
        max_message_bytes=int(args.max_message_bytes),
        seat_action_rate=float(args.seat_action_rate),
        connection_action_rate=float(args.connection_action_rate),
        max_play_streams=int(args.max_play_streams),
        tables_per_address=int(args.tables_per_address),
        quick_match_per_address=int(args.quick_match_per_address),
        sign_ins_per_account=int(args.sign_ins_per_account),
        sign_ins_per_address=int(args.sign_ins_per_address),
        session_days=float(args.session_days),
        operator_token=args.operator_token,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        house_bots=int(args.house_bots),
        quick_match_fill_after=float(args.quick_match_fill_after),
        rated_fill_after=float(args.rated_fill_after),
        leaderboards=args.leaderboards,
        substitute_after_timeouts=int(args.substitute_after_timeouts),
        disconnect_grace=float(args.disconnect_grace),
        unclaimed_seat_timeout=float(args.unclaimed_seat_timeout),
        registration=args.registration,
        tournaments=args.tournaments,
        tournament_poll=float(args.tournament_poll),
        table_cache_size=int(args.table_cache_size),
        analysis_workers=int(args.analysis_workers),
        analysis_queue=int(args.analysis_queue),
        analysis_worlds=int(args.analysis_worlds),
        analysis_max_worlds=int(args.analysis_max_worlds),
    )


#: The default of every flag: replaced by its variable's value, or the built-in default.
_FROM_ENVIRONMENT = object()


def _fill_from_environment(
    args: argparse.Namespace, parse: argparse.ArgumentParser, environ: Mapping[str, str]
) -> None:
    """Set each flag not given from its variable (converted like the flag) or the default."""
    defaults = Settings()
    for action in parse._actions:
        if getattr(args, action.dest, None) is not _FROM_ENVIRONMENT:
            continue
        env = ENVIRONMENT[action.dest]
        raw = environ.get(env)
        if raw is None:
            setattr(args, action.dest, getattr(defaults, action.dest))
            continue
        convert = action.type if callable(action.type) else str
        try:
            value = convert(raw)
        except ValueError:
            kind = "a whole number" if convert is int else "a number"
            refuse(parse, f"{env}={raw!r} is not {kind}")
        setattr(args, action.dest, value)


def refuse(parse: argparse.ArgumentParser, message: str) -> NoReturn:
    """Exit 2 with one line: a bad value is not a usage mistake, so no usage text."""
    parse.exit(2, f"{parse.prog}: error: {message}\n")


def split_address(
    address: str, parse: argparse.ArgumentParser | None = None, what: str = "address"
) -> tuple[str, int]:
    """``host:port`` (``[v6]:port`` too) as ``(host, port)``; an empty host is 127.0.0.1."""
    host, colon, port = address.rpartition(":")
    if not colon or not port.isdigit() or int(port) > 65535:
        message = f"{what} must be host:port, not {address!r}"
        if parse is not None:
            refuse(parse, message)
        raise ValueError(message)
    return host.removeprefix("[").removesuffix("]") or "127.0.0.1", int(port)
