"""Assembles the service: event log, table store, lobby projection, gRPC services, metrics."""

from __future__ import annotations

import asyncio
import errno
import gc
import shutil
import signal
import socket
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import structlog
from grpc_health.v1 import _async as health_aio  # = health.aio, which mypy cannot see
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from spades.v1 import (
    account_pb2,
    admin_pb2,
    analysis_pb2,
    challenge_pb2,
    lobby_pb2,
    play_pb2,
    presence_pb2,
    rating_pb2,
    tournament_pb2,
)
from spades_server.api import limits
from spades_server.api.account_service import AccountServicer
from spades_server.api.admin import AdminServicer
from spades_server.api.analysis_service import AnalysisServicer
from spades_server.api.auth import OperatorGate
from spades_server.api.challenge_service import ChallengeServicer
from spades_server.api.interceptors import RequestErrors
from spades_server.api.lobby import LobbyServicer
from spades_server.api.play import PlayServicer, Shutdown
from spades_server.api.presence_service import PresenceServicer
from spades_server.api.rating_service import RatingServicer
from spades_server.api.registration import register
from spades_server.api.tournament_service import TournamentServicer
from spades_server.api.web import Gateway
from spades_server.app import integrity
from spades_server.app.config import split_address
from spades_server.domain.accounts import decide_rating_change
from spades_server.domain.ratings import POOLS
from spades_server.eventlog import (
    EventLog,
    EventLogError,
    LogDamaged,
    LogUrlInvalid,
    log_from_url,
    log_url,
)
from spades_server.ops.clocks import SYSTEM_CLOCK, Clock
from spades_server.ops.log_health import LogHealth
from spades_server.ops.settings import Settings
from spades_server.processes import house_accounts
from spades_server.processes.absent import AbsentPlayers
from spades_server.processes.analysis_workers import AnalysisWorkers
from spades_server.processes.challenge_flow import Challenges, ChallengeSweeper
from spades_server.processes.clock import TurnClock
from spades_server.processes.house import HousePool, own_address
from spades_server.processes.presence import Presence
from spades_server.processes.projection import LobbyProjection
from spades_server.processes.rating_keeper import RatingKeeper
from spades_server.processes.tournament_driver import TournamentDriver
from spades_server.processes.unclaimed import UnclaimedSeats
from spades_server.store.account_store import AccountStore
from spades_server.store.challenge_store import ChallengeStore
from spades_server.store.rating_store import PoolStore
from spades_server.store.table_store import TableStore
from spades_server.store.tournament_store import TournamentStore

#: On start, the accounts of this many of each pool's latest rated matches are told again
#: (idempotent): a kill between a pool's append and the accounts' leaves none untold.
RECENT_MATCHES_TOLD = 20

#: The built web client (``make web``), served on the web port when present.
WEB_CLIENT = Path(__file__).resolve().parents[3] / "web" / "dist"

log = structlog.get_logger(__name__)
Context = grpc.aio.ServicerContext[Any, Any]

#: The services of spades.v1, each registered from its descriptor (api/registration).
LOBBY = lobby_pb2.DESCRIPTOR.services_by_name["LobbyService"]
PLAY = play_pb2.DESCRIPTOR.services_by_name["PlayService"]
ADMIN = admin_pb2.DESCRIPTOR.services_by_name["AdminService"]
ACCOUNT = account_pb2.DESCRIPTOR.services_by_name["AccountService"]
RATING = rating_pb2.DESCRIPTOR.services_by_name["RatingService"]
CHALLENGE = challenge_pb2.DESCRIPTOR.services_by_name["ChallengeService"]
TOURNAMENT = tournament_pb2.DESCRIPTOR.services_by_name["TournamentService"]
ANALYSIS = analysis_pb2.DESCRIPTOR.services_by_name["AnalysisService"]
PRESENCE = presence_pb2.DESCRIPTOR.services_by_name["PresenceService"]
SERVICE_NAMES = tuple(
    service.full_name
    for service in (
        LOBBY,
        PLAY,
        ADMIN,
        ACCOUNT,
        RATING,
        CHALLENGE,
        TOURNAMENT,
        ANALYSIS,
        PRESENCE,
    )
)


class StartupError(Exception):
    """Why the server cannot start, in one line an operator can act on (the CLI exits 2)."""


