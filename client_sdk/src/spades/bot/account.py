"""Running an account unattended: follow its stream, answer challenges, play every table.

:class:`AccountRunner` is what ``spades-bot --config`` runs (and what tournaments and rated play
use): given a client made with the account's key and a bot factory, it follows the account's
stream (``AccountService.Connect``), resuming from the last sequence it saw and reconnecting
with back-off; answers each incoming challenge through a policy (a callable returning
:class:`Answer`); and plays every table assigned to the account (``table_assigned``: a quick
match, an accepted challenge, a tournament pairing), every seat it holds there with its own
bot instance, at most ``max_games`` tables at once. Only one stream per account is served (the
newest wins): when another runner for the account connects, this one stops
(:class:`Superseded`) instead of fighting it. ``tables`` names the tables it has sat down at,
``playing`` counts those still in play.

>>> async def main(key: str) -> None:  # doctest: +SKIP
...     async with SpadesClient("127.0.0.1:50051", account_key=key) as client:
...         runner = AccountRunner(client, HeuristicBot, policy=accept_all)
...         await runner.run()
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from spades.bot.base import Bot
from spades.bot.runner import Backoff, MatchOutcome, _Retries, play_match
from spades.client.accounts import account_of_credential, rating_change_text
from spades.client.challenges import ChallengeInfo, ChallengeOpponent
from spades.client.client import SpadesClient
from spades.client.errors import SpadesError, is_transient
from spades.engine import SEAT_NAMES
from spades.protocol import seat_from_proto
from spades.reasons import Reason
from spades.v1 import account_pb2

log = logging.getLogger("spades.bot.account")


@dataclass(frozen=True, slots=True)
class Answer:
    """A policy's answer to a challenge: accept, or decline with a reason's name
    (``spades.client.challenges.DECLINE_REASONS``: "later", "rules", "rated", ...)."""

    accept: bool
    reason: str = ""


ACCEPT = Answer(True)

#: Decides on an incoming challenge (may be async).
ChallengePolicy = Callable[[ChallengeInfo], Answer | Awaitable[Answer]]


def accept_all(challenge: ChallengeInfo) -> Answer:
    return ACCEPT


def decline_all(challenge: ChallengeInfo) -> Answer:
    return Answer(False, "later")


class Superseded(SpadesError):
    """A newer stream for the account took over: another runner plays it now."""


@dataclass
class RunnerStats:
    """What a runner did."""

    outcomes: list[MatchOutcome] = field(default_factory=list)
    accepted: list[str] = field(default_factory=list)
    declined: list[str] = field(default_factory=list)
    reconnects: int = 0


class AccountRunner:
    """Follows an account's stream, answers its challenges, plays its tables."""

    def __init__(
        self,
        client: SpadesClient,
        bot_factory: Callable[[], Bot],
        *,
        policy: ChallengePolicy = decline_all,
        max_games: int = 4,
        backoff: Backoff | None = None,
        after_sequence: int = 0,
    ) -> None:
        if not client.account_key:
            raise ValueError("an AccountRunner needs a client made with account_key=")
        if max_games < 1:
            raise ValueError("max_games must be at least 1")
        self.client = client
        self.bot_factory = bot_factory
        self.policy = policy
        self.max_games = max_games
        self.backoff = backoff or Backoff()
        #: The last account event handled: a reconnect resumes after it.
        self.sequence = after_sequence
        self.stats = RunnerStats()
        self._games = asyncio.Semaphore(max_games)
        self._tables: dict[str, asyncio.Task[list[MatchOutcome]]] = {}
        self._answered: set[str] = set()
        #: Seat tokens of the rated queue's seats, by table.
        self._queued: dict[str, str] = {}
        #: Set whenever a table's games end (the rated queue waits on it).
        self.table_done = asyncio.Event()
        self.stopping = asyncio.Event()

    @property
    def tables(self) -> tuple[str, ...]:
        """The ids of the tables this runner has played or plays, in the order it sat down."""
        return tuple(self._tables)

    @property
    def playing(self) -> int:
        """Tables being played now (or waiting for a free game)."""
        return sum(not task.done() for task in self._tables.values())

    def stop(self) -> None:
        """Stop following the stream; :meth:`run` returns once the tables in play end."""
        self.stopping.set()

    def abandon(self) -> None:
        """Stop, and leave the tables in play now (their seats go to the clock)."""
        self.stopping.set()
        for task in self._tables.values():
            task.cancel()

    async def run(self) -> RunnerStats:
        """Follow the stream until :meth:`stop` (then the tables being played are finished),
        another runner takes over (:class:`Superseded`), or the key stops working."""
        retries = _Retries(self.backoff)
        try:
            while not self.stopping.is_set():
                try:
                    await self._follow(retries)
                    problem = "the server ended the account stream"
                except SpadesError as error:
                    if error.reason_code in (Reason.STREAM_REPLACED, "SUPERSEDED"):
                        raise Superseded(error.code, error.reason, error.details) from error
                    if not is_transient(error):
                        raise
                    problem = str(error)
                if self.stopping.is_set():
                    break
                delay = retries.next_delay(f"reconnecting: {problem}")
                log.warning(
                    "account stream lost (%s); reconnecting in %.1f s after sequence %d",
                    problem,
                    delay,
                    self.sequence,
                )
                self.stats.reconnects += 1
                await _sleep_or(delay, self.stopping)
        finally:
            await self.finish()
        return self.stats

    async def finish(self) -> None:
        """Wait for the tables being played; leave those still waiting for players (a queued
        seat is given up: nobody waits on a bot that stopped)."""
        tasks = {tid: task for tid, task in self._tables.items() if not task.done()}
        for table_id, task in tasks.items():
            try:
                waiting = (await self.client.get_table(table_id)).status == "waiting"
            except SpadesError:
                continue
            if waiting:
                task.cancel()
                queued = self._queued.pop(table_id, None)
                if queued is not None:
                    with contextlib.suppress(SpadesError):
                        await self.client.leave_table(queued)
                        log.info("left the rated queue's table %s", table_id)
        if tasks:
            await asyncio.gather(*tasks.values(), return_exceptions=True)

    async def _follow(self, retries: _Retries) -> None:
        stream = self.client.connect(after_sequence=self.sequence)
        stop = asyncio.ensure_future(self.stopping.wait())
        try:
            while True:
                following = asyncio.ensure_future(anext(stream))
                await asyncio.wait({following, stop}, return_when=asyncio.FIRST_COMPLETED)
                if stop.done():
                    following.cancel()
                    # The generator must be idle before it is closed.
                    with contextlib.suppress(BaseException):
                        await following
                    return
                try:
                    event = following.result()
                except StopAsyncIteration:
                    return
                retries.reset()
                await self._handle(event)
                self.sequence = event.sequence
        finally:
            stop.cancel()
            await stream.aclose()

    async def _handle(self, event: account_pb2.AccountEvent) -> None:
        match event.WhichOneof("kind"):
            case "challenge_received":
                await self._answer(event.challenge_received.challenge.challenge_id)
            case "table_assigned":
                assigned = event.table_assigned
                self._start_table(assigned.table_id, [seat_from_proto(s) for s in assigned.seats])
            case "rating_changed":
                match = event.rating_changed.match
                me = account_of_credential(self.client.account_key)
                if match.table_id in self._tables:  # this run's tables, not replayed history
                    for change in match.changes:
                        if change.account_id == me:
                            said = rating_change_text(change)
                            log.info("table %s rated: %s", match.table_id, said)

    async def _answer(self, challenge_id: str) -> None:
        if challenge_id in self._answered:
            return
        self._answered.add(challenge_id)
        try:
            # Read again: replayed history holds challenges answered or expired long ago.
            challenge = await self.client.get_challenge(challenge_id)
            me = self._me(challenge)
            if challenge.state != "pending" or me is None or me.accepted:
                return
            if self.playing >= self.max_games:
                answer = Answer(False, "too_many_games")
            else:
                decided = self.policy(challenge)
                answer = await decided if inspect.isawaitable(decided) else decided
            if answer.accept:
                await self.client.accept_challenge(challenge_id)
                self.stats.accepted.append(challenge_id)
                log.info("accepted challenge %s from %s", challenge_id, challenge.challenger_name)
            else:
                await self.client.decline_challenge(challenge_id, answer.reason)
                self.stats.declined.append(challenge_id)
                log.info(
                    "declined challenge %s from %s (%s)",
                    challenge_id,
                    challenge.challenger_name,
                    answer.reason or "no reason",
                )
        except SpadesError as error:
            if is_transient(error):
                self._answered.discard(challenge_id)  # answered again after the reconnect
                raise
            # Cancelled, expired or answered meanwhile: nothing to do.
            log.info("challenge %s not answered: %s", challenge_id, error.reason)

    def _me(self, challenge: ChallengeInfo) -> ChallengeOpponent | None:
        account_id = account_of_credential(self.client.account_key)
        return next((o for o in challenge.opponents if o.account_id == account_id), None)

    def _start_table(self, table_id: str, seats: list[int]) -> None:
        if table_id in self._tables or not seats:
            return
        self._tables[table_id] = asyncio.create_task(
            self._play_table(table_id, seats), name=f"table-{table_id}"
        )

    async def _play_table(self, table_id: str, seats: list[int]) -> list[MatchOutcome]:
        async with self._games:
            try:
                table = await self.client.get_table(table_id)
                if table.status == "finished":
                    return []  # replayed history: played before
                log.info(
                    "playing table %s, seats %s",
                    table_id,
                    ", ".join(SEAT_NAMES[seat] for seat in seats),
                )
                outcomes = await asyncio.gather(
                    *(
                        play_match(
                            self.client,
                            self.bot_factory(),
                            "",
                            table_id=table_id,
                            account_seat=seat,
                            backoff=self.backoff,
                            # Both seats of a side (a tournament, a challenge): one tells the
                            # hands, else each line comes twice.
                            tell_hands=seat == seats[0],
                        )
                        for seat in seats
                    )
                )
                self.stats.outcomes.extend(outcomes)
                return list(outcomes)
            except SpadesError as error:
                log.warning("table %s not played: %s", table_id, error.reason)
                return []
            finally:
                self.table_done.set()

    async def queue_rated(self, name: str) -> None:
        """Keep the account in the rated quick-match queue: one table at a time, again as soon
        as it ends, until :meth:`stop`. (The seat is played through the stream's
        ``table_assigned``.)"""
        while not self.stopping.is_set():
            seat = await self.client.quick_match(name, bot=True, rated=True)
            self._queued[seat.table_id] = seat.token  # to give the seat up on stop
            log.info(
                "in the rated queue: seated at table %s%s",
                seat.table_id,
                f"; {seat.wait}" if seat.wait is not None else "",
            )
            while not self.stopping.is_set():
                task = self._tables.get(seat.table_id)
                if task is not None and task.done():
                    break
                self.table_done.clear()
                await _sleep_or(1.0, self.table_done)


async def _sleep_or(seconds: float, event: asyncio.Event) -> None:
    """Sleep ``seconds`` or until ``event`` is set."""
    try:
        async with asyncio.timeout(seconds):
            await event.wait()
    except TimeoutError:
        pass
