"""Duplicate tournaments as event-sourced aggregates, and the driver that runs them.

Each tournament is one stream of the event log, ``tournament-<id>``, of
``spades.server.v1.TournamentLogEntry`` rows: the public ``spades.v1.TournamentEvent`` and,
beside the TournamentCreated, the secret seed every deal is derived from
(:mod:`spades.records.tournament`). Every event is appended with the stream's expected version,
so two replicas never pair a round twice, never score a board twice: the loser of a race finds
the stream moved, reloads, and decides again (finding nothing left to do). The stream
``tournament-index`` lists every tournament once (for ListTournaments and for the driver's
start).

The driver (:class:`TournamentDriver`) advances a tournament whenever one of its tables changes
on this replica, and every ``poll`` seconds for all of them (another replica's tables, a start
time, a server that was killed): it starts a tournament once its entrants are in, pairs rounds,
opens each pairing's two tables (ids derived from the tournament, the round, the pairing and the
leg, so a second replica's or a restarted server's attempt finds the table there), seats the
entrants' accounts, tells their account streams (TableAssigned), scores every board both tables
have played, scores the match once both ended, and ends the tournament (revealing the seed).
Everything it does is idempotent, so on start a server simply advances every tournament that is
not over.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import grpc
import structlog

from spades import protocol
from spades.engine import Rules, new_match
from spades.engine import events as ev
from spades.engine.shuffle import SHUFFLE_VERSION, commitment
from spades.reasons import Reason
from spades.records import tournament as rules_of_play
from spades.v1 import account_pb2, cards_pb2, tournament_pb2
from spades_server import accounts, errors, ratings, streams, tokens
from spades_server.accounts import AccountStore
from spades_server.checks import rules_of
from spades_server.decisions import decide_join, decide_new_table
from spades_server.eventlog.base import EventLog, LogUnavailable, StoredEvent, VersionConflict
from spades_server.tables import Table, TableStore, timestamp
from spades_server.v1 import log_pb2

log = structlog.get_logger(__name__)

STREAM_PREFIX = streams.TOURNAMENT_PREFIX
INDEX_STREAM = STREAM_PREFIX + "index"
ENVELOPE_MARKER = b"\x00"
MAX_DECIDE_ATTEMPTS = 20
MAX_TOURNAMENT_NAME = 64
MAX_BOARDS = 13
MIN_ENTRANTS = 2
MAX_ENTRANTS = 16
#: Who may create tournaments (``--tournaments``): the operator only, or any account too.
ORGANISER_CHOICES = ("operator", "accounts")

Status = tournament_pb2.TournamentStatus
ENTERING = tournament_pb2.TOURNAMENT_STATUS_ENTERING
RUNNING = tournament_pb2.TOURNAMENT_STATUS_RUNNING
FINISHED = tournament_pb2.TOURNAMENT_STATUS_FINISHED


def stream_of(tournament_id: str) -> str:
    return STREAM_PREFIX + tournament_id


def table_id_for(tournament_id: str, round_number: int, pairing: int, leg: int) -> str:
    """The id of a pairing's table: derived, so that every replica opens the same one."""
    text = f"spades-tournament-table/{tournament_id}/{round_number}/{pairing}/{leg}"
    return hashlib.sha256(text.encode()).hexdigest()[:20]


# ---------------------------------------------------------------------------------- journal


@dataclass(frozen=True)
class TournamentEntry:
    sequence: int
    position: int
    recorded_at: float
    message: tournament_pb2.TournamentEvent
    seed: bytes = b""
    request_id_sha256: bytes = b""


def encode(
    event: tournament_pb2.TournamentEvent, seed: bytes = b"", request_digest: bytes = b""
) -> bytes:
    row = log_pb2.TournamentLogEntry(event=event, seed=seed, request_id_sha256=request_digest)
    return ENVELOPE_MARKER + row.SerializeToString()


def decode_row(data: bytes) -> log_pb2.TournamentLogEntry:
    """A tournament or index row (ValueError when it is not one)."""
    if not data.startswith(ENVELOPE_MARKER):
        raise ValueError("a tournament row starts with the envelope marker")
    return log_pb2.TournamentLogEntry.FromString(data[len(ENVELOPE_MARKER) :])


