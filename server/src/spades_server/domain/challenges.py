"""Challenges as event-sourced aggregates: an account invites accounts to a table.

Each challenge is one stream of the same event log as the tables and accounts,
``challenge-<challenge id>``, of ``spades.server.v1.ChallengeLogEntry`` rows: created (the
challenge as it was made), then each opponent's acceptance, or a decline, a cancellation or its
expiry. Every answer is appended with the stream's expected version, so across replicas a
challenge is answered in one order, and exactly one acceptance is the last: that one names the
table (``table_id``, derived from the challenge id), which is opened idempotently (its stream is
created with expected version 0, every seat joined with a request digest derived from the
challenge), so two replicas finishing the same challenge open one table.

Expiry is decided whenever a challenge is read (a PENDING challenge past its ``expire_time``
reads as EXPIRED, and a call that would answer it appends the expiry first) and by a sweeper
(:class:`ChallengeSweeper`) for the challenges a replica has seen made; once, through the
expected version.

Every party hears of it on its account stream (``challenge_issued`` for the challenger,
``challenge_received`` for each opponent, ``challenge_answered`` for each answer or the expiry,
``table_assigned`` with its seats when the table opens), each told once per account (the
account's own fold says what it was told)."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from spades import protocol
from spades.engine import Rules
from spades.manifest import MAX_SERIES_LENGTH, longest_series
from spades.reasons import Reason
from spades.v1 import (
    cards_pb2,
    challenge_pb2,
)
from spades_server.domain import accounts, errors, ratings, tokens
from spades_server.domain.accounts import Account
from spades_server.domain.checks import rules_of
from spades_server.domain.tables import timestamp
from spades_server.v1 import log_pb2

DEFAULT_EXPIRY_SECONDS: Final = 300


MAX_EXPIRY_SECONDS: Final = 86_400


PENDING = challenge_pb2.CHALLENGE_STATE_PENDING


ACCEPTED = challenge_pb2.CHALLENGE_STATE_ACCEPTED


DECLINED = challenge_pb2.CHALLENGE_STATE_DECLINED


CANCELLED = challenge_pb2.CHALLENGE_STATE_CANCELLED


EXPIRED = challenge_pb2.CHALLENGE_STATE_EXPIRED


STATE_WORDS: Final = {
    PENDING: "pending",
    ACCEPTED: "accepted",
    DECLINED: "declined",
    CANCELLED: "cancelled",
    EXPIRED: "expired",
}


def challenge_id_for(request_id: str, challenger_id: str) -> str:
    """The id of the challenge a CreateChallenge with ``request_id`` makes (a retry finds it)."""
    message = f"challenge id\x00{challenger_id}".encode()
    return hmac.new(request_id.encode(), message, hashlib.sha256).hexdigest()[:20]


def table_request_id(challenge_id: str, match: int = 0) -> str:
    """The request id the challenge's table (of its series' ``match``, from 0) and seats are
    derived from."""
    return f"challenge-{challenge_id}" + (f"-{match + 1}" if match else "")


def table_id_for(challenge_id: str, match: int = 0) -> str:
    return tokens.request_table_id(table_request_id(challenge_id, match), "challenge")


# ---------------------------------------------------------------------------------- aggregate


#: The kinds of entry an account's answer appends (a request id may record each).
ANSWER_KINDS: Final = ("accepted", "declined", "cancelled")


@dataclass(frozen=True)
class RecordedAnswer:
    """An answer appended with a request id: who gave it, the entry, and the challenge's state
    right after it."""

    account_id: str
    entry: log_pb2.ChallengeLogEntry
    state: int


@dataclass
class ChallengeState:
    """One challenge, as its stream says."""

    challenge_id: str
    version: int = 0
    #: The challenge as it is now (its state as recorded: see :meth:`view` for expiry).
    message: challenge_pb2.Challenge = field(default_factory=challenge_pb2.Challenge)
    created_by_request: bytes = b""
    #: Each answer made with a request id, by the id's SHA-256 (a retry finds it).
    answers: dict[bytes, RecordedAnswer] = field(default_factory=dict)

    def fold(self, sequence: int, entry: log_pb2.ChallengeLogEntry) -> None:
        if sequence <= self.version:
            return
        message = self.message
        match entry.WhichOneof("kind"):
            case "created":
                message.CopyFrom(entry.created)
                self.created_by_request = entry.request_id_sha256
            case "accepted":
                for opponent in message.opponents:
                    if opponent.account_id == entry.accepted.account_id:
                        opponent.accepted = True
                if entry.accepted.table_id:
                    message.state = ACCEPTED
                    message.table_id = entry.accepted.table_id
            case "declined":
                message.state = DECLINED
                message.declined_by = entry.declined.account_id
                message.decline_reason = entry.declined.reason
            case "cancelled":
                message.state = CANCELLED
            case "expired":
                message.state = EXPIRED
            case "match_ended":
                ended = entry.match_ended
                message.series.append(ended.match)
                if ended.match.winning_side:
                    message.series_wins[ended.match.winning_side - 1] += 1
                if ended.next_table_id:
                    message.table_id = ended.next_table_id
        kind = entry.WhichOneof("kind")
        if entry.request_id_sha256 and kind in ANSWER_KINDS:
            by = message.challenger_id if kind == "cancelled" else getattr(entry, kind).account_id
            self.answers[entry.request_id_sha256] = RecordedAnswer(by, entry, message.state)
        self.version = sequence

    @property
    def expires_at(self) -> float:
        return self.message.expire_time.ToNanoseconds() / 1e9

    def due(self, now: float) -> bool:
        """Whether it is PENDING past its expiry (an expiry to append)."""
        return self.message.state == PENDING and now >= self.expires_at

    def view(self, now: float) -> challenge_pb2.Challenge:
        """The challenge as a reader sees it: PENDING past its expiry reads as EXPIRED."""
        shown = challenge_pb2.Challenge()
        shown.CopyFrom(self.message)
        if self.due(now):
            shown.state = EXPIRED
        return shown

    def parties(self) -> list[str]:
        """The challenger and the opponents, in that order."""
        return [self.message.challenger_id, *(o.account_id for o in self.message.opponents)]

    @property
    def series_length(self) -> int:
        return max(1, self.message.series_length)

    @property
    def series_in_play(self) -> bool:
        """Whether it is an accepted series (of more than one match) with matches to play."""
        made = self.message
        return made.state == ACCEPTED and 1 < self.series_length > len(made.series)

    def seated_parties(self) -> list[str]:
        """The parties that hold a seat (all but a person who arranged a match of bots)."""
        held = {holder.account_id for holder in self.message.seating}
        return [party for party in self.parties() if party in held]

    def seats_of(self, account_id: str) -> list[cards_pb2.Seat.ValueType]:
        return sorted(h.seat for h in self.message.seating if h.account_id == account_id)


def challenge_not_found(challenge_id: str) -> errors.RequestError:
    return errors.refuse(
        Reason.CHALLENGE_NOT_FOUND,
        f"there is no challenge {challenge_id!r}",
        metadata={"challenge_id": challenge_id[:64]},
    )


# ---------------------------------------------------------------------------------- decisions


def default_seating(parties: list[str], players: int) -> list[challenge_pb2.SeatHolder]:
    """The seating when none is proposed: in turn from north, or at four seats with one
    opponent, the challenger North-South and the opponent East-West."""
    seats = [protocol.seat_to_proto(seat) for seat in range(players)]
    if len(parties) == players:
        holders = parties
    elif players == 4 and len(parties) == 2:
        holders = [parties[0], parties[1], parties[0], parties[1]]
    else:
        raise errors.refuse(
            Reason.CHALLENGE_SEATING_INVALID,
            f"{len(parties)} accounts at {players} seats: propose the seating (who sits where)",
            field="seating",
        )
    return [
        challenge_pb2.SeatHolder(seat=seat, account_id=holder)
        for seat, holder in zip(seats, holders, strict=True)
    ]


def check_seating(
    seating: list[challenge_pb2.SeatHolder],
    parties: list[str],
    rules: Rules,
    rated: bool,
    arranger: bool = False,
) -> list[challenge_pb2.SeatHolder]:
    """The proposed seating in seat order, or INVALID_ARGUMENT (CHALLENGE_SEATING_INVALID):
    every party holds a seat, but the challenger (the first) need not when ``arranger`` (a
    person challenging bots only); at a rated table each account holds seats of one side only
    (ACCOUNT_ON_BOTH_SIDES)."""
    if not seating:
        seating = default_seating(parties, rules.players)
    by_seat: dict[int, str] = {}
    for index, holder in enumerate(seating):
        where = f"seating[{index}]"
        if holder.seat not in cards_pb2.Seat.values() or holder.seat == cards_pb2.SEAT_UNSPECIFIED:
            raise errors.refuse(
                Reason.CHALLENGE_SEATING_INVALID, "name each seat of the seating", field=where
            )
        seat = protocol.seat_from_proto(holder.seat)
        if seat >= rules.players:
            raise errors.refuse(
                Reason.CHALLENGE_SEATING_INVALID,
                f"this table has {rules.players} seats",
                field=f"{where}.seat",
            )
        if seat in by_seat:
            raise errors.refuse(
                Reason.CHALLENGE_SEATING_INVALID,
                "the seating names a seat twice",
                field=f"{where}.seat",
            )
        if holder.account_id not in parties:
            raise errors.refuse(
                Reason.CHALLENGE_SEATING_INVALID,
                "every seat is held by the challenger or an opponent",
                field=f"{where}.account_id",
            )
        by_seat[seat] = holder.account_id
    if len(by_seat) != rules.players:
        raise errors.refuse(
            Reason.CHALLENGE_SEATING_INVALID,
            f"the seating must hold all {rules.players} seats",
            field="seating",
        )
    # A person who challenges bots may arrange their match without a seat (the first party).
    idle = [
        party
        for index, party in enumerate(parties)
        if party not in by_seat.values() and not (index == 0 and arranger)
    ]
    if idle:
        raise errors.refuse(
            Reason.CHALLENGE_SEATING_INVALID,
            f"every party holds a seat, and {idle[0]} holds none",
            field="seating",
        )
    if rated:
        for party in parties:
            held = {seat for seat, holder in by_seat.items() if holder == party}
            if not any(held <= set(side) for side in rules.sides):
                raise errors.refuse(
                    Reason.ACCOUNT_ON_BOTH_SIDES,
                    "at a rated table an account plays for one side only",
                    field="seating",
                )
    return [
        challenge_pb2.SeatHolder(seat=protocol.seat_to_proto(seat), account_id=by_seat[seat])
        for seat in sorted(by_seat)
    ]


def check_opponent_ids(opponent_ids: list[str], challenger: Account, players: int) -> list[str]:
    if not opponent_ids:
        raise errors.refuse(
            Reason.CHALLENGE_OPPONENTS_INVALID,
            "name at least one opponent (opponent_ids)",
            field="opponent_ids",
        )
    for index, opponent_id in enumerate(opponent_ids):
        if opponent_id == challenger.account_id:
            raise errors.refuse(
                Reason.CHALLENGE_SELF,
                "you cannot challenge yourself",
                field=f"opponent_ids[{index}]",
            )
        if opponent_id in opponent_ids[:index]:
            raise errors.refuse(
                Reason.CHALLENGE_OPPONENTS_INVALID,
                "name each opponent once",
                field=f"opponent_ids[{index}]",
            )
    # A person may arrange a match of bots only, holding no seat: one opponent per seat.
    most = players if not challenger.bot else players - 1
    if len(opponent_ids) > most:
        raise errors.refuse(
            Reason.CHALLENGE_OPPONENTS_INVALID,
            f"a table of {players} seats has room for at most {most} opponents",
            field="opponent_ids",
        )
    return list(opponent_ids)


def decide_creation(
    challenge_id: str,
    challenger: Account,
    opponents: list[Account],
    rules_message: Any,
    *,
    rated: bool,
    seating: list[challenge_pb2.SeatHolder],
    expiry_seconds: int,
    now: float,
    series_length: int = 0,
) -> challenge_pb2.Challenge:
    """The challenge to record, or the refusal (each check changes nothing)."""
    rules = rules_of(rules_message)
    if series_length > MAX_SERIES_LENGTH:
        raise errors.refuse(
            Reason.SERIES_LENGTH_OUT_OF_RANGE,
            f"series_length is at most {MAX_SERIES_LENGTH}",
            field="series_length",
        )
    if expiry_seconds > MAX_EXPIRY_SECONDS:
        raise errors.refuse(
            Reason.CHALLENGE_EXPIRY_OUT_OF_RANGE,
            f"expiry_seconds is at most {MAX_EXPIRY_SECONDS}",
            field="expiry_seconds",
        )
    if rated and ratings.pool_of(rules) is None:
        raise errors.refuse(
            Reason.RULES_NOT_RATED,
            "these rules belong to no rating pool, so a challenge with them cannot be rated "
            f"(pools: {', '.join(ratings.POOLS)}; see docs/accounts.md)",
        )
    for opponent in opponents:
        if challenger.bot and not opponent.bot:
            raise errors.refuse(
                Reason.BOT_CHALLENGES_PERSON,
                f"a bot may challenge bots only; {opponent.name} is a person",
            )
    for party in (challenger, *opponents):
        accounts.check_declared(party, rules)
        check_series(party, series_length)
    parties = [challenger.account_id, *(o.account_id for o in opponents)]
    arranger = not challenger.bot and all(opponent.bot for opponent in opponents)
    seats = check_seating(seating, parties, rules, rated, arranger)
    expiry = expiry_seconds or DEFAULT_EXPIRY_SECONDS
    return challenge_pb2.Challenge(
        challenge_id=challenge_id,
        challenger_id=challenger.account_id,
        challenger_name=challenger.name,
        opponents=[
            challenge_pb2.ChallengeOpponent(account_id=o.account_id, name=o.name, bot=o.bot)
            for o in opponents
        ],
        rules=protocol.rules_to_proto(rules),
        rated=rated,
        seating=seats,
        state=PENDING,
        create_time=timestamp(now),
        expire_time=timestamp(now + expiry),
        series_length=series_length,
        series_wins=[0] * len(rules.sides),
    )


def check_series(account: Account, series_length: int) -> None:
    """FAILED_PRECONDITION (SERIES_NOT_DECLARED) when ``account`` is a bot whose manifest does
    not declare a series this long (a person plays any)."""
    longest = longest_series(account.manifest)
    if account.bot and series_length > longest:
        raise errors.refuse(
            Reason.SERIES_NOT_DECLARED,
            f"{account.name} plays at most {longest} match{'es' if longest > 1 else ''} in a row "
            f"(its manifest's max_series_length), not {series_length}",
            metadata={"account_id": account.account_id},
        )


def _check_open(challenge: ChallengeState, now: float) -> None:
    state = challenge.view(now).state
    if state != PENDING:
        raise errors.refuse(
            Reason.CHALLENGE_CLOSED,
            f"this challenge has {'been ' if state != EXPIRED else ''}{STATE_WORDS[state]}",
            metadata={"state": STATE_WORDS[state]},
        )


def _opponent(challenge: ChallengeState, account_id: str) -> challenge_pb2.ChallengeOpponent:
    for opponent in challenge.message.opponents:
        if opponent.account_id == account_id:
            return opponent
    raise errors.refuse(Reason.CHALLENGE_NOT_ADDRESSED, "this challenge is not addressed to you")


def _to_answer(
    challenge: ChallengeState, account_id: str, now: float
) -> challenge_pb2.ChallengeOpponent:
    """The caller as an opponent who may still answer: addressed, not yet accepted, and the
    challenge still open (refused in that order)."""
    opponent = _opponent(challenge, account_id)
    if opponent.accepted:
        raise errors.refuse(
            Reason.CHALLENGE_ALREADY_ANSWERED, "you have accepted this challenge already"
        )
    _check_open(challenge, now)
    return opponent


def answered_before(
    challenge: ChallengeState, request_digest: bytes, account: Account, kind: str
) -> RecordedAnswer | None:
    """The answer of this kind the account gave with this request id, if it did (a retry: its
    outcome is the challenge as it is now); REQUEST_ID_REUSED when the id made or answered the
    challenge otherwise."""
    if not request_digest:
        return None
    earlier = challenge.answers.get(request_digest)
    if earlier is None:
        if request_digest == challenge.created_by_request:
            raise accounts.request_id_reused()
        return None
    if earlier.account_id != account.account_id or earlier.entry.WhichOneof("kind") != kind:
        raise accounts.request_id_reused()
    return earlier


def decide_acceptance(
    challenge: ChallengeState, account: Account, now: float, request_digest: bytes = b""
) -> log_pb2.ChallengeLogEntry | None:
    if answered_before(challenge, request_digest, account, "accepted"):
        return None
    opponent = _to_answer(challenge, account.account_id, now)
    # The manifest may have changed since the challenge was made.
    accounts.check_declared(account, protocol.rules_from_proto(challenge.message.rules))
    check_series(account, challenge.message.series_length)
    waiting = [o for o in challenge.message.opponents if not o.accepted and o is not opponent]
    table_id = "" if waiting else table_id_for(challenge.challenge_id)
    return log_pb2.ChallengeLogEntry(
        accepted=log_pb2.ChallengeAcceptance(account_id=account.account_id, table_id=table_id),
        request_id_sha256=request_digest,
    )


def decide_decline(
    challenge: ChallengeState,
    account: Account,
    reason: challenge_pb2.DeclineReason.ValueType,
    now: float,
    request_digest: bytes = b"",
) -> log_pb2.ChallengeLogEntry | None:
    if answered_before(challenge, request_digest, account, "declined"):
        return None
    _to_answer(challenge, account.account_id, now)
    return log_pb2.ChallengeLogEntry(
        declined=log_pb2.ChallengeRefusal(account_id=account.account_id, reason=reason),
        request_id_sha256=request_digest,
    )


def decide_cancel(
    challenge: ChallengeState, account: Account, now: float, request_digest: bytes = b""
) -> log_pb2.ChallengeLogEntry | None:
    if answered_before(challenge, request_digest, account, "cancelled"):
        return None
    if account.account_id != challenge.message.challenger_id:
        raise errors.refuse(
            Reason.CHALLENGE_NOT_YOURS, "only the challenger may cancel this challenge"
        )
    _check_open(challenge, now)
    return log_pb2.ChallengeLogEntry(
        cancelled=log_pb2.ChallengeEnded(), request_id_sha256=request_digest
    )


def decide_expiry(challenge: ChallengeState, now: float) -> log_pb2.ChallengeLogEntry | None:
    """The expiry, once it is due (None otherwise: answered, or not yet)."""
    if not challenge.due(now):
        return None
    return log_pb2.ChallengeLogEntry(expired=log_pb2.ChallengeEnded())


def decide_match_end(
    challenge: ChallengeState, table_id: str, scores: list[int], winners: set[int]
) -> log_pb2.ChallengeLogEntry | None:
    """The end of the series' match at ``table_id`` (its sides' final ``scores``, the seats
    that won), and the next match's table unless it was the last; None when that match's end
    is recorded already (or it is not the match in play)."""
    made = challenge.message
    if not challenge.series_in_play or made.table_id != table_id:
        return None
    sides = protocol.rules_from_proto(made.rules).sides
    won = [index + 1 for index, side in enumerate(sides) if winners.intersection(side)]
    played = len(made.series) + 1
    next_table = (
        table_id_for(challenge.challenge_id, played) if played < challenge.series_length else ""
    )
    return log_pb2.ChallengeLogEntry(
        match_ended=log_pb2.ChallengeMatchEnded(
            match=challenge_pb2.SeriesMatch(
                table_id=table_id, scores=scores, winning_side=won[0] if len(won) == 1 else 0
            ),
            next_table_id=next_table,
        )
    )


ChallengeDecision = Callable[[ChallengeState], log_pb2.ChallengeLogEntry | None]
