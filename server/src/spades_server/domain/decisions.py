"""The server's decisions: pure functions from a table (and a request) to what to append.

Each ``decide_*`` takes the latest :class:`~spades_server.domain.tables.Table` and returns a
:class:`~spades_server.domain.tables.Decided` (the engine's new state and the events to append, with
the action id and secrets the server adds), None when there is nothing to do, or raises a
:class:`~spades_server.domain.errors.RequestError` to refuse. They read no clock, no log and no
network, so they are tested without a server; :meth:`TableStore.execute` runs them with the
expected version and retries them on a conflict. The rules are the engine's: a decision checks
only what the server adds (tokens, join codes, idempotency, substitutes), and lets the engine
refuse the rest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from spades import notes
from spades.engine import (
    Action,
    Concede,
    IllegalAction,
    MatchState,
    apply,
    apply_seat,
    close,
    leave_seat,
    reclaim,
    substitute,
    time_out,
)
from spades.engine import events as ev
from spades.engine.events import SubstitutionReason
from spades.reasons import Reason
from spades_server.domain import errors, seats, tokens
from spades_server.domain.checks import MAX_PLAYER_NAME
from spades_server.domain.table_events import Listing, Secrets
from spades_server.domain.tables import Decided, Table

SUPERSEDED = "a newer stream for this seat took over, so this one is closed"
SUBSTITUTED = (
    "a house bot plays this seat since you were away; open a new Play stream with your seat "
    "token to take it back"
)


#: A name's trailing number ("House Heuristic 2"), which a numbered name replaces.
_NUMBERED = re.compile(r" [0-9]+$")


class AlreadyAnswered(Exception):
    """The action id was answered before: its first event has ``sequence``."""

    def __init__(self, sequence: int) -> None:
        self.sequence = sequence


class AlreadyJoined(Exception):
    """The join's request id took ``seat`` of the table before (a retry): answer with it."""

    def __init__(self, seat: int) -> None:
        self.seat = seat


# ---------------------------------------------------------------------------------- seating


def decide_new_table(
    created: tuple[MatchState, list[ev.Event]],
    *,
    name: str,
    private: bool,
    join_code: str,
    quick_match: bool = False,
    request_digest: bytes = b"",
    rated: bool = False,
    note_key: bytes | None = None,
) -> Decided:
    """A new table: the engine's new match (``created``), with its listing and join code, the
    digest of the request id that made it (a retry finds it by that), and the key of its
    sealed notes' salts (``note_key``; a fresh random one by default)."""
    return Decided.of(
        created,
        secrets=Secrets(
            join_code_sha256=tokens.digest(join_code) if join_code else b"",
            request_id_sha256=request_digest,
            note_key=tokens.new_note_key() if note_key is None else note_key,
        ),
        listing=Listing(name, private, quick_match, rated),
    )