def decode(stored: StoredEvent) -> TournamentEntry:
    row = decode_row(stored.data)
    message = row.event
    message.sequence = stored.version
    message.time.FromNanoseconds(int(stored.recorded_at * 1e9))
    return TournamentEntry(
        stored.version,
        stored.position,
        stored.recorded_at,
        message,
        row.seed,
        row.request_id_sha256,
    )


# ---------------------------------------------------------------------------------- aggregate


@dataclass
class Tournament:
    tournament_id: str
    version: int = 0
    settings: tournament_pb2.TournamentSettings = field(
        default_factory=tournament_pb2.TournamentSettings
    )
    organiser: str = ""
    seed_commitment: bytes = b""
    seed: bytes = b""
    created_by_request: bytes = b""
    created_at: float = 0.0
    status: Status.ValueType = ENTERING
    entrants: list[tournament_pb2.Entrant] = field(default_factory=list)
    rounds: int = 0
    paired: list[tournament_pb2.RoundPairings] = field(default_factory=list)
    boards_scored: set[tuple[int, int, int]] = field(default_factory=set)
    matches_scored: set[tuple[int, int]] = field(default_factory=set)
    revealed: bytes = b""
    entries: list[TournamentEntry] = field(default_factory=list)

    def fold(self, entry: TournamentEntry) -> None:
        if entry.sequence <= self.version:
            return
        message = entry.message
        match message.WhichOneof("kind"):
            case "created":
                self.settings = message.created.settings
                self.organiser = message.created.organiser_account_id
                self.seed_commitment = message.created.seed_commitment
                self.seed = entry.seed
                self.created_by_request = entry.request_id_sha256
                self.created_at = entry.recorded_at
            case "entered":
                self.entrants.append(message.entered)
            case "withdrew":
                gone = message.withdrew.account_id
                self.entrants = [e for e in self.entrants if e.account_id != gone]
            case "started":
                self.status = RUNNING
                self.rounds = message.started.rounds
                del self.entrants[:]
                self.entrants.extend(message.started.entrants)
            case "round_paired":
                self.paired.append(message.round_paired)
            case "board_scored":
                b = message.board_scored
                self.boards_scored.add((b.round, b.pairing, b.board))
            case "match_scored":
                self.matches_scored.add((message.match_scored.round, message.match_scored.pairing))
            case "ended":
                self.status = FINISHED
                self.revealed = message.ended.seed
        self.entries.append(entry)
        self.version = entry.sequence

    @property
    def events(self) -> list[tournament_pb2.TournamentEvent]:
        return [entry.message for entry in self.entries]

    @property
    def rules(self) -> Rules:
        return protocol.rules_from_proto(self.settings.rules)

    def entrant(self, account_id: str) -> tournament_pb2.Entrant | None:
        return next((e for e in self.entrants if e.account_id == account_id), None)

    def standings(self) -> tournament_pb2.Standings:
        return rules_of_play.standings(self.events)

    def to_proto(self, *, detail: bool = True) -> tournament_pb2.Tournament:
        message = tournament_pb2.Tournament(
            tournament_id=self.tournament_id,
            settings=self.settings,
            status=self.status,
            organiser_account_id=self.organiser,
            entrants=self.entrants,
            round=len(self.paired),
            rounds=self.rounds,
            seed_commitment=self.seed_commitment,
            seed=self.revealed,
            create_time=timestamp(self.created_at),
            sequence=self.version,
        )
        standings = self.standings()
        if detail:
            message.pairings.extend(self.paired)
        else:
            del standings.crosstable[:]
        message.standings.CopyFrom(standings)
        return message


def tournament_not_found(tournament_id: str) -> errors.RequestError:
    return errors.refuse(
        Reason.TOURNAMENT_NOT_FOUND,
        f"there is no tournament {tournament_id!r}",
    )


# ---------------------------------------------------------------------------------- decisions

Decided = list[tuple[tournament_pb2.TournamentEvent, bytes, bytes]]
TournamentDecision = Callable[[Tournament], Decided | None]


