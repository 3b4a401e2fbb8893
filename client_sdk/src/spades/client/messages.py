"""What arrives on Play and Watch streams, as engine values (the protobuf stays at the edge)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import grpc

from spades import protocol
from spades.client.errors import NO_DETAILS, ErrorDetails, status_code
from spades.engine import Action, SeatView
from spades.engine import events as ev
from spades.v1 import events_pb2, play_pb2, view_pb2


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The viewer's view at ``sequence``: sent first on every stream."""

    sequence: int
    view: view_pb2.MatchView

    def seat_view(self) -> SeatView:
        """The view as the engine's :class:`~spades.engine.SeatView` (protobuf stays here)."""
        return protocol.view_from_proto(self.view)


@dataclass(frozen=True, slots=True)
class StreamEvent:
    """One event of the table's log, redacted for the viewer."""

    sequence: int
    event: ev.Event
    #: The id of the seat's own action that caused it (Play streams only), else "".
    action_id: str = ""


@dataclass(frozen=True, slots=True)
class Prompt:
    """It is the seat's turn: answer ``sequence`` with one of ``legal_actions``."""

    sequence: int
    legal_actions: tuple[Action, ...]
    #: When the turn's time runs out (timezone-aware, UTC); None when no clock runs.
    deadline: datetime | None = None


@dataclass(frozen=True, slots=True)
class ActionResult:
    """The outcome of one action sent on the stream."""

    action_id: str
    accepted: bool
    code: grpc.StatusCode
    reason: str
    #: The sequence of the first event the action caused (when accepted).
    sequence: int
    #: A refusal's reason code, fields at fault and retry delay (``ActionResult.status``).
    details: ErrorDetails = NO_DETAILS

    @property
    def reason_code(self) -> str:
        """The stable reason code of a refusal ("NOT_YOUR_TURN"), "" when accepted."""
        return self.details.reason_code


PlayMessage = Snapshot | StreamEvent | Prompt | ActionResult
WatchMessage = Snapshot | StreamEvent


def event_message(message: events_pb2.Event) -> StreamEvent:
    return StreamEvent(message.sequence, protocol.event_from_proto(message), message.action_id)


def play_message(message: play_pb2.PlayResponse) -> PlayMessage:
    """The engine-valued form of a PlayResponse."""
    kind = message.WhichOneof("kind")
    if kind == "snapshot":
        return Snapshot(message.snapshot.sequence, message.snapshot.view)
    if kind == "event":
        return event_message(message.event)
    if kind == "prompt":
        prompt = message.prompt
        deadline = prompt.deadline.ToDatetime(tzinfo=UTC) if prompt.HasField("deadline") else None
        return Prompt(
            prompt.sequence,
            tuple(protocol.action_from_proto(action) for action in prompt.legal_actions),
            deadline,
        )
    if kind == "action_result":
        result = message.action_result
        return ActionResult(
            result.action_id,
            result.accepted,
            grpc.StatusCode.OK if result.accepted else status_code(result.code),
            result.reason,
            result.sequence,
            ErrorDetails.from_status(result.status) if result.HasField("status") else NO_DETAILS,
        )
    raise protocol.ProtocolError("PlayResponse.kind", "the server sent an empty message")


def watch_message(message: play_pb2.WatchResponse) -> WatchMessage:
    """The engine-valued form of a WatchResponse."""
    if message.WhichOneof("kind") == "snapshot":
        return Snapshot(message.snapshot.sequence, message.snapshot.view)
    return event_message(message.event)