def decide_join(
    table: Table,
    seat_wanted: int | None,
    name: str,
    bot: bool,
    join_code: str,
    token: str,
    request_digest: bytes = b"",
    account_id: str = "",
) -> Decided:
    """``SeatTaken`` for the holder of ``token`` at ``seat_wanted`` (None: the first free),
    recorded as ``account_id``'s seat when an account joins; AlreadyJoined when the request id
    (its digest) took a seat here before."""
    if table.private and not (join_code and tokens.matches(join_code, table.join_code_sha256)):
        if not join_code:
            raise errors.refuse(
                Reason.JOIN_CODE_REQUIRED,
                "this private table needs its join code",
                field="join_code",
            )
        raise errors.refuse(
            Reason.WRONG_JOIN_CODE, "that is not this table's join code", field="join_code"
        )
    if request_digest and request_digest in table.joined_requests:
        # Before "started": the retry of the join that filled the last seat finds its seat.
        raise AlreadyJoined(table.joined_requests[request_digest])
    if table.started:
        raise errors.refuse(Reason.MATCH_STARTED, "the match at this table has already started")
    if table.rated and not account_id:
        raise errors.refuse(
            Reason.RATED_NEEDS_ACCOUNT,
            "only accounts sit at a rated table: join with your account key "
            "(authorization: Bearer <key>)",
        )
    state = table.state
    # At a rated table an account plays for one side only (a side's two seats, if it likes).
    barred = _opposing_seats(table, account_id) if table.rated else set()
    if seat_wanted is None:
        free = [seat for seat, player in enumerate(state.players) if player is None]
        if not free:
            raise errors.refuse(Reason.TABLE_FULL, "every seat at this table is taken")
        allowed = [seat for seat in free if seat not in barred]
        if not allowed:
            raise errors.refuse(
                Reason.ACCOUNT_ON_BOTH_SIDES, "the free seats here are on the side against yours"
            )
        seat_wanted = allowed[0]
    elif seat_wanted >= state.players_count:
        raise errors.refuse(
            Reason.NO_SUCH_SEAT, f"this table has {state.players_count} seats", field="seat"
        )
    elif seat_wanted in barred:
        raise errors.refuse(
            Reason.ACCOUNT_ON_BOTH_SIDES,
            "at a rated table an account plays for one side only, and you hold a seat of the "
            "other side",
        )
    # An account's seats show the account's own name; anyone else's name is made unique here,
    # on the table the log says, so replicas seating players at once cannot both give it.
    shown = name if account_id else unique_name(table, name)
    # A taken seat is the engine's refusal (IllegalAction: SEAT_TAKEN).
    return Decided.of(
        apply_seat(state, seat_wanted, shown, bot=bot),
        secrets=Secrets(seat_token_sha256=tokens.digest(token), request_id_sha256=request_digest),
        account_id=account_id,
    )


def unique_name(table: Table, name: str) -> str:
    """``name``, or when a seat of the table already shows it, ``name`` numbered: its stem (the
    name without a trailing number) and the smallest number from 2 no seat shows. So the house
    bots, which all ask for "House Heuristic 1", sit as "House Heuristic 1", "House Heuristic 2",
    ..., and a second "Alice" sits as "Alice 2". Names that tell the seats apart must not
    depend on which replica seated whom."""
    shown = {player[0] for player in table.state.players if player is not None}
    if name not in shown:
        return name
    stem = _NUMBERED.sub("", name)
    number = 2
    while (numbered := _numbered(stem, number)) in shown:
        number += 1
    return numbered


def _numbered(stem: str, number: int) -> str:
    suffix = f" {number}"
    return stem[: MAX_PLAYER_NAME - len(suffix)] + suffix


def _opposing_seats(table: Table, account_id: str) -> set[int]:
    """The seats of the sides ``account_id`` holds no seat of, when it holds one already."""
    held = {seat for seat, holder in table.seat_accounts.items() if holder == account_id}
    if not held:
        return set()
    return {
        seat for side in table.state.rules.sides if not held.intersection(side) for seat in side
    }


def decide_leave(table: Table, seat: int, token: str) -> Decided:
    """``SeatLeft`` for the seat's own player, before the match starts."""
    # Checked on the latest table: a late retry must not free a newcomer's seat.
    seats.check_player(table, seat, token)
    if table.started:
        raise errors.refuse(
            Reason.MATCH_STARTED,
            "the match has started: seats cannot be left now (you may concede)",
        )
    return Decided.of(leave_seat(table.state, seat))


def decide_release(table: Table, seat: int, holder: bytes) -> Decided | None:
    """``SeatLeft`` for a seat whose holder (token digest ``holder``) never opened a stream
    (see :mod:`spades_server.processes.unclaimed`); None once the match started or the seat changed
    hands (left, or taken again by someone else), so the release happens once."""
    if table.started or not table.is_player(seat, holder):
        return None
    return Decided.of(leave_seat(table.state, seat))


# ---------------------------------------------------------------------------------- play


@dataclass(frozen=True)
class ActionRequest:
    """A seat's action as a Play stream sent it."""

    seat: int
    #: Digest of the token the stream was opened with, and whether it is a substitute's.
    holder: bytes
    substitute: bool
    action: Action
    action_id: str
    #: The table sequence the action answers.
    sequence: int
    #: The sealed note attached to the action (UTF-8, checked), empty for none.
    note: bytes = b""