def check_settings(
    settings: tournament_pb2.TournamentSettings,
) -> tournament_pb2.TournamentSettings:
    """The settings as the tournament keeps them (rules with max_hands = boards), or
    INVALID_ARGUMENT (INVALID_TOURNAMENT_SETTINGS) naming the field."""

    def bad(why: str, where: str) -> errors.RequestError:
        return errors.refuse(Reason.INVALID_TOURNAMENT_SETTINGS, why, field=f"settings.{where}")

    name = settings.name.strip()
    if not name:
        raise errors.refuse(Reason.MISSING_FIELD, "the tournament name is required", field="name")
    if len(name) > MAX_TOURNAMENT_NAME or not name.isprintable():
        raise bad(f"the name must be 1..{MAX_TOURNAMENT_NAME} printable characters", "name")
    if settings.format not in (
        tournament_pb2.TOURNAMENT_FORMAT_ROUND_ROBIN,
        tournament_pb2.TOURNAMENT_FORMAT_SWISS,
    ):
        raise bad(
            "choose a format: TOURNAMENT_FORMAT_ROUND_ROBIN or TOURNAMENT_FORMAT_SWISS", "format"
        )
    if settings.format == tournament_pb2.TOURNAMENT_FORMAT_SWISS and not (
        1 <= settings.rounds <= MAX_ENTRANTS - 1
    ):
        raise bad(f"a Swiss plays 1..{MAX_ENTRANTS - 1} rounds", "rounds")
    if not 1 <= settings.boards <= MAX_BOARDS:
        raise bad(f"boards per round must be 1..{MAX_BOARDS}", "boards")
    start_when = settings.start_when_entrants
    if start_when and not MIN_ENTRANTS <= start_when <= MAX_ENTRANTS:
        raise bad(
            f"start_when_entrants must be {MIN_ENTRANTS}..{MAX_ENTRANTS} (0: by time)",
            "start_when_entrants",
        )
    if not start_when and not settings.HasField("start_time"):
        raise bad(
            "say when to start: start_when_entrants, start_time or both", "start_when_entrants"
        )
    rules = dataclasses.replace(rules_of(settings.rules), max_hands=settings.boards)
    if rules.players != 4:
        raise bad("a duplicate tournament plays four-player partnership tables", "rules.players")
    if settings.rated and ratings.pool_of(rules) is None:
        raise errors.refuse(
            Reason.RULES_NOT_RATED,
            "these rules belong to no rating pool, so the tournament cannot be rated",
        )
    kept = tournament_pb2.TournamentSettings()
    kept.CopyFrom(settings)
    kept.name = name
    kept.rules.CopyFrom(protocol.rules_to_proto(rules))
    return kept


def decide_creation(
    settings: tournament_pb2.TournamentSettings, organiser: str, seed: bytes, request_digest: bytes
) -> Decided:
    created = tournament_pb2.TournamentCreated(
        settings=settings,
        organiser_account_id=organiser,
        seed_commitment=commitment(seed),
        shuffle_version=f"{SHUFFLE_VERSION}+{rules_of_play.DERIVATION}",
    )
    return [(tournament_pb2.TournamentEvent(created=created), seed, request_digest)]


def _not_started(tournament: Tournament, doing: str) -> None:
    if tournament.status != ENTERING:
        raise errors.refuse(
            Reason.TOURNAMENT_STARTED, f"this tournament has already started, so you cannot {doing}"
        )


def decide_entry(tournament: Tournament, account: accounts.Account) -> Decided:
    _not_started(tournament, "enter it")
    if tournament.entrant(account.account_id) is not None:
        raise errors.refuse(Reason.ALREADY_ENTERED, "this account has entered this tournament")
    if len(tournament.entrants) >= MAX_ENTRANTS:
        raise errors.refuse(
            Reason.TOURNAMENT_FULL, f"this tournament has its {MAX_ENTRANTS} entrants"
        )
    entrant = tournament_pb2.Entrant(account_id=account.account_id, name=account.name)
    return [(tournament_pb2.TournamentEvent(entered=entrant), b"", b"")]


