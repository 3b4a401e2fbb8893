"""Replaying a record through the engine: every action again, every event checked.

:func:`replay` re-creates the table from the recorded rules, seed and preset deals, derives each
player action from the recorded events (a seat taken, a Blind Nil choice, a bid, a pass, a card,
an extension claimed, a timeout, a substitute taking a seat or its player taking it back, a
concession), applies it, and checks that the engine produces exactly the recorded events, one
for one. A record that was tampered with, or played under other rules, fails at the first
event that differs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from spades.engine import apply, apply_seat, close, leave_seat, reclaim, substitute, time_out
from spades.engine import events as ev
from spades.engine.actions import (
    BID,
    CLAIM_EXTENSION,
    CONCEDE,
    PLAY,
    Action,
    ChooseBlindNil,
    MakeBid,
    PassCards,
)
from spades.engine.cards import Card
from spades.engine.commands import new_match
from spades.engine.errors import IllegalAction, InvalidRules
from spades.engine.seating import seat_name
from spades.engine.state import MatchState
from spades.engine.views import redact
from spades.records.record import RecordError, events_of
from spades.v1 import record_pb2


class NotReplayable(RecordError):
    """The record lacks what a replay needs (the seed of an unfinished match is secret)."""


class ReplayError(RecordError):
    """The engine does not produce the recorded event at ``index`` (0 is TableCreated)."""

    def __init__(self, index: int, reason: str) -> None:
        super().__init__(f"event {index}: {reason}")
        self.index = index
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a replay: the state before an action, the events the engine produced for
    it (complete: nothing hidden, whatever the record hides) and the state after. The first
    step is the table's creation, with no state before it."""

    before: MatchState | None
    events: tuple[ev.Event, ...]
    after: MatchState


def replay(record: record_pb2.GameRecord) -> MatchState:
    """Re-run the recorded match through the engine and return its final state.

    Raises :class:`NotReplayable` for a record without a seed, and :class:`ReplayError` naming
    the first event the engine does not reproduce (an illegal action, a changed card, bid or
    score...).
    """
    state: MatchState | None = None
    for step in replay_steps(record):
        state = step.after
    assert state is not None  # the first step creates the table
    return state


def replay_steps(record: record_pb2.GameRecord) -> Iterator[Step]:
    """The recorded match, action by action, as the engine re-runs it (see :class:`Step`);
    each step is checked against the record before it is given, so a consumer that reads to
    the end has seen a record the engine reproduces whole. Raises as :func:`replay` does."""
    recorded = events_of(record)
    created = recorded[0]
    assert isinstance(created, ev.TableCreated)
    seed = created.seed or record.seed or _revealed_seed(recorded)
    if not seed:
        raise NotReplayable(
            "this record has no seed (it is the public record of an unfinished match), "
            "so its deals are secret and it cannot be replayed"
        )
    try:
        state, produced = new_match(created.rules, seed, created.preset_deals or ())
    except InvalidRules as error:
        raise ReplayError(0, f"the table cannot be created: {error}") from error
    _compare(recorded, 0, produced)
    yield Step(None, tuple(produced), state)
    index = len(produced)
    while index < len(recorded):
        event = recorded[index]
        before = state
        try:
            state, produced = _redo(state, event, index)
        except IllegalAction as error:
            raise ReplayError(index, f"{_describe(event)} is illegal: {error.reason}") from error
        _compare(recorded, index, produced)
        yield Step(before, tuple(produced), state)
        index += len(produced)


def _revealed_seed(events: Sequence[ev.Event]) -> bytes | None:
    for event in events:
        if isinstance(event, ev.SeedRevealed):
            return event.seed
    return None


