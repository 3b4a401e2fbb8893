"""What follows a challenge's events: the table made when all accepted, the accounts told, expiry.

:class:`Challenges` runs each use case (create, accept, decline, cancel) through the store and
then its side effects (the table, the accounts' streams); :class:`ChallengeSweeper` expires
pending challenges whose time ran out, on any replica, exactly once (the log's expected version)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Final

import grpc
import structlog

from spades import protocol
from spades.engine import events as ev
from spades.engine import new_match
from spades.v1 import (
    account_pb2,
    challenge_pb2,
)
from spades_server.domain import errors, tokens
from spades_server.domain.accounts import Account, AccountDecided
from spades_server.domain.challenges import (
    ACCEPTED,
    EXPIRED,
    PENDING,
    ChallengeState,
    decide_expiry,
    decide_match_end,
    table_request_id,
)
from spades_server.domain.decisions import AlreadyJoined, decide_join, decide_new_table
from spades_server.domain.tables import Decided, Table
from spades_server.ops.clocks import SYSTEM_CLOCK, Clock
from spades_server.ops.tasks import stop_tasks
from spades_server.processes.projection import LobbyProjection, open_table
from spades_server.store.account_store import AccountStore
from spades_server.store.challenge_store import ChallengeStore
from spades_server.store.table_store import TableStore
from spades_server.v1 import log_pb2

log = structlog.get_logger()

#: How often the sweeper looks for challenges past their expiry.
SWEEP_INTERVAL: Final = 1.0


#: Seconds past its expiry after which an ended challenge leaves the cache.
FORGET_AFTER: Final = 60.0


# ---------------------------------------------------------------------------------- effects


def _told_once(
    told: Callable[[Account], bool], event: account_pb2.AccountEvent
) -> Callable[[Account], AccountDecided | None]:
    def decide(account: Account) -> AccountDecided | None:
        if told(account):
            return None
        return AccountDecided([(event, b"", b"")])

    return decide


def _has_challenge(told: tuple[str, bool]) -> Callable[[Account], bool]:
    return lambda account: told in account.challenges


def _seat_join(
    seat: int, account: Account, join_code: str, token: str, request_id: str
) -> Callable[[Table], Decided]:

    return lambda table: decide_join(
        table,
        seat,
        account.name,
        account.bot,
        join_code,
        token,
        tokens.digest(request_id),
        account.account_id,
    )


class Challenges:
    """What a challenge does beyond its own stream: tell the parties, open its table."""

    def __init__(
        self,
        store: ChallengeStore,
        accounts_: AccountStore,
        tables: TableStore,
        projection: LobbyProjection,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.store = store
        self.accounts = accounts_
        self.tables = tables
        self.projection = projection
        #: The table of each series' match in play that this replica knows of -> its challenge.
        self._series_tables: dict[str, str] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        #: What says when a challenge is due (and, through it, the API's ``now``).
        self.clock = clock

    async def announce(self, challenge: ChallengeState) -> None:
        """Tell the challenger it made the challenge and each opponent it was challenged."""
        made = challenge.message
        challenge_id = challenge.challenge_id
        for party in challenge.parties():
            outgoing = party == made.challenger_id
            event = (
                account_pb2.AccountEvent(
                    challenge_issued=account_pb2.ChallengeIssued(challenge=made)
                )
                if outgoing
                else account_pb2.AccountEvent(
                    challenge_received=account_pb2.ChallengeReceived(challenge=made)
                )
            )
            told = (challenge_id, outgoing)
            await self.accounts.execute(party, _told_once(_has_challenge(told), event))

    async def answered(self, challenge: ChallengeState, entry: log_pb2.ChallengeLogEntry) -> None:
        """Tell every party of an answer (or the expiry); open the table when it is the last
        acceptance."""
        state = challenge.message.state
        kind = entry.WhichOneof("kind")
        who = ""
        reason = challenge_pb2.DECLINE_REASON_UNSPECIFIED
        if kind == "accepted":
            who = entry.accepted.account_id
        elif kind == "declined":
            who, reason = entry.declined.account_id, entry.declined.reason
        elif kind == "cancelled":
            who = challenge.message.challenger_id
        if state == ACCEPTED:
            await self.open_table(challenge)
            self.follow_series(challenge)
        answer = account_pb2.ChallengeAnswered(
            challenge_id=challenge.challenge_id,
            state=state,
            account_id=who,
            accepted=kind == "accepted",
            decline_reason=reason,
            table_id=challenge.message.table_id if state == ACCEPTED else "",
        )
        key = (answer.challenge_id, answer.account_id, answer.state)
        for party in challenge.parties():
            await self.accounts.execute(
                party,
                _told_once(
                    lambda a: key in a.challenge_answers,
                    account_pb2.AccountEvent(challenge_answered=answer),
                ),
            )
        if state == ACCEPTED:
            await self.assign_seats(challenge)

    async def open_table(self, challenge: ChallengeState) -> None:
        """Open the challenge's table with every seat held by its account (idempotent: the
        table's id and each join's request digest derive from the challenge)."""
        made = challenge.message
        table_id = made.table_id
        match = len(made.series)
        request_id = table_request_id(challenge.challenge_id, match)
        rules = protocol.rules_from_proto(made.rules)
        join_code = tokens.request_join_code(request_id, table_id)
        name_of = {made.challenger_id: made.challenger_name}
        name_of.update((o.account_id, o.name) for o in made.opponents)
        names = [name_of[party] for party in challenge.seated_parties()]  # who plays
        count = f" ({match + 1}/{challenge.series_length})" if challenge.series_length > 1 else ""
        title = ("Challenge: " + " v ".join(names))[: 64 - len(count)] + count
        decided = decide_new_table(
            new_match(rules),
            name=title,
            private=True,
            join_code=join_code,
            request_digest=tokens.digest(request_id),
            rated=made.rated,
        )
        await open_table(
            self.tables, self.projection, decided, table_id=table_id, request_id=request_id
        )
        for holder in made.seating:
            account = await self.accounts.load(holder.account_id)
            seat = protocol.seat_from_proto(holder.seat)
            seat_request = f"{request_id}-{seat}"
            token = tokens.request_seat_token(seat_request, table_id)
            with contextlib.suppress(AlreadyJoined):
                _, entries = await self.tables.execute(
                    table_id, _seat_join(seat, account, join_code, token, seat_request)
                )
                await self.projection.caught_up(entries[-1].position)
        log.info("challenge table opened", challenge_id=challenge.challenge_id, table_id=table_id)

    async def assign_seats(self, challenge: ChallengeState) -> None:
        made = challenge.message
        for party in challenge.seated_parties():
            assigned = account_pb2.TableAssigned(
                table_id=made.table_id, seats=challenge.seats_of(party), rated=made.rated
            )
            await self.accounts.execute(
                party,
                _told_once(
                    lambda a: made.table_id in a.assigned_tables,
                    account_pb2.AccountEvent(table_assigned=assigned),
                ),
            )

    async def settle(self, challenge_id: str) -> ChallengeState:
        """The challenge, its expiry appended (and told) if it is due, its table opened (and
        told) if a crash came between its last acceptance and the table."""
        before = await self.store.load(challenge_id)
        if before.message.state == ACCEPTED and not await self._table_ready(before):
            log.info("finishing an accepted challenge", challenge_id=challenge_id)
            if before.message.series:  # a crash between a match's end and the next table
                await self._open_next(before)
            else:
                last = log_pb2.ChallengeAcceptance(table_id=before.message.table_id)
                await self.answered(before, log_pb2.ChallengeLogEntry(accepted=last))
        if before.series_in_play:
            before = await self.match_over(challenge_id)
        if not before.due(self.clock.now()):
            return before
        return await self.expire(challenge_id)

    async def _table_ready(self, challenge: ChallengeState) -> bool:
        """Whether the accepted challenge's table exists with every seat held, and every
        party was told of it."""
        try:
            table = await self.tables.load(challenge.message.table_id)
        except errors.RequestError as error:
            if error.code is grpc.StatusCode.NOT_FOUND:
                return False
            raise
        if len(table.seat_accounts) != len(challenge.message.seating) and not table.started:
            return False
        for party in challenge.seated_parties():  # and every party at it was told
            if challenge.message.table_id not in (await self.accounts.load(party)).assigned_tables:
                return False
        return True

    # -- series ---------------------------------------------------------------------------------

    def follow_series(self, challenge: ChallengeState) -> None:
        """Remember the table of a series' match in play, so that its end starts the next."""
        if challenge.series_in_play:
            self._series_tables[challenge.message.table_id] = challenge.challenge_id

    def table_changed(self, table: Table) -> None:
        """A table this replica follows changed: if it is a series' match that just ended,
        record its end and open the next match."""
        challenge_id = self._series_tables.get(table.table_id)
        if challenge_id is None or not table.finished:
            return
        del self._series_tables[table.table_id]
        task = asyncio.get_running_loop().create_task(self._match_over_logged(challenge_id))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _match_over_logged(self, challenge_id: str) -> None:
        try:
            await self.match_over(challenge_id)
        except Exception:
            log.exception("series match end not recorded", challenge_id=challenge_id)

    async def match_over(self, challenge_id: str) -> ChallengeState:
        """If the series' match in play has ended, record it (once: the expected version) and
        open and tell the next match's table (idempotent)."""
        challenge = await self.store.load(challenge_id)
        made = challenge.message
        if not challenge.series_in_play:
            return challenge
        try:
            table = await self.tables.load(made.table_id)
        except errors.RequestError as error:
            if error.code is grpc.StatusCode.NOT_FOUND:
                return challenge  # not opened yet: settle opens it
            raise
        ended = next((e for e in reversed(table.events) if isinstance(e, ev.MatchEnded)), None)
        if ended is None:
            return challenge
        scores, winners = list(ended.final_scores), set(ended.winners)
        challenge = await self.store.execute(
            challenge_id, lambda c: decide_match_end(c, table.table_id, scores, winners)
        )
        if challenge.message.table_id != table.table_id:
            await self._open_next(challenge)
        log.info(
            "series match ended",
            challenge_id=challenge_id,
            table_id=table.table_id,
            played=len(challenge.message.series),
            of=challenge.series_length,
        )
        return challenge

    async def _open_next(self, challenge: ChallengeState) -> None:
        await self.open_table(challenge)
        self.follow_series(challenge)
        await self.assign_seats(challenge)

    async def expire(self, challenge_id: str) -> ChallengeState:
        expired: list[log_pb2.ChallengeLogEntry] = []

        def decide(challenge: ChallengeState) -> log_pb2.ChallengeLogEntry | None:
            expired.clear()
            entry = decide_expiry(challenge, self.clock.now())
            if entry is not None:
                expired.append(entry)
            return entry

        challenge = await self.store.execute(challenge_id, decide)
        if challenge.message.state == EXPIRED:
            # Told by whichever replica (or call) sees it first; telling is idempotent.
            ended = log_pb2.ChallengeLogEntry(expired=log_pb2.ChallengeEnded())
            await self.answered(challenge, ended)
            if expired:
                log.info("challenge expired", challenge_id=challenge_id)
        return challenge


