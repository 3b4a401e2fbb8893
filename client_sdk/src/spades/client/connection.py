"""One seat's Play stream: send actions, receive snapshots, events, prompts and results.

A :class:`SeatConnection` is one open stream; when it drops, open another with
``after_sequence`` set to the last event seen (the bot runner in :mod:`spades.bot` does this for
you, resending any action whose result it never got under the same action id).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections import deque
from collections.abc import AsyncIterator
from typing import Any, Final, cast

import grpc

from spades import protocol
from spades.client.errors import SpadesError, Unavailable, from_rpc_error
from spades.client.messages import PlayMessage, Snapshot, batch_messages, play_message
from spades.engine import Action
from spades.notes import encode_note
from spades.v1 import play_pb2, play_pb2_grpc
from spades.wire import SEAT_TOKEN_METADATA

#: How many Play streams are opened, in all, while grpc.aio's client loses the status of the
#: server's refusal of each (:func:`spades.client.errors.status_lost`).
LOST_STATUS_ATTEMPTS: Final = 3


def new_action_id() -> str:
    """A fresh action id (the server keeps the first result of each id)."""
    return uuid.uuid4().hex


def new_request_id() -> str:
    """A fresh request id for a lobby call (122 random bits: it stands for the seat token)."""
    return uuid.uuid4().hex


class SeatConnection:
    """An open Play stream for one seat. Use :meth:`SpadesClient.play` to open one.

    Iterate it (``async for message in connection``) for :class:`Snapshot`, :class:`StreamEvent`,
    :class:`Prompt` and :class:`ActionResult` values; the iteration ends when the server ends
    the stream with OK (the match is over and its last event, SeedRevealed, was sent), and a
    failure raises the typed :class:`SpadesError` (``Unavailable`` when the connection dropped:
    reopen from the last sequence). A :meth:`send` after the server ended the stream raises
    that end's status too (``Aborted`` for a stream a newer one replaced: not to be reopened).

    Opened ``batched`` (the default), the server sends what one change of the table brings in
    one message (play.proto's Batch); the connection hands its contents out one by one, in the
    order an unbatched stream sends them (events, then results, then the prompt), so iterating
    it looks the same either way.
    """

    def __init__(
        self,
        stub: play_pb2_grpc.PlayServiceAsyncStub,
        seat_token: str,
        metadata: tuple[tuple[str, str], ...] = (),
    ) -> None:
        # The seat token, or (with an empty one) ``metadata`` naming the seat: an account's key
        # with the table id and the seat (SpadesClient.play_account_seat).
        metadata = ((SEAT_TOKEN_METADATA, seat_token),) if seat_token else metadata
        self._call: Any = stub.Play(metadata=metadata)  # type: ignore[call-arg]
        self._dropped = False
        #: The rest of the batch last read.
        self._pending: deque[PlayMessage] = deque()
        self.snapshot: Snapshot | None = None

    async def start(
        self, after_sequence: int = 0, *, latest: bool = False, batched: bool = True
    ) -> Snapshot:
        """Send ``start`` and return the snapshot the server answers with: the view at
        ``after_sequence`` (0: before the first event, which follows), or at the table's
        latest sequence with ``latest``; ``batched`` asks for batches (see the class)."""
        start = play_pb2.StartPlay(after_sequence=after_sequence, latest=latest, batched=batched)
        await self._write(play_pb2.PlayRequest(start=start))
        first = await self.receive()
        if not isinstance(first, Snapshot):
            raise SpadesError(grpc.StatusCode.INTERNAL, f"expected a snapshot first, got {first}")
        self.snapshot = first
        return first

    async def send(
        self, action: Action, sequence: int, action_id: str | None = None, *, note: str = ""
    ) -> str:
        """Send ``action`` answering ``sequence``, with a sealed ``note`` if any (revealed in
        the record once the match is over: :mod:`spades.notes`; ValueError for one that cannot
        be sent); returns its action id (reuse it to resend)."""
        encoded = encode_note(note) if note else b""
        action_id = action_id or new_action_id()
        request = play_pb2.ActionRequest(
            action_id=action_id,
            sequence=sequence,
            action=protocol.action_to_proto(action),
            note=encoded,
        )
        await self._write(play_pb2.PlayRequest(action=request))
        return action_id

    async def receive(self) -> PlayMessage | None:
        """The next message, or None when the server ended the stream."""
        while True:
            if self._dropped:
                raise Unavailable(grpc.StatusCode.UNAVAILABLE, "the connection was dropped")
            if self._pending:
                return self._pending.popleft()
            message = await self._read()
            if message is None:
                return None
            if message.WhichOneof("kind") != "batch":
                return play_message(message)
            self._pending.extend(batch_messages(message.batch))

    async def _read(self) -> play_pb2.PlayResponse | None:
        try:
            message = await self._call.read()
        except asyncio.CancelledError:
            if self._dropped:
                raise Unavailable(
                    grpc.StatusCode.UNAVAILABLE, "the connection was dropped"
                ) from None
            raise
        except grpc.RpcError as error:
            raise from_rpc_error(error) from error
        if message is grpc.aio.EOF:  # type: ignore[attr-defined]
            return None
        return cast(play_pb2.PlayResponse, message)

    async def __aiter__(self) -> AsyncIterator[PlayMessage]:
        while (message := await self.receive()) is not None:
            yield message

    def drop(self) -> None:
        """Cut the stream at once, as a network failure would (later reads raise Unavailable)."""
        self._dropped = True
        self._pending.clear()
        self._call.cancel()

    async def close(self) -> None:
        """Say we are done and close the stream."""
        if not self._call.done():
            with contextlib.suppress(grpc.RpcError, asyncio.InvalidStateError):
                await self._call.done_writing()
            self._call.cancel()

    async def _write(self, request: play_pb2.PlayRequest) -> None:
        if self._dropped:
            raise Unavailable(grpc.StatusCode.UNAVAILABLE, "the connection was dropped")
        try:
            await self._call.write(request)
        except grpc.RpcError as error:
            raise from_rpc_error(error) from error
        except asyncio.InvalidStateError as error:  # written after the call ended
            if self._call.done():
                # The server ended it: its status says why. A replaced stream's ABORTED is no
                # dropped connection, and retried as one it would replace the newer stream.
                try:
                    await self._call.read()  # a call that is done only raises its status
                except grpc.RpcError as status:
                    raise from_rpc_error(status) from error
            raise Unavailable(grpc.StatusCode.UNAVAILABLE, "the stream has ended") from error


async def open_seat_connection(
    stub: play_pb2_grpc.PlayServiceAsyncStub,
    seat_token: str,
    metadata: tuple[tuple[str, str], ...] = (),
    *,
    after_sequence: int = 0,
    latest: bool = False,
    batched: bool = True,
) -> SeatConnection:
    """A seat's Play stream, opened and started (see :meth:`SeatConnection.start`).

    A stream the server refuses as it opens may reach grpc.aio's client as INTERNAL, the
    server's status lost to a write that met the ended stream (grpc/grpc#36066,
    :func:`~spades.client.errors.status_lost`). Opening and starting a stream changes nothing
    at the table, so asking again is the same as asking once: a new stream is opened then, at
    most :data:`LOST_STATUS_ATTEMPTS` in all, and the refusal the server gives is raised."""
    for attempt in range(1, LOST_STATUS_ATTEMPTS + 1):
        connection = SeatConnection(stub, seat_token, metadata)
        try:
            await connection.start(after_sequence, latest=latest, batched=batched)
        except SpadesError as error:
            await connection.close()
            if error.status_lost and attempt < LOST_STATUS_ATTEMPTS:
                continue
            raise
        except BaseException:
            await connection.close()
            raise
        return connection
    raise AssertionError("unreachable")  # pragma: no cover
