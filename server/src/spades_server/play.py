"""PlayService: each seat's stream, spectators' streams, and game records.

A stream is a view of the table's log: a snapshot of what the viewer may know at one sequence
number, then every later event redacted for the viewer by the engine, then live events, and a
prompt whenever it is the seat's turn. Actions go through the TableStore like every command.

While a substitute (a house bot, see ``absent.py``) plays a seat, the substitute's token is
accepted for it and gets the prompts; the player's own stream keeps its events but no prompts,
and its actions are refused. The player takes the seat back by opening a Play stream with its
own token (``SeatReclaimed``); the substitute's stream is then closed and its token refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import grpc
import structlog

from spades import protocol, records
from spades.engine import Concede, IllegalAction, Viewer, redact, view, visible_legal_actions
from spades.engine.events import SubstitutionReason
from spades.v1 import events_pb2, play_pb2, play_pb2_grpc
from spades_server import errors, metrics, tokens
from spades_server.absent import AbsentPlayers, decide_reclaim
from spades_server.clock import deadline_of
from spades_server.limits import Limits
from spades_server.lobby import authenticate, seat_token_from
from spades_server.tables import Table, TableStore, timestamp, to_proto_events

log = structlog.get_logger(__name__)
Context = grpc.aio.ServicerContext[Any, Any]

MAX_ACTION_ID = 64
STREAM_QUEUE_SIZE = 1024


SUPERSEDED = "a newer stream for this seat took over, so this one is closed"


@dataclass(frozen=True)
class SeatSession:
    """One open Play stream: whose seat it plays, with which credential."""

    table_id: str
    seat: int
    #: Digest of the token the stream was opened with.
    holder: bytes
    #: True when the token is a house bot's, standing in for an absent player.
    substitute: bool
    #: Set when a newer stream for the seat replaces this one.
    superseded: asyncio.Event
    log: structlog.BoundLogger


class AlreadyAnswered(Exception):
    def __init__(self, sequence: int) -> None:
        self.sequence = sequence


class Shutdown:
    """Signals streams that the server is going away."""

    def __init__(self) -> None:
        self.event = asyncio.Event()


def redacted(table: Table, index: int, viewer: Viewer) -> events_pb2.Event:
    """Stored event number ``index`` (0-based) as ``viewer`` may see it.

    The engine's redaction decides; when it hides nothing, the stored message itself goes out
    (no conversion per viewer). The server's own secrets (digests of seat tokens and join
    codes) were taken out of the kept messages when they were folded (``Table.fold``).
    """
    stored = table.events[index]
    engine_event = table.engine_events[index]
    shown = redact(engine_event, viewer)
    if shown is engine_event:
        return stored
    out = protocol.event_to_proto(shown)
    out.sequence = stored.sequence
    out.time.CopyFrom(stored.time)
    out.action_id = stored.action_id
    return out


_GIVEN_UP = "this seat was given up, so its token is no longer valid"
_TAKEN_BACK = "the seat's player took it back, so this substitute's token is no longer valid"
_SUBSTITUTED = (
    "a house bot plays this seat since you were away; open a new Play stream with your seat "
    "token to take it back"
)


def check_holder(table: Table, seat: int, holder: bytes, substitute: bool) -> None:
    """UNAUTHENTICATED unless ``holder`` (a token digest) may still act for the seat: its own
    player's, or (for a substitute's stream) the substitute's while the substitution lasts."""
    if substitute:
        if not table.is_substitute(seat, holder):
            raise errors.unauthenticated(_TAKEN_BACK)
    elif not table.is_player(seat, holder):
        raise errors.unauthenticated(_GIVEN_UP)


def snapshot(table: Table, sequence: int, viewer: Viewer) -> play_pb2.Snapshot:
    state = table.state_at(sequence)
    return play_pb2.Snapshot(sequence=sequence, view=protocol.view_to_proto(view(state, viewer)))


