"""A real server on an ephemeral 127.0.0.1 port and real gRPC clients, for the server tests."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import grpc
from google.protobuf.message import Message

from spades import protocol
from spades.client import status_lost
from spades.engine import Card, Rules, new_match
from spades.v1 import (
    actions_pb2,
    cards_pb2,
    events_pb2,
    lobby_pb2,
    lobby_pb2_grpc,
    play_pb2,
    play_pb2_grpc,
    view_pb2,
)
from spades_server.app.server import SpadesServer
from spades_server.domain import table_events, tokens
from spades_server.domain.tables import Decided
from spades_server.ops.settings import Settings
from spades_server.store import journal
from tests.backends import LogStorage, head_position

TOKEN_KEY = "spades-seat-token"
READ_TIMEOUT = 10.0


def new_server(storage: LogStorage | Path, **settings: object) -> SpadesServer:
    """A server (not started) on ``storage``, on an ephemeral port, with ``settings``; a bare
    path is a SQLite file (for suites that run on SQLite only)."""
    storage = LogStorage.of(storage)
    return SpadesServer(
        Settings(
            listen="127.0.0.1:0",
            database=str(storage.database),
            metrics="off",
            web="off",
            **settings,  # type: ignore[arg-type]
        ),
        # On SQLite the server opens the file its settings name, as in production.
        storage.new_log() if storage.backend == "postgres" else None,
    )


@asynccontextmanager
async def running_server(
    storage: LogStorage | Path, **settings: object
) -> AsyncIterator[SpadesServer]:
    """A started server on ``storage`` (a test's SQLite file or PostgreSQL schema)."""
    server = new_server(storage, **settings)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@dataclass
class Client:
    """Stubs on one channel to a server."""

    channel: grpc.aio.Channel
    lobby: lobby_pb2_grpc.LobbyServiceAsyncStub = field(init=False)
    play: play_pb2_grpc.PlayServiceAsyncStub = field(init=False)

    def __post_init__(self) -> None:
        self.lobby = lobby_pb2_grpc.LobbyServiceStub(self.channel)
        self.play = play_pb2_grpc.PlayServiceStub(self.channel)

    async def create_table(
        self, rules: Rules | None = None, **fields: object
    ) -> lobby_pb2.CreateTableResponse:
        request = lobby_pb2.CreateTableRequest(
            name=str(fields.pop("name", "test table")),
            rules=protocol.rules_to_proto(rules or Rules()),
            **fields,  # type: ignore[arg-type]
        )
        return await self.lobby.CreateTable(request)

    async def seat_all(self, table_id: str, players: int = 4, join_code: str = "") -> list[str]:
        tokens = []
        for index in range(players):
            joined = await self.lobby.JoinTable(
                lobby_pb2.JoinTableRequest(
                    table_id=table_id, player_name=f"player {index}", bot=True, join_code=join_code
                )
            )
            tokens.append(joined.seat_token)
        return tokens

    def seat_stream(self, token: str, *, batched: bool = False) -> SeatStream:
        call = self.play.Play(metadata=((TOKEN_KEY, token),))  # type: ignore[call-arg]
        return SeatStream(call, batched=batched)


def unbatched(batch: play_pb2.Batch) -> list[play_pb2.PlayResponse]:
    """A batch's contents as the messages an unbatched stream sends (events, results, prompt)."""
    parts = [play_pb2.PlayResponse(event=event) for event in batch.events]
    parts += [play_pb2.PlayResponse(action_result=result) for result in batch.action_results]
    if batch.HasField("prompt"):
        parts.append(play_pb2.PlayResponse(prompt=batch.prompt))
    assert parts, "an empty batch"
    return parts


class SeatStream:
    """One seat's Play stream, with the messages it received.

    ``batched``: the stream is opened with StartPlay.batched; each batch read is kept in
    ``batches`` and handed out (and kept in ``received``) as the messages it holds.
    """

    def __init__(self, call: Any, *, batched: bool = False) -> None:
        self.call = call
        self.batched = batched
        self.received: list[play_pb2.PlayResponse] = []
        self.batches: list[play_pb2.PlayResponse] = []
        self._pending: list[play_pb2.PlayResponse] = []

    async def start(self, after_sequence: int | None = None) -> play_pb2.Snapshot:
        """Send ``start``: after ``after_sequence`` (0: from the beginning), or from the
        latest sequence for None."""
        start = start_at(after_sequence)
        start.batched = self.batched
        await self.call.write(play_pb2.PlayRequest(start=start))
        message = await self.next()
        assert message.WhichOneof("kind") == "snapshot", message
        return message.snapshot

    async def next(self, timeout: float = READ_TIMEOUT) -> play_pb2.PlayResponse:
        if self._pending:
            return self._pending.pop(0)
        message = await asyncio.wait_for(self.call.read(), timeout)
        if message is grpc.aio.EOF:  # type: ignore[attr-defined]
            raise EOFError("the server closed the stream")
        kind = message.WhichOneof("kind")
        if kind == "batch":
            assert self.batched, f"a batch on an unbatched stream: {message}"
            self.batches.append(message)
            parts = unbatched(message.batch)
            self.received.extend(parts)
            self._pending.extend(parts[1:])
            return parts[0]
        assert not self.batched or kind == "snapshot", f"not a batch on a batched stream: {kind}"
        self.received.append(message)
        return cast(play_pb2.PlayResponse, message)

    async def next_of(self, kind: str, timeout: float = READ_TIMEOUT) -> play_pb2.PlayResponse:
        """The next message of one kind; others are kept for later."""
        skipped = []
        try:
            while True:
                message = await self.next(timeout)
                if message.WhichOneof("kind") == kind:
                    return message
                skipped.append(message)
        finally:
            self._pending[:0] = skipped

    async def send(
        self, action: actions_pb2.Action, sequence: int, action_id: str | None = None
    ) -> str:
        action_id = action_id or uuid.uuid4().hex
        await self.call.write(
            play_pb2.PlayRequest(
                action=play_pb2.ActionRequest(action_id=action_id, sequence=sequence, action=action)
            )
        )
        return action_id

    async def act(
        self, action: actions_pb2.Action, sequence: int, action_id: str | None = None
    ) -> play_pb2.ActionResult:
        sent = await self.send(action, sequence, action_id)
        while True:
            message = await self.next_of("action_result")
            if message.action_result.action_id == sent:
                return message.action_result

    def events(self) -> list[play_pb2.PlayResponse]:
        return [m for m in self.received if m.WhichOneof("kind") == "event"]

    async def act_result(
        self, action_id: str, timeout: float = READ_TIMEOUT
    ) -> play_pb2.ActionResult:
        """The result of the action sent with ``action_id``; other messages are kept."""
        skipped = []
        try:
            while True:
                message = await self.next(timeout)
                if (
                    message.WhichOneof("kind") == "action_result"
                    and message.action_result.action_id == action_id
                ):
                    return message.action_result
                skipped.append(message)
        finally:
            self._pending[:0] = skipped

    async def until_end(self, timeout: float = READ_TIMEOUT) -> grpc.StatusCode:
        """Read every message left until the server ends the stream; its status."""
        while True:
            try:
                await self.next(timeout)
            except EOFError:
                break
            except grpc.aio.AioRpcError as error:
                return error.code()
        return cast(grpc.StatusCode, await self.call.code())

    def kinds(self) -> list[str]:
        """What each received message was, in order ("event:seed_revealed", "prompt", ...)."""
        return [
            f"event:{m.event.WhichOneof('kind')}"
            if m.WhichOneof("kind") == "event"
            else str(m.WhichOneof("kind"))
            for m in self.received
        ]

    async def close(self) -> None:
        with contextlib.suppress(grpc.aio.AioRpcError, asyncio.InvalidStateError):
            await self.call.done_writing()  # the server may have ended the call already
        self.call.cancel()


async def play_until_over(stream: SeatStream, rng: random.Random) -> None:
    """Answer every prompt with a random legal action until the match ends."""
    while True:
        message = await stream.next()
        kind = message.WhichOneof("kind")
        if kind == "event" and message.event.WhichOneof("kind") == "seed_revealed":
            return
        if kind == "prompt":
            action = rng.choice(choices_of(message.prompt))
            result = await stream.act(action, message.prompt.sequence)
            assert result.accepted or result.code == grpc.StatusCode.ABORTED.value[0], result


# ------------------------------------------------------------------------------------------
# Helpers for the bad-input, leak, resume, idempotency, restart and lobby tests.

#: Picks a seat's action: (seat, prompt, rng) -> action.
ActionChooser = Callable[[int, play_pb2.TurnPrompt, random.Random], actions_pb2.Action]


async def rpc_error(awaitable: Any) -> grpc.aio.AioRpcError:
    """The gRPC error a call ends with; fails when the call succeeds."""
    try:
        await awaitable
    except grpc.aio.AioRpcError as error:
        return error
    raise AssertionError("the call succeeded, but an error status was expected")


async def stream_error(call: Any, *requests: play_pb2.PlayRequest) -> grpc.aio.AioRpcError:
    """The status a Play stream ends with after ``requests`` (then the client's half-close).

    ``call`` is the call, or a function that makes it. A call the server refuses as it opens
    (before reading anything) may lose that status to a bug of grpc.aio's client: a write that
    meets the already-ended stream overwrites the server's status with INTERNAL "Internal error
    from Core" (debug string 'Failed "execute_batch"', grpc/grpc#36066). Given a function, the
    refusal is asked again on a new call then (a refusal changes nothing, so asking twice is
    the same as asking once)."""
    make = call if callable(call) else None
    for _ in range(3):
        error = await _stream_status(make() if make is not None else call, requests)
        if make is None or not status_lost(error):
            return error
    return error


async def _stream_status(call: Any, requests: Sequence[Any]) -> grpc.aio.AioRpcError:
    try:
        for request in requests:
            await call.write(request)
        await call.done_writing()
    except (grpc.aio.AioRpcError, asyncio.InvalidStateError):
        pass  # the server may have ended the call already; its status is what matters
    try:
        while True:
            message = await asyncio.wait_for(call.read(), READ_TIMEOUT)
            if message is grpc.aio.EOF:  # type: ignore[attr-defined]
                break
    except grpc.aio.AioRpcError as error:
        return error
    code = await asyncio.wait_for(call.code(), READ_TIMEOUT)
    raise AssertionError(f"the stream ended with {code}, but an error status was expected")


async def log_head(server: SpadesServer) -> int:
    """The position of the last event in the whole log (0 when it is empty), once the lobby
    has caught up with it (tests.backends.head_position)."""
    await lobby_caught_up(server)
    return await head_position(server.log)


async def lobby_caught_up(server: SpadesServer, table_ids: Iterable[str] | None = None) -> None:
    """Wait until the lobby has folded every event the log holds for ``table_ids`` (default:
    every table it lists).

    The lobby is a projection of the log, and GetTable/ListTables serve it. On PostgreSQL it
    follows the log's final prefix (``subscribe_all``), a few milliseconds behind an action the
    client already saw acknowledged on its Play stream: GetTable waits for it to reach what the
    replica's table cache has (test_lobby.py), ListTables does not; on SQLite it has always
    caught up by then. Tests whose point is what the lobby says about a table, not how soon,
    wait here first."""

    async def folded(table_id: str) -> None:
        version = await server.log.stream_version(table_id)
        # (a finished table may have moved from the lobby's memory to the log's rows)
        while (summary := await server.projection.find(table_id)) is None or (
            summary.sequence < version
        ):
            await asyncio.sleep(0.002)

    chosen = list(server.projection.tables if table_ids is None else table_ids)
    await asyncio.wait_for(asyncio.gather(*map(folded, chosen)), READ_TIMEOUT)


def assert_each_move_timed_out_once(kinds: Sequence[str | None]) -> None:
    """Every bid and card of a table nobody plays (``kinds``: its events' kinds) came from one
    timeout, none from two: 4 bids and 52 cards a hand, and more hands when the match was tied
    after its hand limit (it plays on to a clear leader)."""
    turns = [kind for kind in kinds if kind in ("turn_timed_out", "bid_made", "card_played")]
    assert len(turns) >= 2 * 56, len(turns)
    assert turns[0::2] == ["turn_timed_out"] * (len(turns) // 2), "a turn timed out twice"
    assert all(kind in ("bid_made", "card_played") for kind in turns[1::2])


def own_moves(events: Iterable[events_pb2.Event]) -> dict[int, list[int]]:
    """The sequences of the bids and cards each seat (by its protocol value) made itself, from
    a table's events in order: not the clock's move for it, which follows its TurnTimedOut."""
    moves: dict[int, list[int]] = {}
    timed_out = None
    for event in events:
        kind = event.WhichOneof("kind")
        if kind in ("bid_made", "card_played"):
            seat = event.bid_made.seat if kind == "bid_made" else event.card_played.seat
            if seat != timed_out:
                moves.setdefault(seat, []).append(event.sequence)
        timed_out = event.turn_timed_out.seat if kind == "turn_timed_out" else None
    return moves


async def log_events(server: SpadesServer, table_id: str) -> list[events_pb2.Event]:
    """A table's public events as the log stores them (nothing redacted), with their sequences
    and action ids (the server's secrets are in :func:`log_entries`)."""
    out = []
    for entry in await log_entries(server, table_id):
        event = events_pb2.Event()
        event.CopyFrom(entry.message)
        event.action_id = entry.action_id
        out.append(event)
    return out


async def log_entries(server: SpadesServer, table_id: str) -> list[table_events.Entry]:
    """A table's journal entries, as the log stores them (secrets included)."""
    return [journal.decode(stored) for stored in await server.log.read(table_id)]


async def create_admin_table(
    server: SpadesServer,
    rules: Rules,
    *,
    seed: bytes | None = None,
    preset_deals: Sequence[Sequence[Iterable[int]]] = (),
    name: str = "admin table",
) -> str:
    """A table made the way an operator would (a given seed or deals), through the store."""
    table_id = tokens.new_table_id()
    created = new_match(rules, seed=seed, preset_deals=preset_deals)
    await server.store.create(table_id, Decided.of(created, listing=table_events.Listing(name)))
    stored = await server.log.read(table_id)
    await asyncio.wait_for(server.projection.caught_up(stored[-1].position), READ_TIMEOUT)
    return table_id


class WatchStream:
    """A spectator's Watch stream, with the messages it received (a batch's events one by one,
    as for :class:`SeatStream`; the batches themselves in ``batches``)."""

    def __init__(self, call: Any, *, batched: bool = False) -> None:
        self.call = call
        self.batched = batched
        self.received: list[play_pb2.WatchResponse] = []
        self.batches: list[play_pb2.WatchResponse] = []
        self._pending: list[play_pb2.WatchResponse] = []

    async def next(self, timeout: float = READ_TIMEOUT) -> play_pb2.WatchResponse:
        if self._pending:
            return self._pending.pop(0)
        message = await asyncio.wait_for(self.call.read(), timeout)
        if message is grpc.aio.EOF:  # type: ignore[attr-defined]
            raise EOFError("the server closed the stream")
        kind = message.WhichOneof("kind")
        if kind == "batch":
            assert self.batched, f"a batch on an unbatched stream: {message}"
            batch = message.batch
            assert batch.events and not batch.action_results and not batch.HasField("prompt")
            self.batches.append(message)
            parts = [play_pb2.WatchResponse(event=event) for event in batch.events]
            self.received.extend(parts)
            self._pending.extend(parts[1:])
            return parts[0]
        assert not self.batched or kind == "snapshot", f"not a batch on a batched stream: {kind}"
        self.received.append(message)
        return cast(play_pb2.WatchResponse, message)

    async def snapshot(self) -> play_pb2.Snapshot:
        message = await self.next()
        assert message.WhichOneof("kind") == "snapshot", message
        return message.snapshot

    async def until_event(self, kind: str, timeout: float = READ_TIMEOUT) -> events_pb2.Event:
        """Read on until an event of ``kind`` (for example "seed_revealed")."""
        while True:
            message = await self.next(timeout)
            if message.WhichOneof("kind") == "event" and message.event.WhichOneof("kind") == kind:
                return message.event

    def events(self) -> list[events_pb2.Event]:
        return [m.event for m in self.received if m.WhichOneof("kind") == "event"]

    def close(self) -> None:
        self.call.cancel()


def choices_of(prompt: play_pb2.TurnPrompt) -> list[actions_pb2.Action]:
    """Every answer a prompt allows: its legal actions, or each pass of its card-pass choice."""
    if prompt.HasField("card_pass"):
        chosen = itertools.combinations(prompt.card_pass.cards, prompt.card_pass.count)
        return [actions_pb2.Action(card_pass=actions_pb2.CardPass(cards=cards)) for cards in chosen]
    return list(prompt.legal_actions)


def start_at(after_sequence: int | None) -> play_pb2.StartPlay:
    """Where a stream starts: after ``after_sequence``, or at the latest sequence for None."""
    if after_sequence is None:
        return play_pb2.StartPlay(latest=True)
    return play_pb2.StartPlay(after_sequence=after_sequence)


def watch(
    client: Client, table_id: str, after_sequence: int | None = None, *, batched: bool = False
) -> WatchStream:
    """A Watch stream: after ``after_sequence`` (0: from the beginning), or the latest (None)."""
    start = start_at(after_sequence)
    return WatchStream(
        client.play.Watch(
            play_pb2.WatchRequest(
                table_id=table_id,
                after_sequence=start.after_sequence,
                latest=start.latest,
                batched=batched,
            )
        ),
        batched=batched,
    )


async def current_view(client: Client, table_id: str) -> play_pb2.Snapshot:
    """The public view at the table's latest sequence (one Watch snapshot)."""
    stream = watch(client, table_id)
    try:
        return await stream.snapshot()
    finally:
        stream.close()


def random_action(seat: int, prompt: play_pb2.TurnPrompt, rng: random.Random) -> actions_pb2.Action:
    return rng.choice(choices_of(prompt))


async def play_turns(
    client: Client,
    table_id: str,
    streams: dict[int, SeatStream],
    rng: random.Random,
    *,
    until: Any = None,
    choose: ActionChooser = random_action,
    max_actions: int = 2000,
) -> play_pb2.Snapshot:
    """Play the table turn by turn (whoever is to act, through its stream) until the match is
    over, or ``until(snapshot)`` holds, or the seat to act has no stream; returns the public
    view there. Every action must be accepted."""
    for _ in range(max_actions):
        now = await current_view(client, table_id)
        if now.view.phase == view_pb2.PHASE_ENDED or (until is not None and until(now)):
            return now
        seat = protocol.seat_from_proto(now.view.turn)
        stream = streams.get(seat)
        if stream is None:
            return now
        while True:
            prompt = (await stream.next_of("prompt")).prompt
            if prompt.sequence == now.sequence:
                break
            assert prompt.sequence < now.sequence, (prompt, now.sequence)
        result = await stream.act(choose(seat, prompt, rng), prompt.sequence)
        assert result.accepted, result
    raise AssertionError(f"the match did not end within {max_actions} actions")


def cards_in(message: Message) -> list[Card]:
    """Every ``spades.v1.Card`` anywhere in ``message``, as engine cards."""
    found: list[Card] = []

    def walk(node: Message) -> None:
        if isinstance(node, cards_pb2.Card):
            found.append(protocol.card_from_proto(node))
            return
        for descriptor, value in node.ListFields():
            if descriptor.message_type is None:
                continue
            if descriptor.is_repeated:
                if descriptor.message_type.GetOptions().map_entry:
                    continue
                for item in value:
                    walk(item)
            else:
                walk(value)

    walk(message)
    return found
