"""LobbyService: create, list, inspect, join and leave tables; the quick-match queue.

A thin servicer: requests are checked (:mod:`spades_server.domain.checks`), decided
(:mod:`spades_server.domain.decisions`) and run through the
:class:`~spades_server.store.table_store.TableStore` like every other command; listings come from
the lobby's projection (:mod:`spades_server.processes.projection`).

CreateTable, JoinTable, QuickMatch and AddHouseBot take a client request id: a retry with the
same id gets the first call's outcome (see :mod:`spades_server.domain.tokens` for how a retried join
gets a working seat token though the log keeps only digests). A created table's id is derived
from the request id, so two replicas racing on one CreateTable append to the same new stream
and the log's expected version lets one through; a join's request id is kept (as a digest)
beside its SeatTaken, so the table's own log says whether it was answered.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta
from typing import Any

import grpc
import structlog

from spades import protocol
from spades.engine import Phase, Rules, new_match
from spades.reasons import Reason
from spades.v1 import lobby_pb2, lobby_pb2_grpc
from spades.wire import house_bot_kind
from spades_server.api.auth import (
    authenticate,
    bearer_key_from,
    caller_address,
    seat_token_from,
)
from spades_server.api.games import GamesCalls
from spades_server.api.limits import Limits
from spades_server.domain import accounts, errors, pairing, ratings, tokens
from spades_server.domain.accounts import Account, check_declared
from spades_server.domain.checks import (
    MAX_PLAYER_NAME,
    MAX_TABLE_NAME,
    check_name,
    check_request_id,
    require_id,
    rules_of,
    seat_or_any,
)
from spades_server.domain.decisions import (
    AlreadyJoined,
    decide_join,
    decide_leave,
    decide_new_table,
)
from spades_server.domain.tables import Table
from spades_server.ops.clocks import SYSTEM_CLOCK, Clock
from spades_server.processes.house import HousePool
from spades_server.processes.projection import LobbyProjection, created_before, open_table
from spades_server.store import stream_kinds as streams
from spades_server.store.account_store import AccountStore
from spades_server.store.rating_store import PoolStore
from spades_server.store.table_store import TableStore

log = structlog.get_logger(__name__)
Context = grpc.aio.ServicerContext[Any, Any]

#: RULES.md section 1: a quick match plays the default rules, capped at 25 hands, so that
#: players who overbid (random bots do) cannot keep a table going forever.
QUICK_MATCH_RULES = Rules(max_hands=25)

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 100

#: How many rows past the lobby's position a replica reads to learn the log's head.
_CATCH_UP_BATCH = 1000
#: Seconds a table's summary waits, on a log others append to, for the lobby to reach what this
#: replica's cache has of the table (the lobby follows the whole log a moment behind).
LOBBY_LAG = 2.0


class LobbyServicer(GamesCalls, lobby_pb2_grpc.LobbyServiceServicer):
    """Create, list, inspect, join and leave tables; the quick-match queue."""

    def __init__(
        self,
        store: TableStore,
        projection: LobbyProjection,
        limits: Limits | None = None,
        house_bots: HousePool | None = None,
        accounts: AccountStore | None = None,
        pools: PoolStore | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._store = store
        self._clock = clock
        self._accounts = accounts
        self._pools = pools
        self._projection = projection
        self._quick_match_lock = asyncio.Lock()
        self._limits = limits or Limits()
        self._house_bots = house_bots

    async def CreateTable(
        self, request: lobby_pb2.CreateTableRequest, context: Context
    ) -> lobby_pb2.CreateTableResponse:
        name = check_name(request.name, "the table name", MAX_TABLE_NAME, "name")
        rules = rules_of(request.rules)
        if request.rated and ratings.pool_of(rules) is None:
            raise errors.refuse(
                Reason.RULES_NOT_RATED,
                "these rules belong to no rating pool, so a table with them cannot be rated "
                f"(pools: {', '.join(ratings.POOLS)}; see docs/accounts.md)",
            )
        request_id = check_request_id(request.request_id)
        table_id = ""
        if request_id:
            table_id = tokens.request_table_id(request_id, tokens.CREATED_BY_CREATE_TABLE)
        join_code = ""
        if request.private:
            join_code = (
                tokens.request_join_code(request_id, table_id)
                if request_id
                else tokens.new_join_code()
            )
        table = await created_before(self._store, self._projection, table_id, request_id)
        if table is None:  # a first call (a retry's table exists: no limit counts it twice)
            self._limits.check_table_creation(context)
            table = await self._create(
                name,
                rules,
                private=request.private,
                join_code=join_code,
                table_id=table_id,
                request_id=request_id,
                rated=request.rated,
            )
        if request_id:  # the first call's privacy decides, not the retry's
            join_code = tokens.request_join_code(request_id, table_id) if table.private else ""
        return lobby_pb2.CreateTableResponse(
            table=await self._summary(table.table_id), join_code=join_code
        )

    async def _create(
        self,
        name: str,
        rules: Rules,
        *,
        private: bool,
        join_code: str,
        quick_match: bool = False,
        table_id: str = "",
        request_id: str = "",
        rated: bool = False,
    ) -> Table:
        """A new table (with ``table_id``, derived from ``request_id``, when one is given)."""
        decided = decide_new_table(
            new_match(rules),
            name=name,
            private=private,
            join_code=join_code,
            quick_match=quick_match,
            request_digest=tokens.digest(request_id) if request_id else b"",
            rated=rated,
        )
        table = await open_table(
            self._store, self._projection, decided, table_id=table_id, request_id=request_id
        )
        log.info("table created", table_id=table.table_id, private=private, quick_match=quick_match)
        return table

    async def _summary(self, table_id: str) -> lobby_pb2.Table:
        await self._lobby_reaches_cache(table_id)
        summary = await self._projection.find(table_id)
        if summary is None and not self._store.log.sole_writer:
            await self._lobby_reaches_log(table_id)
            summary = await self._projection.find(table_id)
        if summary is None:
            raise errors.table_not_found(table_id)
        return summary

    async def _lobby_reaches_log(self, table_id: str) -> None:
        """A table this replica's lobby does not know may be one another replica made a moment
        ago: when the log has it, wait (at most ``LOBBY_LAG`` seconds) until the lobby has folded
        its events so far, so that NOT_FOUND means the log has no such table."""
        if not table_id or "\x00" in table_id or not streams.is_table_stream(table_id):
            return  # no table's id (PostgreSQL text cannot even hold a NUL to look it up)
        version = await self._store.log.stream_version(table_id)
        if version <= 0:
            return
        last = await self._store.log.read(table_id, after_version=version - 1, limit=1)
        if last:
            await self._lobby_reaches(last[-1].position)

    async def _lobby_reaches_cache(self, table_id: str) -> None:
        """On a log others append to, this replica's streams hear of a table it serves before
        its lobby may (the lobby follows every table's events a few milliseconds behind, up to
        the log's re-read interval when a notification is lost): wait, at most ``LOBBY_LAG``
        seconds, until the lobby has what this replica's cache has of the table, so a summary
        is never behind what this replica's streams have shown."""
        if self._store.log.sole_writer or self._store.cached_version(table_id) <= 0:
            return
        entries = self._store.cached(table_id).entries
        if entries:
            await self._lobby_reaches(entries[-1].position)

    async def _lobby_reaches(self, position: int) -> None:
        """Wait, at most ``LOBBY_LAG`` seconds, until the lobby has folded the log's event at
        ``position`` (past it, the summary is served as the lobby has it)."""
        if self._projection.position < position:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(LOBBY_LAG):
                    await self._projection.caught_up(position)

    async def ListTables(
        self, request: lobby_pb2.ListTablesRequest, context: Context
    ) -> lobby_pb2.ListTablesResponse:
        tables, next_token = await self._projection.page(
            status=request.status,
            public_only=True,
            page_size=request.page_size,
            page_token=request.page_token,
            default_size=DEFAULT_PAGE_SIZE,
            max_size=MAX_PAGE_SIZE,
        )
        return lobby_pb2.ListTablesResponse(tables=tables, next_page_token=next_token)

    async def GetTable(
        self, request: lobby_pb2.GetTableRequest, context: Context
    ) -> lobby_pb2.GetTableResponse:
        return lobby_pb2.GetTableResponse(table=await self._summary(request.table_id))

    async def JoinTable(
        self, request: lobby_pb2.JoinTableRequest, context: Context
    ) -> lobby_pb2.JoinTableResponse:
        account = await self._account_of(context)
        seat = seat_or_any(request.seat)
        request_id = check_request_id(request.request_id)
        if account is not None:
            return await self._join(
                request.table_id,
                seat,
                account.name,
                account.bot,
                request.join_code,
                request_id,
                account,
            )
        name = check_name(request.player_name, "the player name", MAX_PLAYER_NAME, "player_name")
        return await self._join(
            request.table_id, seat, name, request.bot, request.join_code, request_id
        )

    async def _account_of(self, context: Context) -> Account | None:
        """The account whose key the call carries (its seats are recorded as its), or None."""
        key = bearer_key_from(context) if self._accounts is not None else None
        if key is None or self._accounts is None:
            return None
        return await self._accounts.authenticate(key, address=caller_address(context))

    async def _join(
        self,
        table_id: str,
        seat: int | None,
        name: str,
        bot: bool,
        join_code: str,
        request_id: str = "",
        account: Account | None = None,
    ) -> lobby_pb2.JoinTableResponse:
        require_id(table_id)
        if request_id:
            token = tokens.request_seat_token(request_id, table_id)
            request_digest = tokens.digest(request_id)
        else:
            token, request_digest = tokens.new_seat_token(table_id), b""
        account_id = account.account_id if account is not None else ""
        try:
            _, entries = await self._store.execute(
                table_id,
                lambda table: decide_join(
                    table, seat, name, bot, join_code, token, request_digest, account_id
                ),
            )
        except AlreadyJoined as earlier:
            return await self._joined_before(table_id, earlier.seat, token)
        await self._projection.caught_up(entries[-1].position)
        seat_taken = getattr(entries[0].event, "seat", 0)
        log.debug("seat taken", table_id=table_id, seat=seat_taken, sequence=entries[0].sequence)
        return lobby_pb2.JoinTableResponse(
            table_id=table_id,
            seat=protocol.seat_to_proto(seat_taken),
            seat_token=token,
            account_id=account_id,
        )

    async def seat_house_account(
        self, table_id: str, seat: int | None, account: Account
    ) -> tuple[int, str]:
        """Seat one of the server's house-bot accounts (they have no key: the house pool seats
        them here, through the same join and checks as any account): the seat and its token."""
        joined = await self._join(table_id, seat, account.name, True, "", "", account)
        return protocol.seat_from_proto(joined.seat), joined.seat_token

    async def _joined_before(
        self, table_id: str, seat: int, token: str
    ) -> lobby_pb2.JoinTableResponse:
        """The answer to a retried join: its seat and token, if the token still holds it."""
        table = await self._store.load(table_id)
        if not table.is_player(seat, tokens.digest(token)):
            raise errors.refuse(
                Reason.REQUEST_SEAT_GIVEN_UP,
                "the seat this request took was given up since (left, or released because no "
                "stream opened for it); join again with a new request_id",
            )
        await self._projection.caught_up(table.entries[-1].position)
        log.info("join retried", table_id=table_id, seat=seat)
        return lobby_pb2.JoinTableResponse(
            table_id=table_id,
            seat=protocol.seat_to_proto(seat),
            seat_token=token,
            account_id=table.seat_accounts.get(seat, ""),
        )

    async def LeaveTable(
        self, request: lobby_pb2.LeaveTableRequest, context: Context
    ) -> lobby_pb2.LeaveTableResponse:
        token = seat_token_from(context)
        table, seat = await authenticate(self._store, token)
        _, entries = await self._store.execute(
            table.table_id, lambda latest: decide_leave(latest, seat, token)
        )
        await self._projection.caught_up(entries[-1].position)
        return lobby_pb2.LeaveTableResponse(
            table_id=table.table_id, seat=protocol.seat_to_proto(seat)
        )

    async def QuickMatch(
        self, request: lobby_pb2.QuickMatchRequest, context: Context
    ) -> lobby_pb2.QuickMatchResponse:
        request_id = check_request_id(request.request_id)
        account = await self._account_of(context)
        if account is not None:
            name, bot = account.name, account.bot
            check_declared(account, QUICK_MATCH_RULES)
        else:
            name = check_name(
                request.player_name, "the player name", MAX_PLAYER_NAME, "player_name"
            )
            bot = request.bot
            if request.rated:
                raise errors.refuse(
                    Reason.RATED_NEEDS_ACCOUNT,
                    "the rated queue is for accounts: send your account key "
                    "(authorization: Bearer <key>)",
                )
        async with self._quick_match_lock:
            if request_id:
                earlier = await self._quick_matched_before(request_id)
                if earlier is not None:
                    return lobby_pb2.QuickMatchResponse(seat=earlier)
            address = self._limits.check_quick_match(context, self._waiting)
            waiting = self._projection.open_quick_match_tables(rated=request.rated)
            if request.rated and account is not None:
                waiting = await self._by_rating(account, waiting)
            for summary in waiting:
                try:
                    seated = await self._join(
                        summary.table_id, None, name, bot, "", request_id, account
                    )
                except errors.RequestError as error:
                    if error.code is grpc.StatusCode.FAILED_PRECONDITION:
                        continue  # filled or started meanwhile (another replica): next table
                    raise
                return await self._quick_matched(address, seated, account, request.rated)
            table = await self._create(
                "Rated match" if request.rated else "Quick match",
                QUICK_MATCH_RULES,
                private=False,
                join_code="",
                quick_match=True,
                table_id=(
                    tokens.request_table_id(request_id, tokens.CREATED_BY_QUICK_MATCH)
                    if request_id
                    else ""
                ),
                request_id=request_id,
                rated=request.rated,
            )
            seated = await self._join(table.table_id, None, name, bot, "", request_id, account)
            return await self._quick_matched(address, seated, account, request.rated)

    async def _by_rating(
        self, account: Account, waiting: list[lobby_pb2.Table]
    ) -> list[lobby_pb2.Table]:
        """The waiting rated tables of the queue's pool ``account`` may be paired at, the best
        first (:mod:`spades_server.domain.pairing`)."""
        pool_name = ratings.pool_of(QUICK_MATCH_RULES)
        if self._pools is None or pool_name is None:
            return waiting
        pool = await self._pools.load(pool_name)
        now = self._clock.now()
        tables = {}
        candidates = []
        for summary in waiting:
            if ratings.pool_of(protocol.rules_from_proto(summary.rules)) != pool_name:
                continue
            seated = {seat.account_id for seat in summary.seats if seat.account_id}
            mus = [pool.standing(account_id).mu for account_id in seated]
            waited = now - summary.create_time.ToNanoseconds() / 1e9
            tables[summary.table_id] = summary
            candidates.append(
                pairing.WaitingTable(summary.table_id, sum(mus) / len(mus) if mus else None, waited)
            )
        own = pool.standing(account.account_id).mu
        return [tables[table_id] for table_id in pairing.order(own, candidates)]

    async def _quick_matched_before(self, request_id: str) -> lobby_pb2.JoinTableResponse | None:
        """The seat a QuickMatch with ``request_id`` took before, if the lobby knows one."""
        if not self._store.log.sole_writer:
            # Another replica may have seated this request a moment ago: read up to the log's
            # head first (a sole writer's lobby is there once each of its joins returned).
            while batch := await self._store.log.read_all(
                self._projection.position, limit=_CATCH_UP_BATCH
            ):
                await self._projection.caught_up(batch[-1].position)
                if len(batch) < _CATCH_UP_BATCH:
                    break
        found = self._projection.quick_match_seat(tokens.digest(request_id))
        if found is None:
            return None
        table_id, seat = found
        return await self._joined_before(
            table_id, seat, tokens.request_seat_token(request_id, table_id)
        )

    async def _quick_matched(
        self,
        address: str,
        seated: lobby_pb2.JoinTableResponse,
        account: Account | None,
        rated: bool,
    ) -> lobby_pb2.QuickMatchResponse:
        seat = protocol.seat_from_proto(seated.seat)
        self._limits.quick_match_seated(address, seated.table_id, seat)
        if account is not None and self._accounts is not None:
            # The account's stream (AccountService.Connect) says where it was seated.
            table = self._store.cached(seated.table_id)
            held = sorted(s for s, a in table.seat_accounts.items() if a == account.account_id)
            seats = [protocol.seat_to_proto(s) for s in held]
            await self._accounts.execute(
                account.account_id,
                lambda _: accounts.decide_assignment(seated.table_id, seats, rated),
            )
        return lobby_pb2.QuickMatchResponse(seat=seated, wait=self._queue_wait(seated, rated))

    def _queue_wait(self, seated: lobby_pb2.JoinTableResponse, rated: bool) -> lobby_pb2.QueueWait:
        """What the table the queue seated a player at waits for: its free seats, and when house
        bots fill them."""
        state = self._store.cached(seated.table_id).state
        waiting = state.phase is Phase.WAITING_FOR_PLAYERS
        needed = sum(1 for player in state.players if player is None) if waiting else 0
        wait = lobby_pb2.QueueWait(players_needed=needed)
        fills_in = (
            self._house_bots.fills_in(seated.table_id, rated)
            if needed and self._house_bots is not None
            else None
        )
        if fills_in is not None:
            wait.house_bots_in.FromTimedelta(timedelta(seconds=round(fills_in)))
        return wait

    def _waiting(self, table_id: str, seat: int) -> bool:
        """Whether ``seat`` at ``table_id`` is still taken at a table that has not started."""
        summary = self._projection.summary(table_id)
        return (
            summary is not None
            and summary.status == lobby_pb2.TABLE_STATUS_WAITING
            and summary.seats[seat].occupied
        )

    async def AddHouseBot(
        self, request: lobby_pb2.AddHouseBotRequest, context: Context
    ) -> lobby_pb2.AddHouseBotResponse:
        # The pool joins through this same service (house.py): the table's own checks apply.
        if self._house_bots is None:
            raise errors.refuse(Reason.HOUSE_BOTS_OFF, "this server runs no house bots")
        kind = house_bot_kind(request.kind)
        if kind is None:
            raise errors.refuse(
                Reason.UNKNOWN_HOUSE_BOT, f"there is no house bot kind {request.kind}", field="kind"
            )
        seat = seat_or_any(request.seat)
        request_id = check_request_id(request.request_id)
        bot = await self._house_bots.add(
            request.table_id, seat, kind, request.join_code, request_id=request_id
        )
        return lobby_pb2.AddHouseBotResponse(
            table_id=bot.table_id, seat=protocol.seat_to_proto(bot.seat), player_name=bot.name
        )
