"""Playing a seat to the end of its match: the stream, the prompts, and surviving drops.

:func:`play_match` opens the seat's Play stream, folds every event into the bot's view,
answers each prompt with the bot's (validated) decision, and when the connection drops,
reconnects with exponential back-off and resumes from the last sequence it folded.

No action is lost or repeated across a drop: an action keeps its action id until its result
(or an event it caused) has been seen, and after reconnecting every such action is sent again
under the same id and for the same sequence. The server applies an id at most once and answers
a repeat with the first result; an action the table has moved past is refused as stale.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TypeVar

import grpc

from spades.bot.base import Bot, automatic_answer, decide, turn_extra
from spades.bot.view import BotView, SeatTracker
from spades.client.client import Channel, SpadesClient
from spades.client.connection import SeatConnection, new_action_id
from spades.client.errors import ActionRefused, SpadesError, is_transient
from spades.client.messages import ActionResult, Prompt, Snapshot, StreamEvent
from spades.engine import SEAT_NAMES, Action, Rules
from spades.engine import events as ev
from spades.protocol import seat_from_proto
from spades.v1 import cards_pb2

log = logging.getLogger("spades.bot")
T = TypeVar("T")

#: The table the running task plays (set by :func:`play_match` for its task), which
#: :class:`TableInLog` puts on every log line: an account playing several tables at once (and
#: the bot's own lines, from the decisions) says which table each line is about.
PLAYING_TABLE: ContextVar[str] = ContextVar("spades_playing_table", default="")


class TableInLog(logging.Filter):
    """Gives every record a ``table`` attribute, ``"table ID: "`` while a task plays a table
    and ``""`` otherwise, for a format such as ``"%(levelname)s %(table)s%(message)s"``.
    Attach it to a handler: it then marks the lines of every logger."""

    def filter(self, record: logging.LogRecord) -> bool:
        table = PLAYING_TABLE.get()
        record.table = f"table {table}: " if table else ""
        return True


@dataclass(frozen=True, slots=True)
class Backoff:
    """How long to wait between reconnection attempts, and when to give up."""

    initial: float = 0.2
    maximum: float = 10.0
    multiplier: float = 2.0
    #: Each wait is randomized by up to this fraction, so clients do not reconnect in lockstep.
    jitter: float = 0.2
    #: Give up after failing to reconnect for this many seconds in a row.
    give_up_after: float = 120.0
    #: How a wait is waited (a test passes its clock's, to move time on instead of waiting).
    sleep: Callable[[float], Awaitable[None]] = field(
        default=asyncio.sleep, compare=False, repr=False
    )

    def delay(self, attempt: int, rng: random.Random) -> float:
        base = min(self.maximum, self.initial * self.multiplier**attempt)
        return base * (1 + self.jitter * (2 * rng.random() - 1))


class _Retries:
    """One run of failed attempts under a :class:`Backoff`: the next wait, or giving up."""

    def __init__(self, backoff: Backoff) -> None:
        self.backoff = backoff
        self.rng = random.Random()
        self.attempt = 0
        self.failing_since: float | None = None

    def reset(self) -> None:
        """The last attempt got through: the next failure starts a new run."""
        self.attempt = 0
        self.failing_since = None

    def next_delay(self, problem: str) -> float:
        """The wait before the next attempt; raises UNAVAILABLE once the run lasted too long."""
        now = time.monotonic()
        self.failing_since = self.failing_since if self.failing_since is not None else now
        if now - self.failing_since > self.backoff.give_up_after:
            raise SpadesError(
                grpc.StatusCode.UNAVAILABLE,
                f"gave up after {self.backoff.give_up_after:.0f} s: {problem}",
            )
        delay = self.backoff.delay(self.attempt, self.rng)
        self.attempt += 1
        return delay


async def first_contact(
    call: Callable[[], Awaitable[T]],
    server: str,
    backoff: Backoff | None = None,
    client: Channel | None = None,
) -> T:
    """``call()`` (a first request to ``server``), retried with back-off while the server is
    unreachable (UNAVAILABLE), as a dropped stream is: a bot started before its server, or
    during a restart, waits for it instead of exiting at once.

    With ``client``, its connection is tried first: a server that is not there is said at once
    (a call's own retries would take seconds to say anything), and with a back-off that gives
    up after 0 seconds it is given up at once (UNAVAILABLE)."""
    retries = _Retries(backoff or Backoff())
    if client is not None:
        problem = await client.connection_problem()
        if problem is not None:
            give_up_after = retries.backoff.give_up_after
            if give_up_after <= 0:
                raise SpadesError(
                    grpc.StatusCode.UNAVAILABLE, f"{problem}: {NOT_THERE_HINT}; gave up"
                )
            log.error(
                "%s: %s; waiting for it up to %.0f s (--retry-for)",
                problem,
                NOT_THERE_HINT,
                give_up_after,
            )
    while True:
        try:
            return await call()
        except SpadesError as error:
            if error.code is not grpc.StatusCode.UNAVAILABLE:
                raise
            delay = retries.next_delay(f"cannot reach {server}: {error.reason}")
            log.warning(
                "cannot reach %s (%s); retrying in %.1f s (for up to %.0f s)",
                server,
                error.reason,
                delay,
                retries.backoff.give_up_after,
            )
            await retries.backoff.sleep(delay)


#: What to do about a server that is not there, said with the problem.
NOT_THERE_HINT = (
    "is spades-server running there? (make run starts one on 127.0.0.1:50051; --server names "
    "another address)"
)


@dataclass
class MatchOutcome:
    """How a seat's match went."""

    seat: int
    table_id: str
    end: ev.MatchEnded | None
    hand_results: tuple[ev.HandScored, ...]
    view: BotView
    #: Ids of the seat's actions the table applied (each exactly once).
    applied_action_ids: set[str] = field(default_factory=set)
    #: Actions sent again after a reconnect (under their first id).
    resent: int = 0
    #: Decisions replaced by the automatic action (an illegal answer or an exception).
    fallbacks: int = 0
    reconnects: int = 0

    @property
    def won(self) -> bool:
        return self.end is not None and self.seat in self.end.winners

    @property
    def no_winner(self) -> bool:
        """The match ended without a winner (the operator closed the table)."""
        return self.end is not None and not self.end.winners


@dataclass(frozen=True, slots=True)
class _Pending:
    action_id: str
    sequence: int
    action: Action
    #: The action's sealed note (sent again with it, so a resend is the same request).
    note: str = ""


def describe_hand(result: ev.HandScored, rules: Rules) -> str:
    """One line: the hand's bids and tricks per seat, and each side's score and bags."""
    seats = sorted(
        (seat_result for side in result.sides for seat_result in side.seat_results),
        key=lambda seat_result: seat_result.seat,
    )
    bids = " ".join(f"{SEAT_NAMES[s.seat][0]} {s.bid}" for s in seats)
    tricks = " ".join(f"{SEAT_NAMES[s.seat][0]} {s.tricks}" for s in seats)
    scores = ", ".join(
        f"{side_label(side.seats)} {side.total_score} (bags {side.total_bags})"
        for side in result.sides
    )
    return f"hand {result.hand_number}: bids {bids} | tricks {tricks} | scores {scores}"


def side_label(seats: tuple[int, ...]) -> str:
    return "".join(SEAT_NAMES[seat][0] for seat in seats)


def describe_end(end: ev.MatchEnded, seat: int) -> str:
    scores = "/".join(str(score) for score in end.final_scores)
    if not end.winners:  # closed by the operator: no one won, so no one lost either
        return f"match over ({end.reason.value}): no winner, scores {scores}"
    verdict = "won" if seat in end.winners else "lost"
    winners = side_label(end.winners)
    return f"match over ({end.reason.value}): {winners} win, scores {scores}; we {verdict}"


class _SeatPlayer:
    """The state of one seat's play across connections."""

    def __init__(
        self,
        client: SpadesClient,
        bot: Bot,
        token: str,
        table_id: str,
        account_seat: int = -1,
        tell_hands: bool = True,
    ) -> None:
        self.client = client
        #: Log each hand's and the match's result (one of an account's seats at a table does).
        self.tell_hands = tell_hands
        self.bot = bot
        self.token = token
        self.table_id = table_id
        #: Without a token: the seat the client's account holds at the table.
        self.account_seat = account_seat
        self.seat = -1
        self.tracker: SeatTracker | None = None
        self.pending: dict[str, _Pending] = {}
        self.applied: set[str] = set()
        self.resent = 0
        self.fallbacks = 0
        self.refusals_in_a_row = 0
        self.end: ev.MatchEnded | None = None
        self.last_prompt: Prompt | None = None
        self.connected = False

    @property
    def match_delivered(self) -> bool:
        """Whether the match's end and then its last event, the seed revealed, were folded:
        the server owes this seat nothing more but the stream's end."""
        tracker = self.tracker
        return self.end is not None and tracker is not None and tracker.state.seed is not None

    async def run_connection(self) -> bool:
        """Play on one stream; True once the match is over (the server ends the stream after
        its last event), False if the server closed it before."""
        # From the beginning (0): the table's own TableCreated comes first; resumed: after the
        # last event folded.
        after = self.tracker.sequence if self.tracker is not None else 0
        self.connected = False
        if self.token:
            connection = await self.client.play(self.token, after_sequence=after, batched=True)
        else:
            connection = await self.client.play_account_seat(
                self.table_id, self.account_seat, after_sequence=after, batched=True
            )
        self.connected = True
        try:
            assert connection.snapshot is not None
            self._on_snapshot(connection.snapshot)
            for pending in list(self.pending.values()):
                log.info("resending %s (id %s)", pending.action, pending.action_id)
                self.resent += 1
                await connection.send(
                    pending.action, pending.sequence, pending.action_id, note=pending.note
                )
            async for message in connection:
                if isinstance(message, StreamEvent):
                    self._on_event(message)
                elif isinstance(message, Prompt):
                    await self._on_prompt(connection, message)
                elif isinstance(message, ActionResult):
                    await self._on_result(connection, message)
            return self.end is not None
        finally:
            await connection.close()

    def _on_snapshot(self, snapshot: Snapshot) -> None:
        if self.tracker is not None:
            return  # resuming: the events after our sequence follow
        viewer = snapshot.view.viewer
        if viewer == cards_pb2.SEAT_UNSPECIFIED:
            raise SpadesError(grpc.StatusCode.INTERNAL, "the Play stream's snapshot has no seat")
        self.seat = seat_from_proto(viewer)
        # The snapshot at sequence 0 is empty: the events from TableCreated on build the view.
        self.tracker = SeatTracker(self.seat)

    def _on_event(self, message: StreamEvent) -> None:
        tracker = self.tracker
        assert tracker is not None
        if message.sequence <= tracker.sequence:
            return  # already folded (never expected: the stream resumes after our sequence)
        tracker.fold(message.event, message.sequence)
        if message.action_id and message.action_id in self.pending:
            self.pending.pop(message.action_id)
            self.applied.add(message.action_id)
        event = message.event
        current = tracker.view()
        self.bot.on_event(event, current)
        if isinstance(event, ev.HandScored):
            if self.tell_hands:
                log.info(describe_hand(event, current.rules))
            self.bot.on_hand_end(event, current)
        elif isinstance(event, ev.MatchEnded):
            self.end = event
            if self.tell_hands:
                log.info(describe_end(event, self.seat))
            self.bot.on_match_end(event, current)

    async def _on_prompt(self, connection: SeatConnection, prompt: Prompt) -> None:
        if any(pending.sequence == prompt.sequence for pending in self.pending.values()):
            return  # an action answering this prompt is on its way
        assert self.tracker is not None
        self.last_prompt = prompt
        view = self.tracker.view(prompt.legal_actions, prompt.deadline)
        extra = await turn_extra(self.bot, view)
        if extra is not None:
            # A concession ends the match; a claimed extension moves the table on, and the
            # next prompt (with the later deadline) asks for the move.
            log.info("%s: %s", SEAT_NAMES[self.seat], type(extra).__name__)
            await self._send(connection, extra, prompt.sequence)
            return
        decision = await decide(self.bot, view)
        self.fallbacks += decision.replaced
        await self._send(connection, decision.action, prompt.sequence, decision.note)

    async def _send(
        self, connection: SeatConnection, action: Action, sequence: int, note: str = ""
    ) -> None:
        pending = _Pending(new_action_id(), sequence, action, note)
        # Remembered before sending: if the connection drops now, it is resent under this id.
        self.pending[pending.action_id] = pending
        await connection.send(action, sequence, pending.action_id, note=note)

    async def _on_result(self, connection: SeatConnection, result: ActionResult) -> None:
        pending = self.pending.pop(result.action_id, None)
        if result.accepted:
            self.applied.add(result.action_id)
            self.refusals_in_a_row = 0
            return
        if pending is not None and result.details.retry_delay is not None:
            # Rate limited: the server's RetryInfo says how long to wait; then the same action
            # goes again (under a new id: the refused one keeps its answer).
            log.info("action %s rate limited: %s", result.action_id, result.reason)
            await asyncio.sleep(result.details.retry_delay)
            await self._send(connection, pending.action, pending.sequence, pending.note)
            return
        if pending is None or result.code == grpc.StatusCode.ABORTED:
            # Stale: the table moved on (another prompt follows if it is still our turn).
            log.debug("action %s not applied: %s", result.action_id, result.reason)
            return
        self.refusals_in_a_row += 1
        log.warning("the server refused %s: %s", pending.action, result.reason)
        prompt = self.last_prompt
        if self.refusals_in_a_row > 1 or prompt is None or prompt.sequence != pending.sequence:
            raise ActionRefused(result.code, result.reason, result.details)
        self.fallbacks += 1
        assert self.tracker is not None
        fallback = automatic_answer(self.tracker.view(prompt.legal_actions))
        await self._send(connection, fallback, prompt.sequence)

    def outcome(self, reconnects: int) -> MatchOutcome:
        assert self.tracker is not None
        current = self.tracker.view()
        return MatchOutcome(
            seat=self.seat,
            table_id=self.table_id,
            end=self.end,
            hand_results=current.hand_results,
            view=current,
            applied_action_ids=set(self.applied),
            resent=self.resent,
            fallbacks=self.fallbacks,
            reconnects=reconnects,
        )


async def play_match(
    client: SpadesClient,
    bot: Bot,
    seat_token: str,
    *,
    table_id: str = "",
    backoff: Backoff | None = None,
    account_seat: int | None = None,
    tell_hands: bool = True,
) -> MatchOutcome:
    """Play the seat of ``seat_token`` with ``bot`` until its match ends; with an empty
    ``seat_token``, the seat ``account_seat`` the client's account holds at ``table_id``.

    Each hand's result and the match's are logged unless ``tell_hands`` is False (a second seat
    of one account at the table: its lines would repeat the first's). While it plays, the
    task's log lines name the table (:class:`TableInLog`).

    Dropped connections (UNAVAILABLE, a reset stream, a restarting server) are retried with
    exponential back-off; any other refusal raises its :class:`~spades.client.SpadesError`. A
    stream reset after the match's last event ends the match as its OK would (a proxy may reset
    a stream the server ended first).
    """
    retries = _Retries(backoff or Backoff())
    if not seat_token and (account_seat is None or not table_id):
        raise ValueError("play a seat token, or an account's seat (table_id and account_seat)")
    player = _SeatPlayer(
        client, bot, seat_token, table_id, -1 if account_seat is None else account_seat, tell_hands
    )
    # A seat token starts with its table's id (tokens.py: "<table id>.<secret>").
    playing = PLAYING_TABLE.set(table_id or seat_token.partition(".")[0])
    try:
        return await _play_to_the_end(player, retries)
    finally:
        PLAYING_TABLE.reset(playing)


async def _play_to_the_end(player: _SeatPlayer, retries: _Retries) -> MatchOutcome:
    reconnects = 0
    while True:
        try:
            if await player.run_connection():
                return player.outcome(reconnects)
            problem = "the server closed the stream"
        except SpadesError as error:
            if not is_transient(error):
                raise
            if player.match_delivered:
                # The match's last event came, so only the stream's OK was owed, and it was lost
                # on the way: a proxy that sees the server end a call before the client did
                # (haproxy before 3.2, issue 1219) resets it, and the client reads CANCELLED.
                return player.outcome(reconnects)
            problem = str(error)
        if player.connected:  # the stream had opened: this is a new run of failures
            retries.reset()
        delay = retries.next_delay(f"reconnecting: {problem}")
        sequence = player.tracker.sequence if player.tracker is not None else 0
        log.warning(
            "connection lost (%s); reconnecting in %.1f s from sequence %d",
            problem,
            delay,
            sequence,
        )
        await retries.backoff.sleep(delay)
        reconnects += 1
