"""Absent players: a house bot plays the seat of a player who went away, until the player returns.

A seat's player counts as absent while its match is being played when

- its turns timed out ``after_timeouts`` times in a row (the engine counts the run in
  ``MatchState.timeout_streaks``; the seat's own action ends it, an automatic one does not), or
- it had no Play stream open on this server for ``grace`` seconds. A disconnection counts from
  the moment this server saw the player's last stream close; with an embedded log (one server
  sees every stream) a seat whose player never connected counts as away from the match's start
  (or this server's).

Then a substitute takes the seat: the server appends ``SeatSubstituted(seat, reason)`` with the
SHA-256 of a fresh seat token beside it (a server secret, like a player's token digest: kept in
the journal's secrets, never in a public message), through :meth:`TableStore.execute` with the
expected version. Its decision (:func:`~spades_server.domain.decisions.decide_substitution`) returns
nothing once the table no longer needs it (the run of timeouts was ended, the seat is already
substituted), so it happens exactly once across replicas and restarts. The process that appended
it hands the token to its house pool, whose bot plays the seat through the public API.

The player takes the seat back by opening a Play stream with its own token (``play.py``):
``SeatReclaimed``, after which the substitute's token is refused and its stream is closed. A
substitute that stopped playing (its server restarted, the bot failed) lets the seat's turns
time out again, and the same run of timeouts brings a new substitute.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any

import structlog

from spades.engine import seat_name
from spades.engine.events import SubstitutionReason
from spades_server.domain import errors, tokens
from spades_server.domain.decisions import decide_substitution
from spades_server.domain.tables import Table
from spades_server.ops import metrics
from spades_server.ops.clocks import SYSTEM_CLOCK, Clock
from spades_server.ops.tasks import stop_tasks
from spades_server.processes.house import HousePool
from spades_server.store.table_store import TableStore

log = structlog.get_logger(__name__)

TIMEOUTS = SubstitutionReason.TIMEOUTS
DISCONNECTED = SubstitutionReason.DISCONNECTED


class AbsentPlayers:
    """Watches for absent players and has house bots take their seats."""

    def __init__(
        self,
        store: TableStore,
        pool: HousePool,
        *,
        after_timeouts: int = 2,
        grace: float = 60.0,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._store = store
        self._clock = clock
        self._pool = pool
        self.after_timeouts = after_timeouts
        self.grace = grace
        #: Open Play streams of each (table, seat)'s own player on this server.
        self._open: dict[tuple[str, int], int] = {}
        #: Since when (unix seconds) each (table, seat)'s player has had no stream here.
        self._away_since: dict[tuple[str, int], float] = {}
        #: Substitutions being appended (one at a time per seat).
        self._pending: set[tuple[str, int]] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._sweeper: asyncio.Task[None] | None = None
        self._running = False
        store.listeners.append(self._on_change)

    @property
    def _assume_away(self) -> bool:
        # Only with one writer does this server see every stream of every seat.
        return self._store.log.sole_writer

    async def start(self) -> None:
        """Start watching (the tables in play are loaded by now: look at them at once)."""
        self._running = True
        for table in self._store.cached_tables():
            self._on_change(table)
        if self.grace > 0:
            self._sweeper = asyncio.create_task(self._sweep(), name="absent-players")
        log.info(
            "absent players get substitutes",
            after_timeouts=self.after_timeouts or "never",
            disconnect_grace=self.grace or "never",
            house_bots=self._pool.capacity,
        )

    async def stop(self) -> None:
        self._running = False
        await stop_tasks(self._sweeper, *self._tasks)

    # ------------------------------------------------------------------ streams

    def stream_opened(self, table_id: str, seat: int) -> None:
        """A Play stream of the seat's own player opened on this server."""
        key = (table_id, seat)
        self._open[key] = self._open.get(key, 0) + 1
        self._away_since.pop(key, None)

    def stream_closed(self, table_id: str, seat: int) -> None:
        """A Play stream of the seat's own player closed."""
        key = (table_id, seat)
        left = self._open.get(key, 0) - 1
        if left > 0:
            self._open[key] = left
            return
        self._open.pop(key, None)
        with contextlib.suppress(KeyError):
            if self.grace > 0 and self._store.cached(table_id).in_play:
                self._away_since[key] = self._clock.now()

    def connected(self, table_id: str, seat: int) -> bool:
        """Whether the seat's player has a Play stream open on this server."""
        return (table_id, seat) in self._open

    # ------------------------------------------------------------------ deciding

    def _on_change(self, table: Table) -> None:
        """Called with every table that changed (events folded, here or by another replica)."""
        if not self._running:
            return
        table_id = table.table_id
        seats = range(len(table.state.players))
        if self._pool.substitutes:
            # A substitute whose substitution ended (SeatReclaimed, a newer substitute, the
            # match over) stops; its stream is closed and its token refused anyway.
            for seat in seats:
                digest = self._pool.substitute_digest_of(table_id, seat)
                if digest is not None and (
                    table.finished or table.substitute_token_digests.get(seat) != digest
                ):
                    self._spawn(self._pool.release(table_id, seat, digest))
        if not table.in_play:
            for seat in seats:
                self._away_since.pop((table_id, seat), None)
            return
        if self.after_timeouts > 0:
            streaks = table.state.timeout_streaks
            for seat in seats:
                if streaks[seat] >= self.after_timeouts:
                    self._schedule(table_id, seat, TIMEOUTS)
        if self.grace > 0 and self._assume_away:
            now = self._clock.now()
            substitutions = table.state.substitutions
            for seat in seats:
                key = (table_id, seat)
                if substitutions[seat] is None and key not in self._open:
                    self._away_since.setdefault(key, now)

    async def _sweep(self) -> None:
        interval = min(1.0, max(0.02, self.grace / 5))
        while True:
            await self._clock.sleep(interval)
            now = self._clock.now()
            for key, since in list(self._away_since.items()):
                if now - since < self.grace:
                    continue
                del self._away_since[key]  # one substitution per absence
                table_id, seat = key
                try:
                    table = await self._store.load(table_id)  # it may have left the cache
                except errors.RequestError:
                    continue
                if (
                    table.in_play
                    and table.state.substitutions[seat] is None
                    and not self.connected(table_id, seat)
                ):
                    self._schedule(table_id, seat, DISCONNECTED)

    def _schedule(self, table_id: str, seat: int, reason: SubstitutionReason) -> None:
        key = (table_id, seat)
        if key in self._pending:
            return
        if not self._pool.can_substitute:
            log.warning(
                "no house bot free to substitute",
                table_id=table_id,
                seat=seat_name(seat),
                reason=reason.value,
                house_bots=self._pool.capacity,
            )
            return
        self._pending.add(key)
        task = self._spawn(self._substitute(table_id, seat, reason))
        task.add_done_callback(lambda _: self._pending.discard(key))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _substitute(self, table_id: str, seat: int, reason: SubstitutionReason) -> None:
        token = tokens.new_seat_token(table_id)
        try:
            _, stored = await self._store.execute(
                table_id,
                lambda table: decide_substitution(
                    table,
                    seat,
                    reason,
                    token,
                    after_timeouts=self.after_timeouts,
                    connected=self.connected(table_id, seat),
                ),
            )
            if not stored:
                return  # another process did it, or the player came back first
            metrics.SUBSTITUTIONS.labels(reason.name.lower()).inc()
            log.info(
                "seat substituted",
                table_id=table_id,
                seat=seat_name(seat),
                reason=reason.value,
                sequence=stored[0].sequence,
            )
            await self._pool.substitute(table_id, seat, token)
        except errors.RequestError as error:
            log.warning(
                "no substitute", table_id=table_id, seat=seat_name(seat), reason=error.reason
            )
