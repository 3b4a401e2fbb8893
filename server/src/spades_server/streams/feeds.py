"""Stream feeds: everything one stream sends, in order, as an object.

A feed is a view of a table's journal for one viewer: a snapshot of what the viewer may know at
one sequence, then every later event as the engine redacts it for the viewer (catch-up), then
live events as the table changes. A :class:`SpectatorFeed` stops there; a :class:`SeatFeed` also
checks before each step that its token may still see the seat, sends the seat's prompts (to the
substitute's stream while one plays the seat), the results of its actions, and ends when the
client closes its side or a newer stream for the seat takes over.

Every feed ends with OK once the match is over and everything was sent: the last event (the
seed revealed) and, on a seat's stream, the result of every action it read; a stream opened on a
finished table sends what it asked for and ends. A replaced seat stream also first sends the
results it owes, then ends with ABORTED. Either ends with UNAVAILABLE when the server shuts down
(clients resume from their last sequence).
"""

from __future__ import annotations

import asyncio
import functools
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import structlog

from spades import protocol
from spades.engine import (
    Action,
    Viewer,
    may_claim_extension,
    may_concede,
    pass_choice,
    view,
    visible_legal_actions,
)
from spades.engine.events import SubstitutionReason
from spades.reasons import Reason
from spades.v1 import play_pb2, view_pb2
from spades_server.domain import errors
from spades_server.domain.decisions import SUPERSEDED
from spades_server.domain.seats import check_holder
from spades_server.domain.tables import Table, timestamp
from spades_server.processes.clock import deadline_of, turn_of
from spades_server.store.protowire import framed
from spades_server.store.table_store import TableStore
from spades_server.streams import frames
from spades_server.streams.frames import redacted

__all__ = [
    "Outbox",
    "Outgoing",
    "Owed",
    "SeatFeed",
    "SeatSession",
    "SpectatorFeed",
    "redacted",
    "snapshot",
]

#: What a feed sends: a message, or one pre-serialised (:mod:`spades_server.streams.frames`: an
#: event or a batch, the same bytes in a PlayResponse, WatchResponse or SeatResponse).
Outgoing = play_pb2.PlayResponse | bytes

SHUTTING_DOWN = "the server is shutting down; reconnect and resume from your last sequence"


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


def snapshot(table: Table, sequence: int, viewer: Viewer) -> play_pb2.Snapshot:
    """What ``viewer`` may know of the table as it was at ``sequence`` (at 0, before its first
    event, nothing but who is looking)."""
    if sequence == 0:
        shown = view_pb2.MatchView()
        if viewer is not None:
            shown.viewer = protocol.seat_to_proto(viewer)
        return play_pb2.Snapshot(sequence=0, view=shown)
    state = table.state_at(sequence)
    taken = play_pb2.Snapshot(sequence=sequence, view=protocol.view_to_proto(view(state, viewer)))
    if sequence == table.version:
        turn = turn_of(table)
        if turn is not None:
            taken.turn.CopyFrom(turn)
    return taken


class Outbox:
    """The action results a seat's stream owes its client: ready to send, or still being
    decided (each action read is :meth:`begin`-ed, and its :class:`Owed` settled once).

    The stream ends (replaced, or the match over) only once it owes nothing, so the result of
    an action it read is never lost to a close.
    """

    def __init__(self, size: int) -> None:
        #: The reader waits before reading another action while this many results wait.
        self.size = size
        #: Results ready to send, in the order their actions were read.
        self.results: deque[play_pb2.ActionResult] = deque()
        #: Actions read whose result is not ready yet.
        self.deciding = 0
        #: Who waits for the results to be decided (the batched feed) or for room (the reader).
        self._idle: list[asyncio.Future[None]] = []
        self._room: list[asyncio.Future[None]] = []
        #: True while the stream's feed waits for the table to change: a result settled then
        #: must wake it (TableStore.poke); at any other moment the feed finds the result itself.
        self.waiting = False

    def begin(self) -> Owed:
        """An action was read: its result is owed."""
        self.deciding += 1
        return Owed(self)

    def _settled(self) -> None:
        self.deciding -= 1
        if not self.deciding and self._idle:
            _wake(self._idle)

    @property
    def settled(self) -> bool:
        """True when nothing is owed: no result to send, none being decided."""
        return not self.deciding and not self.results

    def take(self) -> list[play_pb2.ActionResult]:
        """The results ready to send (and room for the reader)."""
        results = list(self.results)
        self.results.clear()
        if self._room:
            _wake(self._room)
        return results

    async def decided(self) -> None:
        """Wait until no action of the stream is being decided."""
        while self.deciding:
            waiter = asyncio.get_running_loop().create_future()
            self._idle.append(waiter)
            await waiter

    async def room(self) -> None:
        """Wait until fewer than ``size`` results wait to be sent."""
        while len(self.results) >= self.size:
            waiter = asyncio.get_running_loop().create_future()
            self._room.append(waiter)
            await waiter