PORT_IN_USE = "the port is in use"
LISTEN_ADVICE = "another spades-server? choose another with --listen"


def port_problem(address: str) -> str | None:
    """Why ``address`` cannot be listened on now ("the port is in use", ...), or None; probed
    before gRPC, aiohttp or the metrics server try it: gRPC's own failure is a raw core log line
    and a RuntimeError, which say neither the address nor what to do."""
    host, port = split_address(address)
    if port == 0:
        return None
    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as error:
        return str(error.strerror)
    for family, kind, protocol, _, bound in addresses:
        with socket.socket(family, kind, protocol) as probe:
            # As the servers bind: SO_REUSEADDR, so a port in TIME_WAIT is not mistaken for busy.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(bound)
            except OSError as error:
                if error.errno == errno.EADDRINUSE:
                    return PORT_IN_USE
                return str(error.strerror)
    return None


def check_port_free(listen: str) -> None:
    """Refuse a gRPC address another process holds (StartupError naming it)."""
    problem = port_problem(listen)
    if problem is not None:
        advice = f" ({LISTEN_ADVICE})" if problem == PORT_IN_USE else ""
        raise StartupError(f"cannot listen on {listen}: {problem}{advice}")


def check_ports_free(settings: Settings) -> None:
    """Refuse every address of the settings' (gRPC, web, metrics) that cannot be listened on, all
    in one message: a second server on the same machine hears of all three at once, not one a
    restart."""
    ports = (
        (settings.listen, "cannot listen on", LISTEN_ADVICE),
        (settings.web, "cannot serve the web port on", "choose another with --web, or --web off"),
        (
            settings.metrics,
            "cannot serve metrics on",
            "choose another with --metrics, or --metrics off",
        ),
    )
    problems = []
    for address, what, advice in ports:
        if address == "off":
            continue
        problem = port_problem(address)
        if problem is not None:
            problems.append(f"{what} {address}: {problem} ({advice})")
    if problems:
        raise StartupError("; ".join(problems))


def server_credentials(settings: Settings) -> grpc.ServerCredentials | None:
    """TLS credentials from ``--tls-cert``/``--tls-key`` (PEM files); None to serve plaintext."""
    if not settings.tls_cert and not settings.tls_key:
        return None
    if not settings.tls_cert or not settings.tls_key:
        raise OSError("TLS needs both --tls-cert and --tls-key")
    pem = {}
    for what, path in (("--tls-cert", settings.tls_cert), ("--tls-key", settings.tls_key)):
        try:
            with open(path, "rb") as file:
                pem[what] = file.read()
        except OSError as error:
            raise OSError(f"cannot read {what} {path}: {error.strerror or error}") from None
    return grpc.ssl_server_credentials([(pem["--tls-key"], pem["--tls-cert"])])


def open_event_log(settings: Settings) -> EventLog:
    """The (unopened) log the settings name: the PostgreSQL DSN when one is set, else the
    embedded SQLite file (``eventlog.factory``)."""
    try:
        url = log_url(settings.database, settings.postgres_dsn)
        return log_from_url(url, durability=settings.durability, fanout=settings.fanout)
    except LogUrlInvalid as error:
        where = "PostgreSQL" if settings.postgres_dsn else settings.database
        raise StartupError(f"cannot open the event log {where}: {error}") from None