class PlayServicer(play_pb2_grpc.PlayServiceServicer):
    def __init__(
        self,
        store: TableStore,
        shutdown: Shutdown,
        limits: Limits | None = None,
        absent: AbsentPlayers | None = None,
    ) -> None:
        self._store = store
        self._shutdown = shutdown
        self._limits = limits or Limits()
        self._absent = absent
        #: The open Play stream of each (table, seat, token digest): set when a newer one with
        #: the same token replaces it (a seat's player and its substitute each have their own).
        self._seat_streams: dict[tuple[str, int, bytes], asyncio.Event] = {}

    async def Play(
        self,
        request_iterator: AsyncIterator[play_pb2.PlayRequest],
        context: Context,
    ) -> AsyncIterator[play_pb2.PlayResponse]:
        token = seat_token_from(context)
        table, seat = await authenticate(self._store, token)
        holder = tokens.digest(token)
        substitute = table.is_substitute(seat, holder)
        first = await anext(aiter(request_iterator), None)
        if first is None or first.WhichOneof("kind") != "start":
            raise errors.invalid("the first message of a Play stream must be `start`")
        start = first.start
        after = _check_after(table, start.after_sequence)
        bound = log.bind(table_id=table.table_id, seat=seat, substitute=substitute)
        if not substitute and table.state.substitutions[seat] is not None:
            # The player is back: it takes its seat from the substitute before anything is sent.
            await self._reclaim(table.table_id, seat, holder, bound)
        bound.info("play stream opened", sequence=after)
        # One stream per seat and token: the newer wins, the older is closed with a clear status.
        key = (table.table_id, seat, holder)
        previous = self._seat_streams.get(key)
        if previous is not None:
            previous.set()
            self._store.poke(table.table_id)
        superseded = self._seat_streams[key] = asyncio.Event()
        outgoing: asyncio.Queue[play_pb2.PlayResponse] = asyncio.Queue(STREAM_QUEUE_SIZE)
        session = SeatSession(table.table_id, seat, holder, substitute, superseded, bound)
        actions = asyncio.create_task(self._handle_actions(request_iterator, session, outgoing))
        metrics.OPEN_STREAMS.labels("play").inc()
        if self._absent is not None and not substitute:
            self._absent.stream_opened(table.table_id, seat)
        try:
            async for message in self._feed(
                table.table_id, after, seat, outgoing, actions, superseded, holder, substitute
            ):
                yield message
        finally:
            if self._absent is not None and not substitute:
                self._absent.stream_closed(table.table_id, seat)
            if self._seat_streams.get(key) is superseded:
                del self._seat_streams[key]
            metrics.OPEN_STREAMS.labels("play").dec()
            actions.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await actions
            bound.info("play stream closed")

    async def Watch(
        self, request: play_pb2.WatchRequest, context: Context
    ) -> AsyncIterator[play_pb2.WatchResponse]:
        table = await self._store.load(request.table_id)
        after = _check_after(table, request.after_sequence)
        metrics.OPEN_STREAMS.labels("watch").inc()
        try:
            async for message in self._feed(
                table.table_id, after, None, None, None, None, b"", False
            ):
                kind = message.WhichOneof("kind")
                if kind == "snapshot":
                    yield play_pb2.WatchResponse(snapshot=message.snapshot)
                elif kind == "event":
                    yield play_pb2.WatchResponse(event=message.event)
        finally:
            metrics.OPEN_STREAMS.labels("watch").dec()

    async def GetRecord(
        self, request: play_pb2.GetRecordRequest, context: Context
    ) -> play_pb2.GetRecordResponse:
        table = await self._store.load(request.table_id)
        # Public (spectator's events, no seed) until the match ends, then the whole record.
        record = records.build_record(table.engine_events, table_id=table.table_id)
        return play_pb2.GetRecordResponse(record=record)

    async def _feed(
        self,
        table_id: str,
        after: int,
        viewer: Viewer,
        outgoing: asyncio.Queue[play_pb2.PlayResponse] | None,
        actions: asyncio.Task[None] | None,
        superseded: asyncio.Event | None,
        holder: bytes,
        substitute: bool,
    ) -> AsyncIterator[play_pb2.PlayResponse]:
        """Snapshot at ``after``, then every later event, then live ones; prompts for a seat
        (for its substitute's stream while one plays it)."""
        table = await self._store.load(table_id)
        if viewer is not None:
            # Checked again here: the token may have given the seat up while the stream waited
            # for its first message, and the snapshot would show the next occupant's cards.
            check_holder(table, viewer, holder, substitute)
        position = after or table.version
        yield play_pb2.PlayResponse(snapshot=snapshot(table, position, viewer))
        prompted = -1
        reclaim_tried = -1
        while True:
            table = self._store.cached(table_id)
            if viewer is not None:
                # Checked against the latest state before anything more is sent: a player who
                # gave the seat up never sees what its next occupant is dealt, nor a substitute
                # anything after its player took the seat back.
                check_holder(table, viewer, holder, substitute)
                replaced = table.state.substitutions[viewer]
                if (
                    replaced is SubstitutionReason.DISCONNECTED
                    and not substitute
                    and reclaim_tried != table.version
                ):
                    # Substituted as disconnected (by another replica) while this stream of
                    # its player is open: the player is here, so it takes the seat back.
                    reclaim_tried = table.version
                    await self._reclaim(table_id, viewer, holder, log.bind(table_id=table_id))
                    continue
            while position < table.version:
                position += 1
                yield play_pb2.PlayResponse(event=redacted(table, position - 1, viewer))
            legal = (
                visible_legal_actions(table.state, viewer)
                if viewer is not None
                and table.state.turn == viewer
                and prompted != position
                and (substitute or table.state.substitutions[viewer] is None)
                else []
            )
            if legal:
                prompted = position
                prompt = play_pb2.TurnPrompt(
                    sequence=position,
                    legal_actions=[protocol.action_to_proto(action) for action in legal],
                )
                deadline = deadline_of(table)
                if deadline is not None:
                    prompt.deadline.CopyFrom(timestamp(deadline))
                yield play_pb2.PlayResponse(prompt=prompt)
            while outgoing is not None and not outgoing.empty():
                yield outgoing.get_nowait()
            if actions is not None and actions.done():
                return  # the client closed its side
            if superseded is not None and superseded.is_set():
                raise errors.RequestError(grpc.StatusCode.ABORTED, SUPERSEDED)
            if self._shutdown.event.is_set():
                raise errors.RequestError(
                    grpc.StatusCode.UNAVAILABLE,
                    "the server is shutting down; reconnect and resume from your last sequence",
                )
            await self._store.wait_for_change(table_id, position, outgoing, self._shutdown.event)

    async def _handle_actions(
        self,
        request_iterator: AsyncIterator[play_pb2.PlayRequest],
        session: SeatSession,
        outgoing: asyncio.Queue[play_pb2.PlayResponse],
    ) -> None:
        table_id = session.table_id
        # The feed waits on the table; poking it when the client closes its side ends it.
        try:
            async for request in request_iterator:
                if request.WhichOneof("kind") != "action":
                    result = play_pb2.ActionResult(
                        accepted=False,
                        code=grpc.StatusCode.INVALID_ARGUMENT.value[0],
                        reason="`start` may only be sent once, first",
                    )
                else:
                    result = await self._act(session, request.action)
                await outgoing.put(play_pb2.PlayResponse(action_result=result))
                self._store.poke(table_id)
        finally:
            self._store.poke(table_id)

    async def _act(
        self, session: SeatSession, request: play_pb2.ActionRequest
    ) -> play_pb2.ActionResult:
        table_id, seat, holder, substitute = (
            session.table_id,
            session.seat,
            session.holder,
            session.substitute,
        )
        bound = session.log
        started = time.perf_counter()
        kind = request.action.WhichOneof("kind") or "none"
        result = play_pb2.ActionResult(action_id=request.action_id)
        try:
            # Per seat and per connection (RESOURCE_EXHAUSTED, "retry in 0.25 s").
            self._limits.check_action(table_id, seat)
            if not 1 <= len(request.action_id) <= MAX_ACTION_ID:
                raise errors.invalid(f"action_id must be 1 to {MAX_ACTION_ID} characters")
            try:
                action = protocol.action_from_proto(request.action)
            except protocol.ProtocolError as error:
                raise errors.invalid(str(error)) from error

            def decide(table: Table) -> list[events_pb2.Event]:
                if session.superseded.is_set():
                    # Checked here too: a replaced stream stuck writing to its client still
                    # reads the client's actions, and must not act for the seat any more.
                    raise errors.RequestError(grpc.StatusCode.ABORTED, SUPERSEDED)
                check_holder(table, seat, holder, substitute)
                first = table.answered_actions.get((seat, request.action_id))
                if first is not None:
                    raise AlreadyAnswered(first)
                if table.finished:
                    raise errors.precondition("the match is over")
                if substitute and isinstance(action, Concede):
                    raise errors.denied("a substitute may not concede for the seat's player")
                if not substitute and table.state.substitutions[seat] is not None:
                    raise errors.precondition(_SUBSTITUTED)
                if request.sequence != table.version:
                    raise errors.RequestError(
                        grpc.StatusCode.ABORTED,
                        f"stale: this answers sequence {request.sequence}, but the table is at "
                        f"{table.version}",
                    )
                try:
                    _, engine_events = table.state.apply(seat, action)
                except IllegalAction as error:
                    raise errors.precondition(error.reason) from error
                return to_proto_events(engine_events, request.action_id)

            table, stored = await self._store.execute(table_id, decide)
            result.accepted = True
            result.sequence = stored[0].version
            metrics.ACTIONS.labels(kind, "accepted").inc()
            # Every action at debug: at info a few busy tables would bury what an operator reads.
            bound.debug("action applied", action=kind, sequence=result.sequence)
            if table.finished:
                bound.info("table finished", sequence=table.version)
        except AlreadyAnswered as answered:
            result.accepted = True
            result.sequence = answered.sequence
            metrics.ACTIONS.labels(kind, "repeated").inc()
        except errors.RequestError as error:
            result.accepted = False
            result.code = error.code.value[0]
            result.reason = error.reason
            metrics.ACTIONS.labels(kind, "refused").inc()
            metrics.ERRORS.labels(error.code.name).inc()
            # A stale action (ABORTED) is the normal race of a resent answer: not worth a look.
            stale = error.code is grpc.StatusCode.ABORTED
            (bound.debug if stale else bound.info)(
                "action refused", action=kind, code=error.code.name, reason=error.reason
            )
        metrics.ACTION_SECONDS.observe(time.perf_counter() - started)
        return result

    async def _reclaim(
        self, table_id: str, seat: int, holder: bytes, bound: structlog.BoundLogger
    ) -> None:
        """The seat's player is back: append SeatReclaimed (once, whichever process does it)."""
        _, stored = await self._store.execute(
            table_id, lambda table: decide_reclaim(table, seat, holder)
        )
        if stored:
            bound.info("seat reclaimed", seat=seat, sequence=stored[0].version)


def _check_after(table: Table, after: int) -> int:
    if after > table.version:
        raise errors.RequestError(
            grpc.StatusCode.OUT_OF_RANGE,
            f"after_sequence {after} is past the table's latest sequence {table.version}",
        )
    return after
