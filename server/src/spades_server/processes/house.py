"""House bots: players the server runs for tables that need them.

A house bot is an ordinary client. The pool opens a gRPC channel of its own to this server's
port, takes the seat with ``JoinTable`` (as a bot, named like "House Heuristic 1") and plays it
with the SDK's :func:`~spades.bot.play_match`: the same calls, checks and limits as any player,
no back door into the tables. So a house bot appears in the lobby and in the record as a bot.

The pool supervises every bot's task: a task that fails is started again after a back-off, with
a new bot that resumes the seat from the table's log, until the match is over or the bot has
failed :data:`MAX_FAILURES` times in a row. On shutdown every bot stops; their seats are then
the turn clock's, like any player who went away.

It also completes the quick-match queue: a quick-match table whose first player has waited
``fill_after`` seconds gets heuristic house bots in its free seats, and the match starts. And
the rated queue: a rated quick-match table whose first player has waited ``rated_fill_after``
seconds gets the server's house-bot accounts (:mod:`spades_server.processes.house_accounts`) in its
free seats. Only accounts sit at rated tables and house accounts have no key, so the pool seats
them through ``seat_account`` (the lobby's own join for that account, with every check a join
has) and each bot plays its seat with the seat token that join returned, as a substitute does.

And it plays for absent players (see :mod:`spades_server.processes.absent`): a substitute is a
house bot given the seat token of a substitution the server appended to the table's log (only its
digest is kept there). It plays the seat through the same public API until its player takes the seat
back (its token is then refused, and it stops without a restart) or the match ends.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

import grpc
import structlog

from spades import protocol
from spades.bot import Backoff, Bot, play_match
from spades.client import SpadesClient, SpadesError
from spades.engine import seat_name
from spades.reasons import Reason
from spades.v1 import lobby_pb2
from spades.wire import DEFAULT_HOUSE_BOT_KIND
from spades_server.domain import errors, tokens
from spades_server.domain.accounts import Account, account_id_for
from spades_server.domain.errors import LimitExceeded
from spades_server.ops.clocks import SYSTEM_CLOCK, Clock
from spades_server.ops.tasks import stop_tasks
from spades_server.processes import house_accounts

log = structlog.get_logger(__name__)

#: A bot whose task failed this many times in a row is given up (its seat goes to the clock).
MAX_FAILURES = 8
#: A task that ran this long before failing starts a new run of failures.
HEALTHY_AFTER = 60.0

BotFactory = Callable[[str], Bot]
#: Seats an account at a table (a seat, or any free one for None): the seat taken, its token.
AccountSeating = Callable[[str, int | None, Account], Awaitable[tuple[int, str]]]


class TableDirectory(Protocol):
    """Where the pool looks tables up (the lobby's projection is one): the names a table gave
    its seats, whether its match is over, and the quick-match tables waiting for players."""

    def summary(self, table_id: str) -> lobby_pb2.Table | None: ...

    def open_quick_match_tables(self, rated: bool = False) -> list[lobby_pb2.Table]: ...


def make_house_bot(kind: str) -> Bot:
    """A new bot of ``kind`` ("random" or "heuristic") from the bots distribution."""
    from spades_bots.registry import bot_class  # the bots are only needed once one plays

    return bot_class(kind)()


def own_address(listen: str, port: int) -> str:
    """Where a client in this process reaches the server listening on ``listen`` (port ``port``):
    a wildcard host (all interfaces) is reached on the loopback address."""
    host = listen.rpartition(":")[0]
    if host in ("", "0.0.0.0", "[::]", "::"):
        host = "127.0.0.1"
    return f"{host}:{port}"


@dataclass
class HouseBot:
    """One seat the pool plays."""

    table_id: str
    seat: int
    name: str
    kind: str
    token: str = field(repr=False)
    client: SpadesClient = field(repr=False)
    task: asyncio.Task[None] | None = field(default=None, repr=False)
    #: How many times its task failed and was started again.
    restarts: int = 0
    #: True once its match is over.
    finished: bool = False
    #: True for a substitute playing for an absent player (not seated by JoinTable).
    substitute: bool = False
    #: A substitute's token digest (as the journal keeps it beside its SeatSubstituted).
    digest: bytes = field(default=b"", repr=False)
    #: The AddHouseBot request id it was seated with, if any.
    request_id: str = field(default="", repr=False)


class HousePool:
    """The house bots of one server, and the quick-match filler.

    ``capacity`` bounds how many bots play at once (0: no house bots); ``fill_after`` is how long
    a quick-match player waits before house bots complete the table (0: never), and
    ``rated_fill_after`` how long a rated one waits before house accounts do (0: never; it also
    needs ``make_house_accounts`` and ``seat_account``, which the server sets at start).
    """

    def __init__(
        self,
        directory: TableDirectory,
        *,
        capacity: int = 64,
        fill_after: float = 30.0,
        make_bot: BotFactory = make_house_bot,
        restart_backoff: Backoff | None = None,
        rated_fill_after: float = 0.0,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._directory = directory
        self._clock = clock
        self.capacity = capacity
        self.fill_after = fill_after
        self.rated_fill_after = rated_fill_after
        #: The house account of each kind (made when first needed, by ``make_house_accounts``,
        #: which the server sets), and the kinds that fill rated tables, in order.
        self.house_accounts: dict[str, Account] = {}
        self.make_house_accounts: Callable[[], Awaitable[dict[str, Account]]] | None = None
        self.rated_kinds: tuple[str, ...] = house_accounts.RATED_FILL_KINDS
        self.seat_account: AccountSeating | None = None
        self.make_bot = make_bot
        self.restart_backoff = restart_backoff or Backoff(initial=0.5, maximum=30.0)
        self._address: str | None = None
        self._why_off = "this server runs no house bots (--house-bots 0)"
        self.bots: dict[tuple[str, int], HouseBot] = {}
        #: The substitutes playing for absent players, by (table, seat).
        self.substitutes: dict[tuple[str, int], HouseBot] = {}
        self._seating = asyncio.Lock()
        self._waiting_since: dict[str, float] = {}
        self._rated_waiting_since: dict[str, float] = {}
        self._filler: asyncio.Task[None] | None = None
        self._rng = random.Random()

    # ------------------------------------------------------------------ life

    async def start(self, address: str) -> None:
        """Play through the server at ``address`` (this process's own port)."""
        if self.capacity <= 0:
            return
        self._address = address
        if self.fill_after > 0 or self.rated_fill_after > 0:
            self._filler = asyncio.create_task(self._fill_quick_match(), name="house-filler")
        log.info(
            "house bots ready",
            capacity=self.capacity,
            quick_match_fill_after=self.fill_after,
            rated_fill_after=self.rated_fill_after,
        )

    async def stop(self) -> None:
        """Stop the filler and every bot (their seats are left to the turn clock)."""
        self._address = None
        await stop_tasks(self._filler, *self._tasks())
        for bot in [*self.bots.values(), *self.substitutes.values()]:
            await bot.client.close()
        self.bots.clear()
        self.substitutes.clear()

    def _tasks(self) -> list[asyncio.Task[None]]:
        bots = [*self.bots.values(), *self.substitutes.values()]
        return [bot.task for bot in bots if bot.task is not None]

    @property
    def playing(self) -> int:
        """How many house bots (substitutes included) are playing now."""
        bots = [*self.bots.values(), *self.substitutes.values()]
        return sum(not bot.finished for bot in bots)

    @property
    def can_substitute(self) -> bool:
        """Whether a substitute could start now (the pool is on and not full)."""
        return self._address is not None and self.capacity > 0 and self.playing < self.capacity

    # ------------------------------------------------------------------ seating

    async def add(
        self,
        table_id: str,
        seat: int | None = None,
        kind: str = DEFAULT_HOUSE_BOT_KIND,
        join_code: str = "",
        *,
        request_id: str = "",
    ) -> HouseBot:
        """Seat a house bot of ``kind`` at ``seat`` (any free seat if None) and start it.

        With the caller's ``request_id`` the bot joins with that id, so a retried AddHouseBot
        finds the same seat (and the bot playing it, or plays it again after a restart: the
        join's retry gives back its token). Whoever asked for the bot could thus play its
        seat, as they could have taken that seat themselves.

        Raises the :class:`~spades_server.domain.errors.RequestError` the table's JoinTable answered
        (the match has started, the seat is taken, a wrong join code), FAILED_PRECONDITION when
        the pool is off and RESOURCE_EXHAUSTED when it is full.
        """
        if self._address is None or self.capacity <= 0:
            raise errors.refuse(Reason.HOUSE_BOTS_OFF, self._why_off)
        if not table_id:
            raise errors.refuse(Reason.MISSING_FIELD, "table_id is required", field="table_id")
        async with self._seating:  # one at a time, so the pool never runs past its capacity
            if request_id:
                for running in self.bots.values():
                    if running.table_id == table_id and running.request_id == request_id:
                        return running  # a retry, answered while the bot plays
            if self.playing >= self.capacity:
                raise LimitExceeded(
                    f"this server already runs {self.capacity} house bots; try again later",
                    reason_code=Reason.HOUSE_BOTS_BUSY,
                )
            # Every bot asks for number 1; the table's join (domain.decisions.unique_name) gives
            # the smallest number no seat shows, against the log, whichever replica seats it.
            name = f"House {kind.title()} 1"
            client = SpadesClient(self._address)
            try:
                ticket = await client.join_table(
                    table_id,
                    name,
                    seat=seat,
                    bot=True,
                    join_code=join_code,
                    request_id=request_id or None,
                )
            except SpadesError as error:
                await client.close()
                # The table's own refusal, passed on as it was given.
                raise errors.RequestError(
                    error.code,
                    error.reason,
                    reason_code=error.reason_code,
                    field=error.field,
                    metadata=error.metadata,
                ) from None
            except BaseException:
                await client.close()
                raise
            # The name the table gave (numbered, or a retry's seat's); the lobby answered the
            # join once this replica's directory had folded it.
            summary = self._directory.summary(table_id)
            if summary is not None and summary.seats[ticket.seat].player_name:
                name = summary.seats[ticket.seat].player_name
            bot = HouseBot(table_id, ticket.seat, name, kind, ticket.token, client)
            bot.request_id = request_id
            self.bots[(table_id, ticket.seat)] = bot
            bot.task = asyncio.create_task(self._supervise(bot), name=f"house-{name}")
        log.debug("house bot seated", table_id=table_id, seat=seat_name(bot.seat), player=name)
        return bot

    async def add_account(
        self, table_id: str, seat: int | None, kind: str, account: Account
    ) -> HouseBot:
        """Seat the house ``account`` (of bot ``kind``) at ``seat`` through ``seat_account`` and
        start a bot of ``kind`` on it. Raises as :meth:`add` does (the join's refusal passed on:
        a seat taken meanwhile, or an account on the other side, is FAILED_PRECONDITION)."""
        if self._address is None or self.capacity <= 0 or self.seat_account is None:
            raise errors.refuse(Reason.HOUSE_BOTS_OFF, self._why_off)
        async with self._seating:
            if self.playing >= self.capacity:
                raise LimitExceeded(
                    f"this server already runs {self.capacity} house bots; try again later",
                    reason_code=Reason.HOUSE_BOTS_BUSY,
                )
            taken, token = await self.seat_account(table_id, seat, account)
            bot = HouseBot(table_id, taken, account.name, kind, token, SpadesClient(self._address))
            self.bots[(table_id, taken)] = bot
            bot.task = asyncio.create_task(
                self._supervise(bot), name=f"house-{account.name}-{table_id}-{taken}"
            )
        log.debug("house account seated", table_id=table_id, seat=seat_name(taken), player=bot.name)
        return bot

    async def substitute(
        self, table_id: str, seat: int, token: str, kind: str = "heuristic"
    ) -> HouseBot:
        """Play ``seat`` with ``token``, the seat token of a substitution already in the log,
        until the seat's player takes it back or the match ends. A substitute the pool already
        runs for the seat is replaced."""
        if self._address is None or self.capacity <= 0:
            raise errors.refuse(Reason.HOUSE_BOTS_OFF, self._why_off)
        previous = self.substitutes.pop((table_id, seat), None)
        if previous is not None:
            await self._stop_bot(previous)
        async with self._seating:
            if self.playing >= self.capacity:
                raise LimitExceeded(
                    f"this server already runs {self.capacity} house bots; try again later",
                    reason_code=Reason.HOUSE_BOTS_BUSY,
                )
            name = f"House {kind.title()} (for {seat_name(seat)})"
            bot = HouseBot(
                table_id,
                seat,
                name,
                kind,
                token,
                SpadesClient(self._address),
                substitute=True,
                digest=tokens.digest(token),
            )
            self.substitutes[(table_id, seat)] = bot
            bot.task = asyncio.create_task(
                self._supervise(bot), name=f"house-sub-{table_id}-{seat}"
            )
        log.info("substitute playing", table_id=table_id, seat=seat_name(seat), player=name)
        return bot

    async def release(self, table_id: str, seat: int, digest: bytes) -> None:
        """Stop the substitute playing ``seat`` with the token of ``digest`` (its player took
        the seat back, or a newer substitute came), if it still does."""
        bot = self.substitutes.get((table_id, seat))
        if bot is None or bot.digest != digest:
            return
        del self.substitutes[(table_id, seat)]
        log.info("substitute released", table_id=table_id, seat=seat_name(seat))
        await self._stop_bot(bot)

    def substitute_digest_of(self, table_id: str, seat: int) -> bytes | None:
        """The token digest of the substitute this pool runs for ``seat``, if any."""
        bot = self.substitutes.get((table_id, seat))
        return None if bot is None else bot.digest

    async def _stop_bot(self, bot: HouseBot) -> None:
        await stop_tasks(bot.task)
        bot.finished = True
        await bot.client.close()

    # ------------------------------------------------------------------ supervision

    async def _supervise(self, bot: HouseBot) -> None:
        failures = 0
        try:
            while True:
                started = self._clock.monotonic()
                try:
                    await play_match(bot.client, self.make_bot(bot.kind), bot.token)
                    return
                except asyncio.CancelledError:
                    raise
                except Exception as error:
                    if (
                        bot.substitute
                        and isinstance(error, SpadesError)
                        and error.code is grpc.StatusCode.UNAUTHENTICATED
                    ):
                        # The player took the seat back: the substitute's token is refused.
                        log.info("substitute done", table_id=bot.table_id, seat=bot.seat)
                        return
                    if self._clock.monotonic() - started > HEALTHY_AFTER:
                        failures = 0
                    failures += 1
                    reason = error.reason if isinstance(error, SpadesError) else repr(error)
                    if failures >= MAX_FAILURES or self._match_over(bot.table_id):
                        log.error(
                            "house bot gave up",
                            table_id=bot.table_id,
                            player=bot.name,
                            failures=failures,
                            error=reason,
                        )
                        return
                    delay = self.restart_backoff.delay(failures - 1, self._rng)
                    log.warning(
                        "house bot failed; restarting",
                        table_id=bot.table_id,
                        player=bot.name,
                        error=reason,
                        in_seconds=round(delay, 2),
                    )
                    bot.restarts += 1
                    await self._clock.sleep(delay)
        finally:
            bot.finished = True
            registry = self.substitutes if bot.substitute else self.bots
            if registry.get((bot.table_id, bot.seat)) is bot:
                del registry[(bot.table_id, bot.seat)]
            await asyncio.shield(bot.client.close())

    def _match_over(self, table_id: str) -> bool:
        summary = self._directory.summary(table_id)
        return summary is None or summary.status == lobby_pb2.TABLE_STATUS_FINISHED

    # ------------------------------------------------------------------ quick match

    def fills_in(self, table_id: str, rated: bool) -> float | None:
        """Seconds until this server completes the waiting quick-match (``rated``: rated queue)
        table ``table_id`` with house bots, counted from its first player's wait as the filler
        saw it; None when it will not (no house bots, or that queue is not filled)."""
        wait = self.rated_fill_after if rated else self.fill_after
        if self.capacity <= 0 or wait <= 0 or self._address is None:
            return None
        if rated and self.seat_account is None:
            return None
        since = (self._rated_waiting_since if rated else self._waiting_since).get(table_id)
        return wait if since is None else max(0.0, wait - (self._clock.monotonic() - since))

    async def _fill_quick_match(self) -> None:
        waits = [wait for wait in (self.fill_after, self.rated_fill_after) if wait > 0]
        interval = min(1.0, max(0.05, min(waits) / 4))
        while True:
            await self._clock.sleep(interval)
            try:
                if self.fill_after > 0:
                    await self.fill_waiting_tables()
                if self.rated_fill_after > 0:
                    await self.fill_rated_tables()
            except asyncio.CancelledError:
                raise
            except Exception:  # never let one bad pass stop the filler
                log.exception("quick-match filling failed")

    async def fill_rated_tables(self) -> None:
        """Complete, with house accounts, every rated quick-match table whose first player has
        waited ``rated_fill_after`` seconds."""
        if self.seat_account is None:
            return
        now = self._clock.monotonic()
        open_tables = self._directory.open_quick_match_tables(rated=True)
        still_open = {summary.table_id for summary in open_tables}
        for table_id in set(self._rated_waiting_since) - still_open:
            del self._rated_waiting_since[table_id]
        house_ids = {account_id_for(name) for name in house_accounts.NAMES.values()}
        for summary in open_tables:
            table_id = summary.table_id
            waiting = [seat.account_id for seat in summary.seats if seat.account_id]
            if not any(account_id not in house_ids for account_id in waiting):
                self._rated_waiting_since.pop(table_id, None)  # nobody waits (or only the house)
                continue
            since = self._rated_waiting_since.setdefault(table_id, now)
            if now - since < self.rated_fill_after:
                continue
            made = await self.ensure_house_accounts()
            kinds = [kind for kind in self.rated_kinds if kind in made]
            names = {kind: made[kind].name for kind in kinds}
            sides = protocol.rules_from_proto(summary.rules).sides
            plan = house_accounts.fill_plan(
                [seat.account_id if seat.occupied else "" for seat in summary.seats],
                sides,
                kinds,
                names,
            )
            log.info("completing a rated table", table_id=table_id, house_seats=len(plan))
            for seat, kind in plan:
                try:
                    await self.add_account(table_id, seat, kind, made[kind])
                except errors.RequestError as error:
                    if error.code is not grpc.StatusCode.FAILED_PRECONDITION:
                        log.warning(
                            "cannot complete the rated table", table_id=table_id, error=error.reason
                        )
                        break
                    # Taken meanwhile (a player, or another replica's house account): the next
                    # pass plans again from what the table then holds.

    async def ensure_house_accounts(self) -> dict[str, Account]:
        """The house accounts, made (or found) through ``make_house_accounts`` the first time
        they are needed: a log that never sees a rated table filled holds none."""
        if not self.house_accounts and self.make_house_accounts is not None:
            self.house_accounts = await self.make_house_accounts()
        return self.house_accounts

    async def fill_waiting_tables(self) -> None:
        """Complete every quick-match table whose first player has waited long enough."""
        now = self._clock.monotonic()
        open_tables = self._directory.open_quick_match_tables()
        still_open = {summary.table_id for summary in open_tables}
        for table_id in set(self._waiting_since) - still_open:
            del self._waiting_since[table_id]
        for summary in open_tables:
            table_id = summary.table_id
            players = [
                index
                for index, seat in enumerate(summary.seats)
                if seat.occupied and (table_id, index) not in self.bots
            ]
            if not players:  # nobody waits (or only house bots do)
                self._waiting_since.pop(table_id, None)
                continue
            since = self._waiting_since.setdefault(table_id, now)
            if now - since < self.fill_after:
                continue
            free = [index for index, seat in enumerate(summary.seats) if not seat.occupied]
            log.info("completing a quick-match table", table_id=table_id, house_bots=len(free))
            for index in free:
                try:
                    await self.add(table_id, index, "heuristic")
                except errors.RequestError as error:
                    if error.code is not grpc.StatusCode.FAILED_PRECONDITION:
                        log.warning(
                            "cannot complete the table", table_id=table_id, error=error.reason
                        )
                        break
                    # That seat was taken meanwhile (a player, or another replica's bot).
            self._waiting_since.pop(table_id, None)
