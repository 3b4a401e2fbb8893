"""PlayService: each seat's stream, spectators' streams, and game records.

A stream is a view of the table's log, sent by a feed (:mod:`spades_server.streams.feeds`): a
snapshot of what the viewer may know at one sequence number, then every later event redacted for
the viewer by the engine, then live events, and a prompt whenever it is the seat's turn. Actions are
decided by :func:`~spades_server.domain.decisions.decide_action` and go through the TableStore like
every command.

While a substitute (a house bot, see ``absent.py``) plays a seat, the substitute's token is
accepted for it and gets the prompts; the player's own stream keeps its events but no prompts,
and its actions are refused. The player takes the seat back by opening a Play stream with its
own token (``SeatReclaimed``); the substitute's stream is then closed and its token refused.

One stream per seat token, newest wins: a newer Play or Seat stream with the token replaces the
open one, which stops reading actions, sends the results it owes and ends with ABORTED
(``STREAM_REPLACED``). Every stream ends with OK once the match is over and all was sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import grpc
import structlog

from spades import protocol
from spades.engine import legal
from spades.reasons import Reason
from spades.v1 import play_pb2
from spades.wire import SEAT_TOKEN_METADATA
from spades_server.api.auth import authenticate, metadata_value, seat_holder
from spades_server.api.limits import Limits
from spades_server.domain import errors
from spades_server.domain.checks import MAX_ID, check_lengths, check_note
from spades_server.domain.decisions import (
    SUPERSEDED,
    ActionRequest,
    AlreadyAnswered,
    decide_action,
    decide_reclaim,
)
from spades_server.domain.table_events import Entry, Refusal
from spades_server.domain.tables import Table
from spades_server.ops import metrics
from spades_server.processes.absent import AbsentPlayers
from spades_server.processes.unclaimed import UnclaimedSeats
from spades_server.store.account_store import AccountStore
from spades_server.store.table_store import TableStore, refused_again
from spades_server.streams.feeds import (
    Outbox,
    Outgoing,
    SeatFeed,
    SeatSession,
    SpectatorFeed,
    snapshot,
)
from spades_server.streams.records import record_of

log = structlog.get_logger(__name__)
Context = grpc.aio.ServicerContext[Any, Any]

MAX_ACTION_ID = MAX_ID
STREAM_QUEUE_SIZE = 1024


class Shutdown:
    """Signals streams that the server is going away."""

    def __init__(self) -> None:
        self.event = asyncio.Event()


class PlayServicer:
    """PlayService's methods (registered by :func:`spades_server.api.registration.register`:
    the streams write pre-serialised messages, see :mod:`spades_server.streams.frames`)."""

    def __init__(
        self,
        store: TableStore,
        shutdown: Shutdown,
        limits: Limits | None = None,
        absent: AbsentPlayers | None = None,
        unclaimed: UnclaimedSeats | None = None,
        accounts: AccountStore | None = None,
    ) -> None:
        self._store = store
        self._unclaimed = unclaimed
        self._accounts = accounts
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
    ) -> AsyncIterator[Outgoing]:
        opened = await self._open_seat(context)
        first = await anext(aiter(request_iterator), None)
        if first is None or first.WhichOneof("kind") != "start":
            raise errors.refuse(
                Reason.START_EXPECTED, "the first message of a Play stream must be `start`"
            )
        start = first.start
        async with self._seat_feed(
            opened, start.after_sequence, start.latest, request_iterator, start.batched
        ) as feed:
            async for message in feed:
                yield message

    async def Seat(
        self, request: play_pb2.SeatRequest, context: Context
    ) -> AsyncIterator[play_pb2.SeatResponse | bytes]:
        # Play's stream for a client that cannot stream to the server: its actions come
        # through Act, so nothing but the call itself ends this side.
        opened = await self._open_seat(context)
        async with self._seat_feed(
            opened, request.after_sequence, request.latest, None, request.batched
        ) as feed:
            async for message in feed:
                seat_message = _recast(message, play_pb2.SeatResponse)
                if seat_message is not None:
                    yield seat_message

    async def Act(self, request: play_pb2.ActRequest, context: Context) -> play_pb2.ActResponse:
        table, seat, holder = await seat_holder(self._store, self._accounts, context)
        substitute = table.is_substitute(seat, holder)
        bound = log.bind(table_id=table.table_id, seat=seat, substitute=substitute)
        # Not tied to a stream, so never superseded: the same credential, whichever call.
        session = SeatSession(table.table_id, seat, holder, substitute, asyncio.Event(), bound)
        result = await self._act(session, request.action)
        self._store.poke(table.table_id)
        return play_pb2.ActResponse(result=result)

    async def _open_seat(self, context: Context) -> tuple[Table, int, bytes, bool]:
        """The table and seat a Play or Seat call's token (or account key) holds (refused
        before anything)."""
        table, seat, holder = await seat_holder(self._store, self._accounts, context)
        return table, seat, holder, table.is_substitute(seat, holder)

    @contextlib.asynccontextmanager
    async def _seat_feed(
        self,
        opened: tuple[Table, int, bytes, bool],
        after_sequence: int,
        latest: bool,
        request_iterator: AsyncIterator[play_pb2.PlayRequest] | None,
        batched: bool,
    ) -> AsyncIterator[SeatFeed]:
        """One seat's stream (Play's, or Seat's with ``request_iterator`` None): its feed, set
        up and torn down around the caller's iteration (a context, not one more generator
        every message passes through)."""
        table, seat, holder, substitute = opened
        after = _start_at(table, after_sequence, latest)
        bound = log.bind(table_id=table.table_id, seat=seat, substitute=substitute)
        if not substitute and table.state.substitutions[seat] is not None:
            # The player is back: it takes its seat from the substitute before anything is sent.
            await self._reclaim(table.table_id, seat, holder, bound)
        bound.info(
            "play stream opened",
            sequence=table.version if after is None else after,
            actions_on_stream=bool(request_iterator),
        )
        # One stream per seat and token: the newer wins, the older is closed with a clear status.
        key = (table.table_id, seat, holder)
        previous = self._seat_streams.get(key)
        if previous is not None:
            previous.set()
            self._store.poke(table.table_id)
        superseded = self._seat_streams[key] = asyncio.Event()
        outbox = Outbox(STREAM_QUEUE_SIZE)
        session = SeatSession(table.table_id, seat, holder, substitute, superseded, bound)
        if request_iterator is not None:
            actions = asyncio.create_task(self._handle_actions(request_iterator, session, outbox))
        else:
            # A Seat stream has no client side to read: it ends with the call.
            actions = asyncio.create_task(_until_cancelled())
        metrics.OPEN_STREAMS.labels("play").inc()
        if self._absent is not None and not substitute:
            self._absent.stream_opened(table.table_id, seat)
        if self._unclaimed is not None and not substitute and not table.started:
            await self._unclaimed.stream_opened(table.table_id, seat, holder)
        feed = SeatFeed(
            self._store,
            session,
            after,
            self._shutdown.event,
            outbox=outbox,
            actions=actions,
            reclaim=lambda: self._reclaim(table.table_id, seat, holder, bound),
            batched=batched,
        )
        try:
            yield feed
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
    ) -> AsyncIterator[play_pb2.WatchResponse | bytes]:
        table = await self._store.load(request.table_id)
        after = _start_at(table, request.after_sequence, request.latest)
        metrics.OPEN_STREAMS.labels("watch").inc()
        try:
            async for message in SpectatorFeed(
                self._store,
                table.table_id,
                after,
                self._shutdown.event,
                batched=request.batched,
            ):
                watch_message = _recast(message, play_pb2.WatchResponse)
                if watch_message is not None:
                    yield watch_message
        finally:
            metrics.OPEN_STREAMS.labels("watch").dec()

    async def GetRecord(
        self, request: play_pb2.GetRecordRequest, context: Context
    ) -> play_pb2.GetRecordResponse:
        table = await self._store.load(request.table_id)
        # Public (spectator's events, no seed) until the match ends, then the whole record.
        return play_pb2.GetRecordResponse(record=record_of(table))

    async def GetView(
        self, request: play_pb2.GetViewRequest, context: Context
    ) -> play_pb2.GetViewResponse:
        # The seat's view with its token, the public view without one: never more than the
        # caller may see, and the token's checks come before anything of its seat is read.
        table = await self._store.load(request.table_id)
        viewer = None
        token = metadata_value(context, SEAT_TOKEN_METADATA)
        if token is not None:
            owner, seat = await authenticate(self._store, token)
            if owner.table_id != table.table_id:
                raise errors.refuse(
                    Reason.SEAT_TOKEN_OTHER_TABLE,
                    "this seat token is for another table; send it with that table's id, or "
                    "send none for the public view",
                )
            table, viewer = owner, seat
        return play_pb2.GetViewResponse(snapshot=snapshot(table, table.version, viewer))

    async def _handle_actions(
        self,
        request_iterator: AsyncIterator[play_pb2.PlayRequest],
        session: SeatSession,
        outbox: Outbox,
    ) -> None:
        table_id = session.table_id
        # The feed waits on the table; poking it when the client closes its side ends it.
        try:
            async for request in request_iterator:
                owed = outbox.begin()
                try:
                    kind = request.WhichOneof("kind")
                    replaced = session.superseded.is_set()
                    if kind == "action" and not replaced:
                        # An accepted action's result is settled as its events are folded,
                        # before the table's streams wake: it goes out with them.
                        await self._act(session, request.action, owed.settle)
                    else:
                        refusal = (
                            _REPLACED if replaced else _START_AGAIN if kind else _EMPTY_MESSAGE
                        )
                        owed.settle(
                            _refused(
                                play_pb2.ActionResult(action_id=request.action.action_id), refusal
                            )
                        )
                finally:
                    owed.abandon()  # (nothing, once settled)
                if outbox.waiting:
                    # Only then: a poke wakes every stream of the table, for nothing to send.
                    self._store.poke(table_id)
                if replaced:
                    return  # a replaced stream reads no more: it closes once it owes nothing
                if len(outbox.results) >= outbox.size:
                    await outbox.room()  # a client that sends but does not read waits
        finally:
            self._store.poke(table_id)

    async def _act(
        self,
        session: SeatSession,
        request: play_pb2.ActionRequest,
        deliver: Callable[[play_pb2.ActionResult], None] = lambda result: None,
    ) -> play_pb2.ActionResult:
        """Decide a seat's action; its result, also handed to ``deliver`` once it is known (an
        acceptance before the table's streams are woken for its events)."""
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

        def stored(entries: list[Entry]) -> None:
            result.accepted = True
            result.sequence = entries[0].sequence
            deliver(result)

        try:
            check_lengths(request)  # before anything else; field paths are the ActionRequest's
            check_note(request.note)
            # Per seat and per connection (RESOURCE_EXHAUSTED, "retry in 0.25 s", RetryInfo).
            self._limits.check_action(table_id, seat)
            if not request.action_id:
                raise errors.refuse(
                    Reason.MISSING_FIELD,
                    f"action_id must be 1 to {MAX_ACTION_ID} characters",
                    field="action_id",
                )
            try:
                try:
                    action = protocol.action_from_proto(request.action)
                except protocol.ProtocolError as error:
                    raise errors.refuse(
                        Reason.INVALID_ACTION, str(error), field=error.field
                    ) from error
                impossible = legal.impossible(action)  # no table could take it: say so first
                if impossible is not None:
                    raise errors.from_illegal(impossible, "action.")
                asked = ActionRequest(
                    seat,
                    holder,
                    substitute,
                    action,
                    request.action_id,
                    request.sequence,
                    request.note,
                )
                table, _ = await self._store.execute(
                    table_id,
                    # The superseded flag is read on each attempt: a replaced stream stops acting.
                    lambda table: decide_action(
                        table, asked, superseded=session.superseded.is_set()
                    ),
                    stored,
                )
            except errors.RequestError as refusal:
                # The id's first result: this refusal, kept in the log, or an earlier one.
                first = await self._first_result(session, request.action_id, refusal)
                if isinstance(first, int):
                    raise AlreadyAnswered(first) from None
                raise first from None
            metrics.count_action(kind, "accepted")
            # Every action at debug: at info a few busy tables would bury what an operator reads.
            bound.debug("action applied", action=kind, sequence=result.sequence)
            if table.finished:
                bound.info("table finished", sequence=table.version)
        except AlreadyAnswered as answered:
            result.accepted = True
            result.sequence = answered.sequence
            metrics.count_action(kind, "repeated")
            deliver(result)
        except errors.RequestError as error:
            _refused(result, error)
            metrics.count_action(kind, "refused")
            metrics.ERRORS.labels(error.code.name).inc()
            # A stale action (ABORTED) is the normal race of a resent answer: not worth a look.
            stale = error.code is grpc.StatusCode.ABORTED
            (bound.debug if stale else bound.info)(
                "action refused",
                action=kind,
                code=error.code.name,
                reason_code=error.reason_code,
                reason=error.reason,
            )
            deliver(result)
        metrics.ACTION_SECONDS.observe(time.perf_counter() - started)
        return result

    async def _first_result(
        self, session: SeatSession, action_id: str, refusal: errors.RequestError
    ) -> errors.RequestError | int:
        """The first result of the seat's ``action_id``, now that it was refused: ``refusal``
        (kept in the log for every repeat, on any replica), the refusal kept before, or the
        sequence of the action accepted under the id. A refusal that says nothing about the
        action (the server busy or going away, the stream replaced) is not kept: a repeat is
        decided afresh."""
        if refusal.code in _PASSING_CODES or refusal.reason_code in _PASSING_REASONS:
            return refusal
        kept = await self._store.first_result(
            session.table_id,
            session.seat,
            action_id,
            Refusal(
                refusal.code.value[0],
                refusal.reason,
                refusal.reason_code,
                refusal.field,
                refusal.metadata,
            ),
        )
        if isinstance(kept, int):
            return kept
        return refused_again(kept)

    async def _reclaim(
        self, table_id: str, seat: int, holder: bytes, bound: structlog.BoundLogger
    ) -> None:
        """The seat's player is back: append SeatReclaimed (once, whichever process does it)."""
        _, stored = await self._store.execute(
            table_id, lambda table: decide_reclaim(table, seat, holder)
        )
        if stored:
            bound.info("seat reclaimed", seat=seat, sequence=stored[0].sequence)


