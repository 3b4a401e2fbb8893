"""Real gRPC clients of a test's server: stubs on one channel (:class:`Client`), a seat's Play
stream and a spectator's Watch stream with what they received, and the status a refused call or
stream ends with."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, cast

import grpc
from google.protobuf.message import Message

from spades import protocol
from spades.client import status_lost
from spades.engine import Card, Rules
from spades.v1 import (
    actions_pb2,
    cards_pb2,
    events_pb2,
    lobby_pb2,
    lobby_pb2_grpc,
    play_pb2,
    play_pb2_grpc,
)
from spades_server.app.server import SpadesServer

TOKEN_KEY = "spades-seat-token"
READ_TIMEOUT = 10.0


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

    async def join(
        self,
        table_id: str,
        name: str = "player",
        *,
        metadata: Sequence[tuple[str, str]] = (),
        **fields: Any,
    ) -> lobby_pb2.JoinTableResponse:
        """JoinTable as :func:`join_request` words it (``fields``: its keywords)."""
        request = join_request(table_id, name, **fields)
        return await self.lobby.JoinTable(request, metadata=tuple(metadata) or None)

    def seat_stream(self, token: str, *, batched: bool = False) -> SeatStream:
        call = self.play.Play(metadata=((TOKEN_KEY, token),))  # type: ignore[call-arg]
        return SeatStream(call, batched=batched)

    async def started_streams(self, tokens: Sequence[str]) -> dict[int, SeatStream]:
        """Each seat token's Play stream, by seat, started at the latest sequence."""
        streams = {seat: self.seat_stream(token) for seat, token in enumerate(tokens)}
        for stream in streams.values():
            await stream.start()
        return streams

    async def seated(
        self, rules: Rules | None = None
    ) -> tuple[str, list[str], dict[int, SeatStream]]:
        """A new table of ``rules`` (default: a one-hand match) with every seat taken, each on
        a started Play stream: the table's id, the seat tokens and the streams."""
        rules = rules or Rules(max_hands=1)
        table_id = (await self.create_table(rules)).table.table_id
        tokens = await self.seat_all(table_id, rules.players)
        return table_id, tokens, await self.started_streams(tokens)


def join_request(
    table_id: str,
    name: str = "player",
    *,
    seat: int = cards_pb2.SEAT_UNSPECIFIED,
    bot: bool = True,
    request_id: str = "",
    join_code: str = "",
) -> lobby_pb2.JoinTableRequest:
    """A JoinTable request: any free seat unless ``seat`` is given."""
    return lobby_pb2.JoinTableRequest(
        table_id=table_id,
        player_name=name,
        seat=seat,  # type: ignore[arg-type]  # any number: a wrong one's refusal is tested
        bot=bot,
        request_id=request_id,
        join_code=join_code,
    )


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


async def close_streams(streams: Mapping[int, SeatStream]) -> None:
    """Close every seat's Play stream."""
    for stream in streams.values():
        await stream.close()


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


def start_at(after_sequence: int | None) -> play_pb2.StartPlay:
    """Where a stream starts: after ``after_sequence``, or at the latest sequence for None."""
    if after_sequence is None:
        return play_pb2.StartPlay(latest=True)
    return play_pb2.StartPlay(after_sequence=after_sequence)


@asynccontextmanager
async def clients(servers: Sequence[SpadesServer]) -> AsyncIterator[list[Client]]:
    """A client of each server (for example of each replica), on channels closed after."""
    async with AsyncExitStack() as stack:
        channels = [
            await stack.enter_async_context(grpc.aio.insecure_channel(f"127.0.0.1:{s.port}"))
            for s in servers
        ]
        yield [Client(channel) for channel in channels]


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