class SpadesServer:
    """One running server: start it, then stop it (gracefully) when done."""

    def __init__(
        self, settings: Settings, event_log: EventLog | None = None, clock: Clock | None = None
    ) -> None:
        self.settings = settings
        self.log = event_log or open_event_log(settings)
        #: The one clock every deadline, sweep, expiry and rate is read from (ops.clocks): the
        #: machine's, unless a test gives one it advances by hand; a given clock also dates
        #: the log's events, which the turn clock's and the sweepers' deadlines follow from,
        #: and paces the log's retries.
        self.time = SYSTEM_CLOCK if clock is None else clock
        if clock is not None:
            self.log.recorded_time = clock.now
            self.log.sleep = clock.sleep
        self.store = TableStore(self.log, settings.table_cache_size)
        self.projection = LobbyProjection(self.log, clock=self.time)
        self.projection.folded = self.store.folded_entry
        self.accounts = AccountStore(
            self.log, self.time, session_use_interval=settings.session_use_interval
        )
        self.pools = PoolStore(self.log)
        self.ratings = RatingKeeper(self.pools, self._announce_rating)
        self.store.listeners.append(self.ratings.table_changed)
        self.clock = TurnClock(self.store, self.time)
        self.challenges = Challenges(
            ChallengeStore(self.log), self.accounts, self.store, self.projection, self.time
        )
        self.challenge_sweeper = ChallengeSweeper(self.challenges)
        self.store.listeners.append(self.challenges.table_changed)
        #: The bots whose account stream is open here, kept in the log for every replica.
        self.presence = Presence(self.log, clock=self.time)
        # Every challenge made while it runs (here or on another replica) is known to the sweeper.
        self.projection.stream_listeners.append(self.challenges.store.observe)
        self.tournaments = TournamentStore(self.log)
        self.tournament_driver = TournamentDriver(
            self.tournaments,
            self.store,
            self.accounts,
            poll=settings.tournament_poll,
            clock=self.time,
        )
        self.store.listeners.append(self.tournament_driver.table_changed)
        if not self.log.sole_writer:
            # Other replicas append too. The tables this one serves follow their own streams
            # (TableStore: only those, not every table of the log); accounts and rating pools,
            # few and small, are folded as the lobby projection passes them.
            self.projection.stream_listeners.append(self.accounts.observe)
            self.projection.stream_listeners.append(self.pools.observe)
        self.shutdown = Shutdown()
        self.house_bots = HousePool(
            self.projection,
            capacity=settings.house_bots,
            fill_after=settings.quick_match_fill_after,
            rated_fill_after=settings.rated_fill_after,
            clock=self.time,
        )
        self.absent = AbsentPlayers(
            self.store,
            self.house_bots,
            after_timeouts=settings.substitute_after_timeouts,
            grace=settings.disconnect_grace,
            clock=self.time,
        )
        self.unclaimed = UnclaimedSeats(
            self.store, timeout=settings.unclaimed_seat_timeout, clock=self.time
        )
        self.analyses = AnalysisWorkers(
            self.log, workers=settings.analysis_workers, queue=settings.analysis_queue
        )
        # The asyncio servicer: the plain one's handlers are sync and fail on a grpc.aio server.
        self.health = health_aio.HealthServicer()
        self.log_health = LogHealth(self.log, self.health, SERVICE_NAMES)
        self.limits = limits.Limits(settings, self.time.monotonic)
        self.server = grpc.aio.server(
            interceptors=[
                RequestErrors(settings.stream_write_timeout, self.time),
                limits.Guard(self.limits),
            ],
            # No SO_REUSEPORT: a second server on a busy port must fail, not share the port.
            options=[
                *limits.server_options(settings),
                ("grpc.so_reuseport", 0),
                # The SDK pings idle streams every 30 s; accept that instead of answering
                # too_many_pings and dropping quiet players.
                ("grpc.http2.min_recv_ping_interval_without_data_ms", 10_000),
                ("grpc.keepalive_permit_without_calls", 1),
            ],
        )
        self.port = 0
        #: The web port's gateway (gRPC-Web, the web client), when ``settings.web`` is not off.
        self.web: Gateway | None = None
        self.web_port = 0
        self._web_socket_dir: str | None = None

    async def start(self) -> int:
        """Open the log, rebuild the lobby, start serving; returns the bound port."""
        began = time.perf_counter()
        credentials = server_credentials(self.settings)
        check_port_free(self.settings.listen)
        try:
            if credentials is None:
                self.port = self.server.add_insecure_port(self.settings.listen)
            else:
                self.port = self.server.add_secure_port(self.settings.listen, credentials)
        except RuntimeError as error:  # grpc's "Failed to bind to address ..."
            raise StartupError(f"cannot listen on {self.settings.listen}: {error}") from None
        if self.port == 0:
            raise StartupError(f"cannot listen on {self.settings.listen}")
        inside = ""
        if self.settings.web != "off" or credentials is not None:
            # The gateway and (on a TLS server) the house bots reach the services through a
            # socket only this process's user can open: calls that arrive on it may carry the
            # browser's address (web.peer_of).
            self._web_socket_dir = tempfile.mkdtemp(prefix="spades-web-")
            inside = f"unix:{self._web_socket_dir}/grpc.sock"
            self.server.add_insecure_port(inside)
        if self.settings.web != "off":
            self.web = Gateway(inside, WEB_CLIENT)
        try:
            # Opens the log and rebuilds the lobby, refusing a log that is not whole
            # (LogDamaged, which names the file and the fault).
            await integrity.open_checked(self.log, self.projection)
        except LogDamaged:
            raise  # it names the file and the fault itself
        except (OSError, RuntimeError, EventLogError) as error:
            # A folder it cannot write, a file that is not SQLite, a log another server holds,
            # a PostgreSQL it cannot reach or log in to, a malformed DSN.
            where = "PostgreSQL" if self.settings.postgres_dsn else self.settings.database
            raise StartupError(f"cannot open the event log {where}: {error}") from None
        await self.clock.start(self.projection.active_table_ids())
        # A rated match that ended just before a kill is rated now (exactly once: the pool's
        # stream says which tables it rated).
        rated = {
            table_id for name in POOLS for table_id in (await self.pools.load(name)).rated_tables
        }
        unrated = [t for t in self.projection.finished_rated_ids() if t not in rated]
        await self.ratings.settle([await self.store.load(table_id) for table_id in unrated])
        # And the accounts of the latest rated matches were told (a kill may have come between
        # the pool's append and theirs); telling is idempotent.
        for name in POOLS:
            for match in (await self.pools.load(name)).matches[-RECENT_MATCHES_TOLD:]:
                await self._announce_rating(match)
        lobby = LobbyServicer(
            self.store,
            self.projection,
            self.limits,
            self.house_bots,
            self.accounts,
            self.pools,
            self.time,
        )
        register(lobby, LOBBY, self.server)
        if self.house_bots.capacity > 0 and self.settings.rated_fill_after > 0:
            # The rated queue's house-bot accounts: made once, whichever replica needs them first.
            kinds = house_accounts.available_kinds(house_accounts.RATED_FILL_KINDS)
            self.house_bots.make_house_accounts = lambda: house_accounts.ensure(
                self.accounts, kinds
            )
            self.house_bots.seat_account = lobby.seat_house_account
        register(
            PlayServicer(
                self.store,
                self.shutdown,
                self.limits,
                self.absent,
                self.unclaimed,
                self.accounts,
            ),
            PLAY,
            self.server,
        )
        register(
            AdminServicer(self.store, self.projection, self.settings.operator_token),
            ADMIN,
            self.server,
        )
        register(
            AccountServicer(
                self.accounts,
                OperatorGate(self.settings.operator_token),
                self.settings.registration,
                self.shutdown.event,
                self.limits,
                self.presence,
            ),
            ACCOUNT,
            self.server,
        )
        register(PresenceServicer(self.presence, self.accounts, self.pools), PRESENCE, self.server)
        register(
            RatingServicer(self.pools, self.accounts, self.settings.leaderboards),
            RATING,
            self.server,
        )
        register(ChallengeServicer(self.challenges), CHALLENGE, self.server)
        register(
            TournamentServicer(
                self.tournaments,
                self.tournament_driver,
                self.accounts,
                self.store,
                OperatorGate(self.settings.operator_token),
                self.settings.tournaments,
                self.shutdown.event,
            ),
            TOURNAMENT,
            self.server,
        )
        register(
            AnalysisServicer(
                self.store,
                self.analyses,
                self.tournaments,
                default_worlds=self.settings.analysis_worlds,
                max_worlds=self.settings.analysis_max_worlds,
            ),
            ANALYSIS,
            self.server,
        )
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        reflection.enable_server_reflection(
            (*SERVICE_NAMES, health.SERVICE_NAME, reflection.SERVICE_NAME), self.server
        )
        for name in ("", *SERVICE_NAMES):
            await self.health.set(name, health_pb2.HealthCheckResponse.SERVING)
        await self.server.start()
        if self.web is not None:
            try:
                self.web_port = await self.web.start(self.settings.web)
            except OSError as error:
                await self.server.stop(None)
                where = self.settings.web
                raise StartupError(
                    f"cannot serve the web port on {where}: {error.strerror or error}"
                    " (choose another with --web, or --web off)"
                ) from None
        # A house bot is a client of this server: of its port, or over TLS (where it would need
        # a name the certificate holds, which the server cannot know) of the private socket.
        await self.house_bots.start(
            inside if credentials is not None else own_address(self.settings.listen, self.port)
        )
        if self.house_bots.capacity > 0:
            # Substitutes are house bots: without any, absent players are left to the clock.
            await self.absent.start()
        await self.unclaimed.start(self.projection.waiting_table_ids())
        await self.challenge_sweeper.start()
        await self.presence.start()
        # Every tournament that is not over goes on from its stream (after a kill too).
        await self.tournament_driver.start()
        host = self.settings.listen.rpartition(":")[0]
        log.info(
            "serving",
            address=f"{host}:{self.port}",
            database=self.settings.database,
            durability=self.settings.durability,
            tls=credentials is not None,
            admin=bool(self.settings.operator_token),
            web=self.web_url or "off",
            lobby_tables_in_memory=len(self.projection.tables),
            startup_seconds=round(time.perf_counter() - began, 3),
        )
        return self.port

    async def _announce_rating(self, match: rating_pb2.MatchRated) -> None:
        """Tell every entrant's account stream of a match this server rated (once each)."""
        for change in match.changes:
            await self.accounts.execute(
                change.account_id, lambda account: decide_rating_change(account, match)
            )

    @property
    def web_url(self) -> str:
        """The web port's address as a browser opens it, or "" when it is off."""
        if self.web is None or not self.web_port:
            return ""
        host = self.settings.web.rpartition(":")[0].strip("[]") or "127.0.0.1"
        host = "127.0.0.1" if host in ("0.0.0.0", "::") else host
        return f"http://{'[' + host + ']' if ':' in host else host}:{self.web_port}/"

    async def stop(self) -> None:
        """Stop taking calls, let in-flight commands finish, close streams with UNAVAILABLE."""
        self.log_health.stopped = True
        await self.health.enter_graceful_shutdown()
        await self.tournament_driver.stop()
        await self.absent.stop()
        await self.unclaimed.stop()
        await self.challenge_sweeper.stop()
        await self.house_bots.stop()
        self.shutdown.event.set()
        await self.presence.stop()
        self.store.wake_all()
        if self.web is not None:
            await self.web.stop()
        await self.server.stop(self.settings.shutdown_grace)
        await self.analyses.stop()
        if self._web_socket_dir is not None:
            shutil.rmtree(self._web_socket_dir, ignore_errors=True)
        await self.clock.stop()
        await self.ratings.stop()
        await self.projection.stop()
        await self.log.close()
        log.info("stopped")

    async def wait(self) -> None:
        await self.server.wait_for_termination()