class Owed:
    """One action's result, owed by a stream: settled with the result, or abandoned (the
    stream is going) — once, whichever comes first."""

    __slots__ = ("_outbox", "done")

    def __init__(self, outbox: Outbox) -> None:
        self._outbox = outbox
        self.done = False

    def settle(self, result: play_pb2.ActionResult) -> None:
        """The result is ready: it goes out with the stream's next message."""
        if self.done:
            return
        self.done = True
        self._outbox.results.append(result)
        self._outbox._settled()

    def abandon(self) -> None:
        """No result will come (the reader is going)."""
        if self.done:
            return
        self.done = True
        self._outbox._settled()


def _wake(waiters: list[asyncio.Future[None]]) -> None:
    for waiter in waiters:
        if not waiter.done():
            waiter.set_result(None)
    waiters.clear()


class SpectatorFeed:
    """A spectator's stream: snapshot, catch-up, live events (the public view).

    ``batched``: after the snapshot, everything one change of the table brings goes out as one
    Batch (play.proto), else each event, prompt and result is its own message.
    """

    viewer: Viewer = None

    def __init__(
        self,
        store: TableStore,
        table_id: str,
        after: int | None,
        shutdown: asyncio.Event,
        *,
        batched: bool = False,
    ):
        self._store = store
        self.table_id = table_id
        #: The sequence the client has seen (0: none, from the beginning; None: from the latest).
        self.after = after
        self._shutdown = shutdown
        self.batched = batched
        #: The sequence of the last event sent.
        self.position = 0

    async def __aiter__(self) -> AsyncIterator[Outgoing]:
        # The table stays cached while the stream is open (the store evicts only idle tables),
        # and it is the one object every command folds into: the feed keeps it.
        # One generator (every message of every stream passes through each layer of them).
        async with self._store.holding(self.table_id) as table:
            self._check_access(table)
            self.position = table.version if self.after is None else self.after
            yield play_pb2.PlayResponse(snapshot=snapshot(table, self.position, self.viewer))
            viewer = self.viewer
            checked = table.seat_changes  # the credential was checked at this count
            while True:
                if self.batched and self._unsettled():
                    await self._settle()
                if table.seat_changes != checked:
                    # Who holds or plays a seat changed: look again before sending anything.
                    checked = table.seat_changes
                    if await self._changed_hands(table):
                        continue  # the table changed under us: look again before sending
                if self.batched:
                    while True:
                        start = self.position
                        end = self.position = min(table.version, start + frames.MAX_BATCH_EVENTS)
                        if end < table.version:  # a long catch-up: the rest follows at once
                            yield frames.batch(table, start, end, viewer)
                            continue
                        results = self._results()
                        prompt = self._prompt(table)
                        if end > start or results or prompt is not None:
                            yield frames.batch(
                                table,
                                start,
                                end,
                                viewer,
                                results,
                                prompt,
                                frames.turn_payload(table),
                            )
                        break
                else:
                    while self.position < table.version:
                        self.position += 1
                        yield frames.event(table, self.position - 1, viewer)
                    prompt = self._prompt(table)
                    if prompt is not None:
                        yield framed(frames.PROMPT_TAG, prompt)
                    for result in self._results():
                        yield play_pb2.PlayResponse(action_result=result)
                if self.position < table.version or self._news():
                    continue  # more came while the last message was written
                if self._finished(table):
                    return
                if self._shutdown.is_set():
                    raise errors.refuse(Reason.SHUTTING_DOWN, SHUTTING_DOWN)
                await self._wait(table)

    # The hooks a seat's feed fills in: a spectator may see everything public, always.

    def _check_access(self, table: Table) -> None:
        """Raise unless the viewer may see the table now."""

    async def _changed_hands(self, table: Table) -> bool:
        """Check the viewer may go on (after a seat changed hands); True when something was
        appended and the table must be looked at again."""
        return False

    def _unsettled(self) -> bool:
        """True when something on its way to the viewer is not ready yet (checked before
        :meth:`_settle` is awaited: most turns of the loop have nothing to wait for)."""
        return False

    async def _settle(self) -> None:
        """Wait until what is on its way to the viewer is ready to go in one batch."""

    def _prompt(self, table: Table) -> bytes | None:
        """The viewer's prompt after the events (a serialised TurnPrompt), if it gets one now."""
        return None

    def _results(self) -> list[play_pb2.ActionResult]:
        """The results of the viewer's actions ready to send, in the order read."""
        return []

    def _news(self) -> bool:
        """True when something besides events waits to be sent (a result)."""
        return False

    def _finished(self, table: Table) -> bool:
        """True when the stream ends normally (raise to end it with a status): the match is
        over and its last event was sent."""
        return self._sent_the_end(table)

    def _sent_the_end(self, table: Table) -> bool:
        # Nothing follows the match's end (MatchEnded and SeedRevealed come in one append).
        return table.finished and self.position >= table.version

    async def _wait(self, table: Table) -> None:
        """Wait for the table to change (or the server to shut down)."""
        await self._store.changed(self.table_id)


