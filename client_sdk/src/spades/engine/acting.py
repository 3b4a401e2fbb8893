"""Acting on a match: what a seat may do, and the state after an action or a table's command.

The layer above the engine's parts: a :class:`~spades.engine.state.MatchState` only folds
events, :mod:`spades.engine.legal` says what a seat may do and :mod:`spades.engine.commands`
decides an action's events in place; here are the calls a table, a bot or a search makes.
Each ``apply``-style call returns a new state and the events it caused and leaves the given
state as it was; :func:`act` changes the state in place (for search, with ``state.clone()``).
Each raises :class:`~spades.engine.errors.IllegalAction` with the reason, changing nothing.

>>> from spades.engine import BID, Rules, new_match
>>> state, _ = new_match(Rules(), seed=bytes(32))
>>> for seat in range(4):
...     state, _ = apply_seat(state, seat, f"bot {seat}", bot=True)
>>> seat = state.seat_to_act()
>>> after, events = apply(state, seat, BID[3])
>>> [type(event).__name__ for event in events], state.bids[seat], after.bids[seat]
(['BidMade'], None, Bid(tricks=3, blind=False))
"""

from __future__ import annotations

from spades.engine import commands
from spades.engine import events as ev
from spades.engine.actions import Action
from spades.engine.commands import Events, act, automatic_action
from spades.engine.legal import legal_actions
from spades.engine.seating import Seat
from spades.engine.state import MatchState

__all__ = [
    "act",
    "apply",
    "apply_seat",
    "automatic_action",
    "close",
    "leave_seat",
    "legal_actions",
    "reclaim",
    "substitute",
    "time_out",
]


def apply(state: MatchState, seat: Seat, action: Action) -> tuple[MatchState, Events]:
    """The state after ``seat`` takes ``action``, and the events it caused."""
    new = state.clone()
    return new, act(new, seat, action)


def time_out(state: MatchState) -> tuple[MatchState, Events]:
    """The state after the clock acts for the seat on turn: TurnTimedOut, then its events."""
    return commands.applied(state, commands.time_out)


def substitute(
    state: MatchState, seat: Seat, reason: ev.SubstitutionReason
) -> tuple[MatchState, Events]:
    """The state after a substitute takes over ``seat`` (one already substituted may get a new
    substitute). When to do it is the server's policy, not a rule."""
    return commands.applied(state, commands.substitute, seat, reason)


def reclaim(state: MatchState, seat: Seat) -> tuple[MatchState, Events]:
    """The state after the player of ``seat`` takes it back from its substitute."""
    return commands.applied(state, commands.reclaim, seat)


def close(state: MatchState) -> tuple[MatchState, Events]:
    """The state after the operator closes the table: the match ends and no side wins."""
    return commands.applied(state, commands.close)


def apply_seat(
    state: MatchState, seat: Seat, name: str, *, bot: bool = False
) -> tuple[MatchState, Events]:
    """The state after a player takes ``seat``; the last seat taken deals the first hand."""
    return commands.applied(state, commands.take_seat, seat, name, bot)


def leave_seat(state: MatchState, seat: Seat) -> tuple[MatchState, Events]:
    """The state after a player leaves ``seat`` before the match starts."""
    return commands.applied(state, commands.leave_seat, seat)