def decide_withdrawal(tournament: Tournament, account_id: str) -> Decided:
    _not_started(tournament, "withdraw")
    entrant = tournament.entrant(account_id)
    if entrant is None:
        raise errors.refuse(Reason.NOT_ENTERED, "this account has not entered this tournament")
    return [(tournament_pb2.TournamentEvent(withdrew=entrant), b"", b"")]


def _pair(
    tournament: Tournament,
    round_number: int,
    events: list[tournament_pb2.TournamentEvent] | None = None,
) -> tournament_pb2.TournamentEvent:
    ids = [e.account_id for e in tournament.entrants]
    so_far = tournament.events if events is None else events
    pairs = rules_of_play.pair_round(tournament.settings.format, ids, round_number, so_far)
    paired = tournament_pb2.RoundPairings(round=round_number)
    for index, (home, away) in enumerate(pairs):
        tables = (
            [table_id_for(tournament.tournament_id, round_number, index, leg) for leg in (0, 1)]
            if away
            else []
        )
        paired.pairings.append(
            tournament_pb2.Pairing(
                index=index, home_account_id=home, away_account_id=away, table_ids=tables
            )
        )
    return tournament_pb2.TournamentEvent(round_paired=paired)


def should_start(tournament: Tournament, now: float) -> bool:
    settings = tournament.settings
    count = len(tournament.entrants)
    if settings.start_when_entrants and count >= settings.start_when_entrants:
        return True
    return (
        settings.HasField("start_time")
        and now >= settings.start_time.ToNanoseconds() / 1e9
        and count >= MIN_ENTRANTS
    )


def decide_progress(tournament: Tournament, tables: dict[str, Table], now: float) -> Decided | None:
    """What the tournament's tables (and the clock) call for next, or None."""
    if tournament.status == FINISHED:
        return None
    if tournament.status == ENTERING:
        if not should_start(tournament, now):
            return None
        count = len(tournament.entrants)
        if tournament.settings.format == tournament_pb2.TOURNAMENT_FORMAT_SWISS:
            rounds = rules_of_play.swiss_rounds(count, tournament.settings.rounds)
        else:
            rounds = len(rules_of_play.rounds_for([e.account_id for e in tournament.entrants]))
        started = tournament_pb2.TournamentStarted(entrants=tournament.entrants, rounds=rounds)
        return [
            (tournament_pb2.TournamentEvent(started=started), b"", b""),
            (_pair(tournament, 1), b"", b""),
        ]
    events: Decided = []
    current = tournament.paired[-1]
    round_over = True
    for pairing in current.pairings:
        if not pairing.away_account_id:
            continue
        legs = [tables[t] for t in pairing.table_ids if t in tables]
        if len(legs) != 2:
            round_over = False
            continue
        score = rules_of_play.score_pairing(
            current.round, pairing.index, legs[0].events, legs[1].events
        )
        for board in score.boards:
            if (board.round, board.pairing, board.board) not in tournament.boards_scored:
                events.append((tournament_pb2.TournamentEvent(board_scored=board), b"", b""))
        if score.match is None:
            round_over = False
        elif (current.round, pairing.index) not in tournament.matches_scored:
            events.append((tournament_pb2.TournamentEvent(match_scored=score.match), b"", b""))
    if round_over:
        so_far = [*tournament.events, *(event for event, _, _ in events)]
        if current.round < tournament.rounds:
            events.append((_pair(tournament, current.round + 1, so_far), b"", b""))
        else:
            final = rules_of_play.standings(so_far)
            ended = tournament_pb2.TournamentEnded(seed=tournament.seed, standings=final)
            events.append((tournament_pb2.TournamentEvent(ended=ended), b"", b""))
    return events or None


# ---------------------------------------------------------------------------------- store