class SeatFeed(SpectatorFeed):
    """A seat's Play stream: the seat's view, its prompts and the results of its actions."""

    def __init__(
        self,
        store: TableStore,
        session: SeatSession,
        after: int | None,
        shutdown: asyncio.Event,
        *,
        outbox: Outbox,
        actions: asyncio.Task[None],
        reclaim: Callable[[], Awaitable[None]],
        batched: bool = False,
    ) -> None:
        super().__init__(store, session.table_id, after, shutdown, batched=batched)
        self.session = session
        self.viewer = session.seat
        self._outbox = outbox
        self._actions = actions
        self._reclaim = reclaim
        self._prompted = -1
        self._reclaim_tried = -1

    def _check_access(self, table: Table) -> None:
        # Checked here (and whenever a seat changes hands): the token may have given the seat
        # up since the stream was opened, and the snapshot would show the next occupant's
        # cards; a substitute sees nothing after its player took the seat back.
        session = self.session
        check_holder(table, session.seat, session.holder, session.substitute)

    async def _changed_hands(self, table: Table) -> bool:
        self._check_access(table)
        replaced = table.state.substitutions[self.session.seat]
        if (
            replaced is SubstitutionReason.DISCONNECTED
            and not self.session.substitute
            and self._reclaim_tried != table.version
        ):
            # Substituted as disconnected (by another replica) while this stream of its
            # player is open: the player is here, so it takes the seat back.
            self._reclaim_tried = table.version
            await self._reclaim()
            return True
        return False

    def _unsettled(self) -> bool:
        return bool(self._outbox.deciding)

    async def _settle(self) -> None:
        # An action of this stream being decided has (most likely) just changed the table:
        # its result goes out in the same batch as the events it caused.
        if self._outbox.deciding:
            await self._outbox.decided()

    def _results(self) -> list[play_pb2.ActionResult]:
        return self._outbox.take() if self._outbox.results else []

    def _news(self) -> bool:
        return bool(self._outbox.results)

    def _prompt(self, table: Table) -> bytes | None:
        """The seat's prompt, once per position, when it is the seat's turn and this stream
        plays it (the substitute's while one plays the seat): a serialised TurnPrompt."""
        seat, state = self.session.seat, table.state
        if (
            state.turn != seat
            or self._prompted == self.position
            or not (self.session.substitute or state.substitutions[seat] is None)
        ):
            return None
        legal = visible_legal_actions(state, seat)
        if not legal:
            return None
        self._prompted = self.position
        prompt = play_pb2.TurnPrompt(
            sequence=self.position,
            may_concede=may_concede(state) and not self.session.substitute,
            may_claim_extension=may_claim_extension(state, seat),
        )
        deadline = deadline_of(table)
        if deadline is not None:
            prompt.deadline.CopyFrom(timestamp(deadline))
        passing = pass_choice(state, seat)
        if passing is not None:
            # "Choose 2 of these 13", not each of the 78 pairs.
            count, cards = passing
            prompt.card_pass.count = count
            prompt.card_pass.cards.extend(protocol.cards_to_proto(cards))
            return prompt.SerializeToString()
        # The legal actions' fields follow the others' (a parser takes fields in any order and
        # keeps a repeated field's in theirs), each framed once for every prompt that lists it.
        return prompt.SerializeToString() + b"".join(map(_legal_action_field, legal))

    def _finished(self, table: Table) -> bool:
        if not self._outbox.settled or self.position < table.version:
            return False  # results (or the events of an action) still to send
        # Replaced first: a replaced stream's reader also stops (it reads no more), and that
        # must not pass for the client closing its side.
        if self.session.superseded.is_set():
            raise errors.refuse(Reason.STREAM_REPLACED, SUPERSEDED)
        if self._actions.done():
            return True  # the client closed its side
        return self._sent_the_end(table)

    async def _wait(self, table: Table) -> None:
        # Or for a result to send: the reader pokes the table only while the feed waits here
        # (Outbox.waiting); a running feed finds the result before it waits again.
        outbox = self._outbox
        outbox.waiting = True
        try:
            if not outbox.results and table.version <= self.position:
                await self._store.changed(self.table_id)
        finally:
            outbox.waiting = False


@functools.lru_cache(maxsize=512)
def _legal_action_field(action: Action) -> bytes:
    """A legal action as a prompt's ``legal_actions`` field, serialised once per action (there
    are few: the cards, the bids, and the choices)."""
    return framed(
        frames.PROMPT_LEGAL_ACTION_TAG, protocol.action_to_proto(action).SerializeToString()
    )
