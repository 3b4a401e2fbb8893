"""What arrives on Play and Watch streams, as engine values (the protobuf stays at the edge)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from datetime import UTC, datetime

import grpc

from spades import protocol
from spades.client.errors import NO_DETAILS, ErrorDetails, status_code
from spades.engine import Action, Card, PassCards, SeatView
from spades.engine import events as ev
from spades.v1 import events_pb2, play_pb2, view_pb2


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The viewer's view at ``sequence``: sent first on every stream."""

    sequence: int
    view: view_pb2.MatchView

    def seat_view(self) -> SeatView | None:
        """The view as the engine's :class:`~spades.engine.SeatView` (protobuf stays here);
        None for the snapshot at sequence 0 of a stream started from the beginning, which comes
        before the table exists (its view names only the viewer)."""
        if self.sequence == 0:
            return None
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
    """It is the seat's turn: answer ``sequence`` with one of ``legal_actions``.

    The prompt is withdrawn once an event after ``sequence`` arrives (a new one follows if the
    seat must still act). For the Blind Nil card pass the server sends "choose ``count`` of
    these cards" (``card_pass``); ``legal_actions`` then lists every such pass, as the engine
    would, so a bot picks among them like any other choice.
    """

    sequence: int
    legal_actions: tuple[Action, ...]
    #: When the turn's time runs out (timezone-aware, UTC); None when no clock runs.
    deadline: datetime | None = None
    #: The seat may concede now (never a substitute), and claim the turn's extension.
    may_concede: bool = False
    may_claim_extension: bool = False
    #: The card pass: (how many cards, among which), or None when this turn is no pass.
    card_pass: tuple[int, tuple[Card, ...]] | None = None


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
        return prompt_message(message.prompt)
    if kind == "action_result":
        return result_message(message.action_result)
    if kind == "batch":
        raise protocol.ProtocolError(
            "PlayResponse.kind", "a batch is several messages: read it with batch_messages"
        )
    raise protocol.ProtocolError("PlayResponse.kind", "the server sent an empty message")


def batch_messages(batch: play_pb2.Batch) -> list[PlayMessage]:
    """A batch's contents as the messages an unbatched stream sends: its events in sequence,
    then its action results, then its prompt (play.proto's Batch)."""
    parts: list[PlayMessage] = [event_message(event) for event in batch.events]
    parts.extend(result_message(result) for result in batch.action_results)
    if batch.HasField("prompt"):
        parts.append(prompt_message(batch.prompt))
    return parts


def result_message(result: play_pb2.ActionResult) -> ActionResult:
    """The engine-valued form of an ActionResult."""
    return ActionResult(
        result.action_id,
        result.accepted,
        grpc.StatusCode.OK if result.accepted else status_code(result.code),
        result.reason,
        result.sequence,
        ErrorDetails.from_status(result.status) if result.HasField("status") else NO_DETAILS,
    )


def prompt_message(prompt: play_pb2.TurnPrompt) -> Prompt:
    """The engine-valued form of a TurnPrompt (a card pass expanded into its choices)."""
    deadline = prompt.deadline.ToDatetime(tzinfo=UTC) if prompt.HasField("deadline") else None
    legal = tuple(protocol.action_from_proto(action) for action in prompt.legal_actions)
    card_pass = None
    if prompt.HasField("card_pass"):
        cards = tuple(protocol.cards_from_proto(prompt.card_pass.cards, "card_pass.cards"))
        count = prompt.card_pass.count
        card_pass = (count, cards)
        legal += tuple(PassCards(combo) for combo in itertools.combinations(cards, count))
    return Prompt(
        prompt.sequence,
        legal,
        deadline,
        may_concede=prompt.may_concede,
        may_claim_extension=prompt.may_claim_extension,
        card_pass=card_pass,
    )


def watch_message(message: play_pb2.WatchResponse) -> WatchMessage:
    """The engine-valued form of a WatchResponse (not a batch: see :func:`watch_messages`)."""
    if message.WhichOneof("kind") == "snapshot":
        return Snapshot(message.snapshot.sequence, message.snapshot.view)
    return event_message(message.event)


def watch_messages(message: play_pb2.WatchResponse) -> list[WatchMessage]:
    """The engine-valued form of a WatchResponse: one message, or each event of a batch."""
    if message.WhichOneof("kind") == "batch":
        return [event_message(event) for event in message.batch.events]
    return [watch_message(message)]