class TournamentStore:
    """Loads tournaments from the log (a cache checked against the log's version) and appends
    their events with the expected version."""

    def __init__(self, log: EventLog) -> None:
        self.log = log
        self._cache: dict[str, Tournament] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._index: list[str] = []
        self._index_version = 0
        self._index_lock = asyncio.Lock()

    async def load(self, tournament_id: str) -> Tournament:
        if not tournament_id or len(tournament_id) > 64 or not tournament_id.isalnum():
            raise tournament_not_found(tournament_id)
        tournament = self._cache.get(tournament_id) or Tournament(tournament_id)
        try:
            stored = await self.log.read(stream_of(tournament_id), after_version=tournament.version)
        except LogUnavailable as error:
            raise errors.refuse(Reason.LOG_UNAVAILABLE, str(error)) from None
        for row in stored:
            tournament.fold(decode(row))
        if tournament.version == 0:
            raise tournament_not_found(tournament_id)
        self._cache[tournament_id] = tournament
        return tournament

    async def index(self) -> list[str]:
        """Every tournament's id, oldest first."""
        async with self._index_lock:  # two readers at once would list a row twice
            for row in await self.log.read(INDEX_STREAM, after_version=self._index_version):
                if row.version == self._index_version + 1:
                    self._index.append(decode_row(row.data).listed_tournament_id)
                    self._index_version = row.version
            return list(self._index)

    async def _list(self, tournament_id: str) -> None:
        for _ in range(MAX_DECIDE_ATTEMPTS):
            listed = await self.index()
            if tournament_id in listed:
                return
            row = (
                ENVELOPE_MARKER
                + log_pb2.TournamentLogEntry(listed_tournament_id=tournament_id).SerializeToString()
            )
            try:
                await self.log.append(INDEX_STREAM, self._index_version, [row])
            except VersionConflict:
                continue
            return
        raise errors.refuse(Reason.TOURNAMENT_CONTENDED, "the index kept changing; try again")

    async def create(
        self,
        settings: tournament_pb2.TournamentSettings,
        organiser: str,
        request_id: str,
    ) -> Tournament:
        request_digest = tokens.digest(request_id) if request_id else b""
        tournament_id = (
            hashlib.sha256(b"spades-tournament-id/" + request_id.encode()).hexdigest()[:20]
            if request_id
            else secrets.token_hex(10)
        )
        seed = secrets.token_bytes(32)
        try:
            await self._append(
                tournament_id, 0, decide_creation(settings, organiser, seed, request_digest)
            )
        except VersionConflict:
            tournament = await self.load(tournament_id)
            if not request_digest or tournament.created_by_request != request_digest:
                raise errors.refuse(
                    Reason.REQUEST_ID_REUSED,
                    "this request_id was used for another call; send a fresh one",
                ) from None
        await self._list(tournament_id)  # a retry lists one a crash left unlisted
        return await self.load(tournament_id)

    async def execute(self, tournament_id: str, decide: TournamentDecision) -> Tournament:
        lock = self._locks.setdefault(tournament_id, asyncio.Lock())
        async with lock:
            for _ in range(MAX_DECIDE_ATTEMPTS):
                tournament = await self.load(tournament_id)
                decided = decide(tournament)
                if not decided:
                    return tournament
                try:
                    await self._append(tournament_id, tournament.version, decided)
                except VersionConflict:
                    continue  # another replica moved first: load (reads what it wrote) again
                return await self.load(tournament_id)
        raise errors.refuse(
            Reason.TOURNAMENT_CONTENDED, "the tournament kept changing under this request"
        )

    async def _append(self, tournament_id: str, expected: int, decided: Decided) -> None:
        rows = [encode(event, seed, digest) for event, seed, digest in decided]
        try:
            await self.log.append(stream_of(tournament_id), expected, rows)
        except LogUnavailable as error:
            raise errors.refuse(Reason.LOG_UNAVAILABLE, str(error)) from None


# ---------------------------------------------------------------------------------- driver


def _told(account: accounts.Account, check: Callable[[account_pb2.AccountEvent], bool]) -> bool:
    return any(check(entry.message) for entry in account.entries)