#: The cyclic collector's first threshold in a serving process (CPython's default: 700).
COLLECT_AFTER = 10_000


def settle_collector() -> None:
    """Once the server is up: what start-up made (modules, descriptors, the lobby, the tables in
    play) leaves the cyclic collector's view for good (``gc.freeze``), and the youngest
    generation is collected after 10,000 net allocations instead of 700. Under play every
    action allocates hundreds of objects, almost all freed by reference counting; in a profile
    of bench-server (SQLite, 64 tables) the collector took 3-8% of the process's CPU, one full
    collection walking every start-up object about 90 ms (a pause every stream of the process
    waits through). Garbage cycles are still collected, only less often."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(COLLECT_AFTER, *gc.get_threshold()[1:])


async def serve(settings: Settings, ready: Callable[[SpadesServer], None] | None = None) -> None:
    """Serve until SIGTERM or SIGINT, then shut down gracefully.

    ``ready`` is called with the server once it accepts calls (it has ``port`` and
    ``web_url``). On the signal: health turns NOT_SERVING, new calls are refused, streams close
    with UNAVAILABLE (their clients reconnect and resume), in-flight calls get
    ``settings.shutdown_grace`` seconds, then the event log is closed (every acknowledged append
    is already committed).
    """
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    received: list[signal.Signals] = []

    def on_signal(signum: signal.Signals) -> None:
        received.append(signum)
        stopping.set()

    # Handlers go in before the port opens, so a signal is never lost to the default action.
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, on_signal, signum)
    server = SpadesServer(settings)
    try:
        await server.start()
        settle_collector()
        if ready is not None:
            ready(server)
        await stopping.wait()
        log.info(
            "shutting down",
            signal=received[0].name if received else None,
            grace_seconds=settings.shutdown_grace,
        )
        await server.stop()
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)