def decide_action(table: Table, request: ActionRequest, *, superseded: bool = False) -> Decided:
    """The events of a seat's action; AlreadyAnswered for an action id seen before."""
    seat = request.seat
    if superseded:
        # A replaced stream stuck writing to its client still reads the client's actions,
        # and must not act for the seat any more.
        raise errors.refuse(Reason.STREAM_REPLACED, SUPERSEDED)
    seats.check_holder(table, seat, request.holder, request.substitute)
    first = table.answered_actions.get((seat, request.action_id))
    if first is not None:
        raise AlreadyAnswered(first)
    if table.finished:
        raise errors.refuse(Reason.MATCH_OVER, "the match is over")
    if request.substitute and isinstance(request.action, Concede):
        raise errors.refuse(
            Reason.SUBSTITUTE_MAY_NOT_CONCEDE, "a substitute may not concede for the seat's player"
        )
    if not request.substitute and table.state.substitutions[seat] is not None:
        raise errors.refuse(Reason.SEAT_SUBSTITUTED, SUBSTITUTED)
    if request.sequence != table.version:
        sequences = {"sequence": str(request.sequence), "table_sequence": str(table.version)}
        if request.sequence > table.version:
            raise errors.refuse(
                Reason.SEQUENCE_AHEAD,
                f"this answers sequence {request.sequence}, which the table has not reached "
                f"(it is at {table.version})",
                field="sequence",
                metadata=sequences,
            )
        raise errors.refuse(
            Reason.STALE_SEQUENCE,
            f"stale: this answers sequence {request.sequence}, but the table is at {table.version}",
            metadata=sequences,
        )
    try:
        outcome = apply(table.state, seat, request.action)
    except IllegalAction as error:
        raise errors.from_illegal(error, "action.") from error
    # Every action's first event commits to its note, the empty one too: an event with a
    # commitment only when there is a note would tell the partner so (spades.notes).
    return Decided.of(
        outcome,
        request.action_id,
        secrets=Secrets(note=request.note) if request.note else None,
        note_sha256=notes.note_digest(table.note_key, table.version + 1, request.note),
    )


# ---------------------------------------------------------------------------------- clock


def decide_timeout(table: Table, version: int) -> Decided | None:
    """The timeout if the table is still where the deadline was computed (at ``version``)."""
    if table.version != version or table.state.turn is None or table.finished:
        return None
    return Decided.of(time_out(table.state))


# ---------------------------------------------------------------------------------- absence


def decide_substitution(
    table: Table,
    seat: int,
    reason: SubstitutionReason,
    token: str,
    *,
    after_timeouts: int,
    connected: bool = False,
) -> Decided | None:
    """A substitute (holding ``token``) for the seat, or None when the table no longer needs
    one: the run of timeouts ended, a substitute already came, or the player is connected."""
    if not table.in_play:
        return None
    state = table.state
    if reason is SubstitutionReason.TIMEOUTS:
        if not after_timeouts or state.timeout_streaks[seat] < after_timeouts:
            return None  # the run ended (the seat acted), or a substitute already came for it
    elif state.substitutions[seat] is not None or connected:
        return None
    return Decided.of(
        substitute(state, seat, reason),
        secrets=Secrets(substitute_token_sha256=tokens.digest(token)),
    )


def decide_reclaim(table: Table, seat: int, holder: bytes) -> Decided | None:
    """``SeatReclaimed`` when the seat's own player (token digest ``holder``) comes back to a
    seat a substitute plays; None otherwise."""
    if not table.in_play or not table.is_player(seat, holder):
        return None
    if table.state.substitutions[seat] is None:
        return None
    return Decided.of(reclaim(table.state, seat))


# ---------------------------------------------------------------------------------- admin


def decide_close(table: Table) -> Decided:
    """The operator closes the table: the engine ends the match (MatchEnded, no winners, then
    SeedRevealed); "the match is already over" is its refusal."""
    return Decided.of(close(table.state))