class TournamentDriver:
    """Runs every tournament that is not over: see the module's docstring."""

    def __init__(
        self,
        tournaments: TournamentStore,
        tables: TableStore,
        account_store: AccountStore,
        *,
        poll: float = 1.0,
    ) -> None:
        self.tournaments = tournaments
        self.tables = tables
        self.accounts = account_store
        self.poll = poll
        self._of_table: dict[str, str] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._sweeper: asyncio.Task[None] | None = None
        self._active: set[str] = set()
        self._seen_version: dict[str, int] = {}
        #: (tournament, round) whose tables this driver opened, seated and told of.
        self._ready: set[tuple[str, int]] = set()

    async def start(self) -> None:
        for tournament_id in await self.tournaments.index():
            tournament = await self.tournaments.load(tournament_id)
            if tournament.status != FINISHED:
                self._active.add(tournament_id)
                await self._advance_logged(tournament_id)
        self._sweeper = asyncio.create_task(self._sweep(), name="tournament-driver")

    async def stop(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._sweeper
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def watch(self, tournament_id: str) -> None:
        """Run this tournament (a new one, or one entered)."""
        self._active.add(tournament_id)
        self._spawn(tournament_id)

    def table_changed(self, table: Table) -> None:
        """A table store's listener: a board scored or a match ended at a tournament's table
        moves the tournament on."""
        tournament_id = self._of_table.get(table.table_id)
        if tournament_id is None:
            return
        seen = self._seen_version.get(table.table_id, 0)
        self._seen_version[table.table_id] = table.version
        if any(
            isinstance(entry.event, (ev.HandScored, ev.MatchEnded))
            for entry in table.entries[seen:]
        ):
            self._spawn(tournament_id)

    def _spawn(self, tournament_id: str) -> None:
        task = asyncio.get_running_loop().create_task(self._advance_logged(tournament_id))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(self.poll)
            with contextlib.suppress(Exception):
                for tournament_id in await self.tournaments.index():
                    if tournament_id not in self._active:
                        tournament = await self.tournaments.load(tournament_id)
                        if tournament.status == FINISHED:
                            continue
                        self._active.add(tournament_id)
            for tournament_id in list(self._active):
                await self._advance_logged(tournament_id)

    async def _advance_logged(self, tournament_id: str) -> None:
        try:
            await self.advance(tournament_id)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("tournament not advanced", tournament_id=tournament_id)

    async def advance(self, tournament_id: str) -> None:
        """Do whatever the tournament calls for now, until nothing is left to do."""
        lock = self._locks.setdefault(tournament_id, asyncio.Lock())
        async with lock:
            for _ in range(1000):
                tournament = await self.tournaments.load(tournament_id)
                if tournament.status == FINISHED:
                    await self._tell_end(tournament)  # again after a kill: told once each
                    self._active.discard(tournament_id)
                    return
                tables: dict[str, Table] = {}
                if tournament.status == RUNNING:
                    tables = await self._open_round(tournament)
                before = tournament.version
                opened = tables
                tournament = await self.tournaments.execute(
                    tournament_id,
                    lambda latest, opened=opened: decide_progress(latest, opened, time.time()),  # type: ignore[misc]
                )
                if tournament.version == before:
                    return
                if tournament.status == FINISHED:
                    log.info("tournament ended", tournament_id=tournament_id)

    async def _open_round(self, tournament: Tournament) -> dict[str, Table]:
        """The current round's tables, opened and seated (idempotent), entrants told."""
        current = tournament.paired[-1]
        names = {e.account_id: e for e in tournament.entrants}
        rules = tournament.rules
        boards = rules_of_play.round_boards(
            tournament.seed, current.round, rules, tournament.settings.boards
        )
        table_seed = rules_of_play.round_table_seed(tournament.seed, current.round)
        tables: dict[str, Table] = {}
        ready = (tournament.tournament_id, current.round)
        if ready in self._ready:  # opened, seated and told before: only read the tables
            for pairing in current.pairings:
                for table_id in pairing.table_ids:
                    tables[table_id] = await self.tables.load(table_id)
            return tables
        for pairing in current.pairings:
            home, away = pairing.home_account_id, pairing.away_account_id
            for leg, table_id in enumerate(pairing.table_ids):
                self._of_table[table_id] = tournament.tournament_id
                name = (
                    f"{tournament.settings.name[:40]} R{current.round} "
                    f"P{pairing.index + 1} T{leg + 1}"
                )
                table = await self._table(table_id, name, rules, table_seed, boards, tournament)
                for seat in range(4):
                    holder = home if seat in rules_of_play.HOME_SEATS[leg] else away
                    if table.seat_accounts.get(seat) != holder:
                        table = await self._seat(table_id, seat, names[holder])
                tables[table_id] = table
            for account_id, opponent in ((home, away), (away, home)):
                if account_id:
                    await self._tell_pairing(
                        tournament, current.round, pairing, account_id, opponent
                    )
        self._ready.add(ready)
        return tables

    async def _table(
        self,
        table_id: str,
        name: str,
        rules: Rules,
        seed: bytes,
        boards: list[list[list[int]]],
        tournament: Tournament,
    ) -> Table:
        try:
            return await self.tables.load(table_id)
        except errors.RequestError as error:
            if error.code is not grpc.StatusCode.NOT_FOUND:
                raise
        decided = decide_new_table(
            new_match(rules, seed=seed, preset_deals=boards),
            name=name,
            private=False,
            join_code="",
            rated=tournament.settings.rated,
        )
        try:
            return await self.tables.create(table_id, decided)
        except VersionConflict:
            return await self.tables.load(table_id)  # another replica opened it first

    async def _seat(self, table_id: str, seat: int, entrant: tournament_pb2.Entrant) -> Table:
        account = await self.accounts.load(entrant.account_id)

        def decide(table: Table) -> object:
            if table.seat_accounts.get(seat) == entrant.account_id:
                return None
            return decide_join(
                table,
                seat,
                account.name,
                account.bot,
                "",
                tokens.new_seat_token(table_id),
                b"",
                account.account_id,
            )

        table, _ = await self.tables.execute(table_id, decide)  # type: ignore[arg-type]
        return table

    async def _tell_pairing(
        self,
        tournament: Tournament,
        round_number: int,
        pairing: tournament_pb2.Pairing,
        account_id: str,
        opponent: str,
    ) -> None:
        tid = tournament.tournament_id
        paired = account_pb2.TournamentRoundPaired(
            tournament_id=tid,
            round=round_number,
            opponent_account_id=opponent,
            table_ids=pairing.table_ids,
        )
        events: list[account_pb2.AccountEvent] = [
            account_pb2.AccountEvent(tournament_round_paired=paired)
        ]
        for leg, table_id in enumerate(pairing.table_ids):
            home = account_id == pairing.home_account_id
            seats = rules_of_play.HOME_SEATS[leg] if home else rules_of_play.AWAY_SEATS[leg]
            assigned = account_pb2.TableAssigned(
                table_id=table_id,
                seats=[cards_pb2.Seat.ValueType(protocol.seat_to_proto(s)) for s in seats],
                rated=tournament.settings.rated,
            )
            events.append(account_pb2.AccountEvent(table_assigned=assigned))

        def decide(account: accounts.Account) -> accounts.AccountDecided | None:
            def paired_here(message: account_pb2.AccountEvent) -> bool:
                return (
                    message.WhichOneof("kind") == "tournament_round_paired"
                    and message.tournament_round_paired.tournament_id == tid
                    and message.tournament_round_paired.round == round_number
                )

            if _told(account, paired_here):
                return None
            return accounts.AccountDecided([(event, b"", b"") for event in events])

        await self.accounts.execute(account_id, decide)

    async def _tell_end(self, tournament: Tournament) -> None:
        tid = tournament.tournament_id
        for line in tournament.standings().lines:
            finished = account_pb2.TournamentFinished(tournament_id=tid, rank=line.rank)

            def decide(
                account: accounts.Account, finished: account_pb2.TournamentFinished = finished
            ) -> accounts.AccountDecided | None:
                if _told(
                    account,
                    lambda m: (
                        m.WhichOneof("kind") == "tournament_finished"
                        and m.tournament_finished.tournament_id == tid
                    ),
                ):
                    return None
                event = account_pb2.AccountEvent(tournament_finished=finished)
                return accounts.AccountDecided([(event, b"", b"")])

            await self.accounts.execute(line.account_id, decide)