async def _until_cancelled() -> None:
    await asyncio.Event().wait()


#: Refusals of messages on a Play stream that are not actions to decide.
_START_AGAIN = errors.refuse(
    Reason.START_AGAIN,
    "`start` opens the stream and is sent only once, first; this one was ignored",
)
_EMPTY_MESSAGE = errors.refuse(
    Reason.EMPTY_MESSAGE,
    "the message has neither `start` nor `action` (or a kind this server does not know): "
    "send an ActionRequest in `action`",
)
_REPLACED = errors.refuse(Reason.STREAM_REPLACED, SUPERSEDED)


#: Refusals that are not the action's result, only the moment's: never kept for the id.
_PASSING_CODES = frozenset(
    (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.CANCELLED)
)
_PASSING_REASONS = frozenset((Reason.STREAM_REPLACED, Reason.TABLE_BUSY))


def _refused(result: play_pb2.ActionResult, error: errors.RequestError) -> play_pb2.ActionResult:
    """``result`` refused with ``error``: the code and reason, and the whole google.rpc.Status
    (ErrorInfo, field violation, RetryInfo) a call's refusal carries."""
    result.accepted = False
    result.code = error.code.value[0]
    result.reason = error.reason
    result.status.CopyFrom(errors.status_of(error))
    return result