def _redo(state: MatchState, event: ev.Event, index: int) -> tuple[MatchState, list[ev.Event]]:
    """Apply the player action behind ``event`` (the first event that action caused)."""
    if isinstance(event, ev.SeatTaken):
        return apply_seat(state, event.seat, event.name, bot=event.bot)
    if isinstance(event, ev.SeatLeft):
        return leave_seat(state, event.seat)
    if isinstance(event, ev.TurnTimedOut):
        return time_out(state)
    if isinstance(event, ev.SeatSubstituted):
        return substitute(state, event.seat, event.reason)
    if isinstance(event, ev.SeatReclaimed):
        return reclaim(state, event.seat)
    if isinstance(event, ev.MatchEnded) and event.reason is ev.EndReason.CLOSED:
        return close(state)
    action: Action
    seat: int
    if isinstance(event, ev.BlindNilChosen):
        seat, action = event.seat, ChooseBlindNil(event.blind)
    elif isinstance(event, ev.BidMade):
        # A Blind Nil bid is made by the Blind Nil choice, which produces it.
        if event.bid.blind:
            raise ReplayError(index, "a Blind Nil bid must follow the seat's Blind Nil choice")
        tricks = event.bid.tricks
        seat, action = event.seat, BID[tricks] if tricks < len(BID) else MakeBid(tricks)
    elif isinstance(event, ev.CardsPassed):
        if event.cards is None:
            raise NotReplayable(f"event {index}: the passed cards are hidden in this record")
        seat, action = event.from_seat, PassCards(event.cards)
    elif isinstance(event, ev.CardPlayed):
        seat, action = event.seat, PLAY[event.card]
    elif isinstance(event, ev.Conceded):
        seat, action = event.seat, CONCEDE
    elif isinstance(event, ev.ExtensionClaimed):
        seat, action = event.seat, CLAIM_EXTENSION
    else:
        raise ReplayError(
            index,
            f"the record has {type(event).__name__} where the engine waits for a player's action",
        )
    return apply(state, seat, action)


def _compare(recorded: Sequence[ev.Event], start: int, produced: Sequence[ev.Event]) -> None:
    for offset, made in enumerate(produced):
        index = start + offset
        if index >= len(recorded):
            raise ReplayError(
                index, f"the record ends, but the engine goes on with {_describe(made)}"
            )
        logged = recorded[index]
        # A record may hide what a spectator could not see; it must agree with the rest.
        if logged != made and logged != redact(made, None):
            raise ReplayError(index, _difference(logged, made))


def _difference(logged: ev.Event, made: ev.Event) -> str:
    if type(logged) is not type(made):
        return f"the record has {_describe(logged)}, but the engine produces {_describe(made)}"
    path, logged_value, made_value = _first_difference(logged, made, "")
    return (
        f"{type(logged).__name__}.{path} is {_show(logged_value)} in the record, "
        f"but the engine produces {_show(made_value)}"
    )


def _first_difference(logged: Any, made: Any, path: str) -> tuple[str, Any, Any]:
    if (
        dataclasses.is_dataclass(logged)
        and not isinstance(logged, type)
        and type(logged) is type(made)
    ):
        for field in dataclasses.fields(logged):
            a, b = getattr(logged, field.name), getattr(made, field.name)
            if a != b:
                return _first_difference(a, b, f"{path}.{field.name}" if path else field.name)
    if (
        isinstance(logged, tuple)
        and isinstance(made, tuple)
        and len(logged) == len(made)
        and not isinstance(logged, Card)
    ):
        for position, (a, b) in enumerate(zip(logged, made, strict=True)):
            if a != b:
                return _first_difference(a, b, f"{path}[{position}]")
    return path, logged, made


def _show(value: Any) -> str:
    if isinstance(value, Card):
        return value.symbol
    if isinstance(value, tuple) and all(isinstance(item, Card) for item in value):
        return "(" + " ".join(item.symbol for item in value) + ")"
    return repr(value)


def _describe(event: ev.Event) -> str:
    """A short account of an event, naming its seat, bid or card."""
    if isinstance(event, ev.CardPlayed):
        return f"{seat_name(event.seat)} playing the {event.card.symbol}"
    if isinstance(event, ev.BidMade):
        return f"{seat_name(event.seat)} bidding {event.bid}"
    if isinstance(event, ev.BlindNilChosen):
        choice = "Blind Nil" if event.blind else "to look"
        return f"{seat_name(event.seat)} choosing {choice}"
    if isinstance(event, ev.CardsPassed):
        cards = " ".join(card.symbol for card in event.cards or ())
        return f"{seat_name(event.from_seat)} passing {cards or 'cards'}"
    if isinstance(event, ev.Conceded):
        return f"{seat_name(event.seat)} conceding"
    if isinstance(event, ev.SeatTaken):
        return f"{event.name!r} taking the {seat_name(event.seat)} seat"
    if isinstance(event, ev.TurnTimedOut):
        return f"{seat_name(event.seat)}'s time running out"
    if isinstance(event, ev.ExtensionClaimed):
        return f"{seat_name(event.seat)} claiming the extension"
    if isinstance(event, ev.SeatSubstituted):
        return f"a substitute taking over {seat_name(event.seat)} ({event.reason.value})"
    if isinstance(event, ev.SeatReclaimed):
        return f"{seat_name(event.seat)}'s player taking the seat back"
    return type(event).__name__