# ---------------------------------------------------------------------------------- sweeper


class ChallengeSweeper:
    """Expires the pending challenges this replica has seen, once due (any replica may: the
    expected version lets one expiry through), and finishes accepted ones whose table a crash
    left unopened (idempotent)."""

    def __init__(self, challenges: Challenges, interval: float = SWEEP_INTERVAL) -> None:
        self._challenges = challenges
        self._interval = interval
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="challenge-sweeper")

    async def stop(self) -> None:
        if self._task is None:
            return
        await stop_tasks(self._task)
        self._task = None

    async def sweep(self) -> int:
        """Expire every cached challenge that is due, forget those ended long ago; how many
        it expired."""
        now = self._challenges.clock.now()
        expired = 0
        for challenge in self._challenges.store.cached():
            if challenge.series_in_play:
                # A series' match in play on another replica ends unseen here: look.
                self._challenges.follow_series(challenge)
                try:
                    await self._challenges.match_over(challenge.challenge_id)
                except errors.RequestError as error:
                    log.info("series match not settled yet", reason=error.reason)
            elif challenge.message.state != PENDING and now > challenge.expires_at + FORGET_AFTER:
                # Ended long ago: nothing left to sweep (a later read loads it again).
                self._challenges.store.forget(challenge.challenge_id)
            elif challenge.due(now):
                try:
                    await self._challenges.expire(challenge.challenge_id)
                    expired += 1
                except errors.RequestError as error:
                    log.info("challenge not expired yet", reason=error.reason)
        return expired

    async def _run(self) -> None:
        while True:
            await self._challenges.clock.sleep(self._interval)
            try:
                await self.sweep()
            except Exception:
                log.exception("challenge sweep failed")
