"""The tournament driver: starts tournaments, makes their tables, and moves them on as tables
finish.

Any replica may run it: every step is a decision of :mod:`spades_server.domain.tournaments`
appended with the expected version, so it happens once."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import grpc
import structlog

from spades import protocol
from spades.engine import Rules, new_match
from spades.engine import events as ev
from spades.records import tournament as rules_of_play
from spades.v1 import account_pb2, cards_pb2, tournament_pb2
from spades_server.domain import accounts, errors, tokens
from spades_server.domain.decisions import decide_join, decide_new_table
from spades_server.domain.tables import Table
from spades_server.domain.tournaments import FINISHED, RUNNING, Tournament, decide_progress
from spades_server.eventlog.base import VersionConflict
from spades_server.ops.clocks import SYSTEM_CLOCK, Clock
from spades_server.ops.tasks import stop_tasks
from spades_server.store.account_store import AccountStore
from spades_server.store.table_store import TableStore
from spades_server.store.tournament_store import TournamentStore

log = structlog.get_logger(__name__)


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
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.tournaments = tournaments
        self.clock = clock
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
        await stop_tasks(self._sweeper)
        await stop_tasks(*self._tasks)  # (those the sweeper started before it stopped)

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
            await self.clock.sleep(self.poll)
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
                    lambda latest, opened=opened: decide_progress(latest, opened, self.clock.now()),  # type: ignore[misc]
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
        tables: dict[str, Table] = {}
        ready = (tournament.tournament_id, current.round)
        if ready in self._ready:  # opened, seated and told before: only read the tables
            for pairing in current.pairings:
                for table_id in pairing.table_ids:
                    tables[table_id] = await self.tables.load(table_id)
            return tables
        for pairing in current.pairings:
            home, away = pairing.home_account_id, pairing.away_account_id
            # Each pairing its own boards: another pairing's table shows none of these cards.
            derived = (tournament.seed, current.round, pairing.index)
            boards = rules_of_play.pairing_boards(
                *derived, rules, tournament.settings.boards, tournament.derivation
            )
            table_seed = rules_of_play.pairing_table_seed(*derived, tournament.derivation)
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