def _start_at(table: Table, after: int, latest: bool) -> int | None:
    """Where a stream starts: after sequence ``after`` (0: from the beginning), or None for
    the table's latest sequence (``latest``)."""
    if latest:
        if after:
            raise errors.refuse(
                Reason.CONFLICTING_START,
                f"start either after_sequence {after} or at the latest sequence, not both",
                field="latest",
            )
        return None
    if after > table.version:
        raise errors.refuse(
            Reason.SEQUENCE_AHEAD,
            f"after_sequence {after} is past the table's latest sequence {table.version}",
            field="after_sequence",
            metadata={"sequence": str(after), "table_sequence": str(table.version)},
        )
    return after


_Response = TypeVar("_Response", play_pb2.SeatResponse, play_pb2.WatchResponse)


def _recast(message: Outgoing, response: type[_Response]) -> _Response | bytes | None:
    """A feed's message as a Seat or Watch stream sends it: pre-serialised bytes as they are
    (an event, a prompt or a batch has the same field number in all three responses), else
    its one field in a ``response``; None for a kind ``response`` has no field for."""
    if type(message) is bytes:
        return message
    assert isinstance(message, play_pb2.PlayResponse)
    kind = message.WhichOneof("kind")
    if kind is None or kind not in response.DESCRIPTOR.fields_by_name:
        return None
    return response(**{kind: getattr(message, kind)})
