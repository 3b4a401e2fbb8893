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
account's own fold says what it was told).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

import grpc
import structlog

from spades import protocol
from spades.engine import Rules, new_match
from spades.reasons import Reason
from spades.v1 import (
    account_pb2,
    cards_pb2,
    challenge_pb2,
    challenge_pb2_grpc,
)
from spades_server import accounts, errors, paging, ratings, streams, tokens
from spades_server.accounts import Account, AccountDecided, AccountStore
from spades_server.auth import bearer_key_from
from spades_server.checks import check_request_id, rules_of
from spades_server.decisions import AlreadyJoined, decide_join, decide_new_table
from spades_server.eventlog.base import EventLog, LogUnavailable, StoredEvent, VersionConflict
from spades_server.projection import LobbyProjection, open_table
from spades_server.tables import Decided, Table, TableStore, timestamp
from spades_server.v1 import log_pb2

log = structlog.get_logger(__name__)
Context = grpc.aio.ServicerContext[Any, Any]

STREAM_PREFIX: Final = streams.CHALLENGE_PREFIX
ENVELOPE_MARKER: Final = b"\x00"
DEFAULT_EXPIRY_SECONDS: Final = 300
MAX_EXPIRY_SECONDS: Final = 86_400
MAX_DECIDE_ATTEMPTS: Final = 20
DEFAULT_PAGE_SIZE: Final = 20
MAX_PAGE_SIZE: Final = 100
#: How often the sweeper looks for challenges past their expiry.
SWEEP_INTERVAL: Final = 1.0
#: Seconds past its expiry after which an ended challenge leaves the cache.
FORGET_AFTER: Final = 60.0

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


def stream_of(challenge_id: str) -> str:
    return STREAM_PREFIX + challenge_id


def challenge_id_for(request_id: str, challenger_id: str) -> str:
    """The id of the challenge a CreateChallenge with ``request_id`` makes (a retry finds it)."""
    message = f"challenge id\x00{challenger_id}".encode()
    return hmac.new(request_id.encode(), message, hashlib.sha256).hexdigest()[:20]


def table_request_id(challenge_id: str) -> str:
    """The request id the challenge's table and seats are derived from."""
    return f"challenge-{challenge_id}"


def table_id_for(challenge_id: str) -> str:
    return tokens.request_table_id(table_request_id(challenge_id), "challenge")


# ---------------------------------------------------------------------------------- journal


def encode(entry: log_pb2.ChallengeLogEntry) -> bytes:
    return ENVELOPE_MARKER + entry.SerializeToString()


def decode(stored: StoredEvent) -> log_pb2.ChallengeLogEntry:
    """The entry a challenge row holds (ValueError when it is not one)."""
    if not stored.data.startswith(ENVELOPE_MARKER):
        raise ValueError("a challenge row starts with the envelope marker")
    return log_pb2.ChallengeLogEntry.FromString(stored.data[len(ENVELOPE_MARKER) :])


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
    seating: list[challenge_pb2.SeatHolder], parties: list[str], rules: Rules, rated: bool
) -> list[challenge_pb2.SeatHolder]:
    """The proposed seating in seat order, or INVALID_ARGUMENT (CHALLENGE_SEATING_INVALID);
    at a rated table each account holds seats of one side only (ACCOUNT_ON_BOTH_SIDES)."""
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
    idle = [party for party in parties if party not in by_seat.values()]
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
    if len(opponent_ids) >= players:
        raise errors.refuse(
            Reason.CHALLENGE_OPPONENTS_INVALID,
            f"a table of {players} seats has room for at most {players - 1} opponents",
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
) -> challenge_pb2.Challenge:
    """The challenge to record, or the refusal (each check changes nothing)."""
    rules = rules_of(rules_message)
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
    parties = [challenger.account_id, *(o.account_id for o in opponents)]
    seats = check_seating(seating, parties, rules, rated)
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


ChallengeDecision = Callable[[ChallengeState], log_pb2.ChallengeLogEntry | None]


# ---------------------------------------------------------------------------------- store


class ChallengeStore:
    """Loads challenges from the log (a cache checked against the log's version) and appends
    their entries with the expected version."""

    def __init__(self, log_: EventLog) -> None:
        self.log = log_
        self._cache: dict[str, ChallengeState] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def load(self, challenge_id: str) -> ChallengeState:
        if not challenge_id:
            raise errors.refuse(
                Reason.MISSING_FIELD, "challenge_id is required", field="challenge_id"
            )
        if "\x00" in challenge_id:
            raise challenge_not_found(challenge_id)
        challenge = self._cache.get(challenge_id)
        if challenge is not None and self.log.sole_writer:
            return challenge
        challenge = challenge or ChallengeState(challenge_id)
        for row in await self._read(challenge_id, challenge.version):
            challenge.fold(row.version, decode(row))
        if challenge.version == 0:
            raise challenge_not_found(challenge_id)
        self._cache[challenge_id] = challenge
        return challenge

    async def _read(self, challenge_id: str, after: int) -> list[StoredEvent]:
        try:
            return await self.log.read(stream_of(challenge_id), after_version=after)
        except LogUnavailable as error:
            raise errors.refuse(Reason.LOG_UNAVAILABLE, str(error)) from None

    def cached(self) -> list[ChallengeState]:
        return list(self._cache.values())

    def forget(self, challenge_id: str) -> None:
        """Drop a challenge from the cache (the next load reads it from the log)."""
        self._cache.pop(challenge_id, None)
        lock = self._locks.get(challenge_id)
        if lock is not None and not lock.locked():
            del self._locks[challenge_id]

    def observe(self, stored: StoredEvent) -> None:
        """Fold a row (this replica's or another's) into the cached challenge, or remember a
        new one (so the sweeper knows to expire it)."""
        if not stored.stream_id.startswith(STREAM_PREFIX):
            return
        challenge_id = stored.stream_id.removeprefix(STREAM_PREFIX)
        challenge = self._cache.get(challenge_id)
        if challenge is None and stored.version == 1:
            challenge = self._cache[challenge_id] = ChallengeState(challenge_id)
        if challenge is None or stored.version <= challenge.version:
            return
        if stored.version == challenge.version + 1:
            challenge.fold(stored.version, decode(stored))
        else:
            del self._cache[challenge_id]

    async def create(self, challenge: challenge_pb2.Challenge, request_digest: bytes) -> bool:
        """Record a new challenge; False when its stream exists (VersionConflict: a retry)."""
        entry = log_pb2.ChallengeLogEntry(created=challenge, request_id_sha256=request_digest)
        try:
            stored = await self.log.append(stream_of(challenge.challenge_id), 0, [encode(entry)])
        except VersionConflict:
            return False
        except LogUnavailable as error:
            raise errors.refuse(Reason.LOG_UNAVAILABLE, str(error)) from None
        state = self._cache.get(challenge.challenge_id) or ChallengeState(challenge.challenge_id)
        state.fold(stored[0].version, entry)
        self._cache[challenge.challenge_id] = state
        return True

    async def execute(self, challenge_id: str, decide: ChallengeDecision) -> ChallengeState:
        """Decide on the latest challenge, append with the expected version, retry on a
        conflict (another replica answered first: decide again on what it did)."""
        lock = self._locks.setdefault(challenge_id, asyncio.Lock())
        async with lock:
            for _ in range(MAX_DECIDE_ATTEMPTS):
                challenge = await self.load(challenge_id)
                entry = decide(challenge)
                if entry is None:
                    return challenge
                try:
                    stored = await self.log.append(
                        stream_of(challenge_id), challenge.version, [encode(entry)]
                    )
                except VersionConflict:
                    self._cache.pop(challenge_id, None)
                    continue
                except LogUnavailable as error:
                    raise errors.refuse(Reason.LOG_UNAVAILABLE, str(error)) from None
                challenge.fold(stored[0].version, entry)
                return challenge
        raise errors.refuse(
            Reason.CHALLENGE_CONTENDED,
            "the challenge kept changing under this request; try again",
        )


# ---------------------------------------------------------------------------------- effects


def _told_once(
    told: Callable[[Account], bool], event: account_pb2.AccountEvent
) -> Callable[[Account], AccountDecided | None]:
    def decide(account: Account) -> AccountDecided | None:
        if told(account):
            return None
        return AccountDecided([(event, b"", b"")])

    return decide


def _has_challenge(told: tuple[str, bool]) -> Callable[[Account], bool]:
    return lambda account: told in account.challenges


def _seat_join(
    seat: int, account: Account, join_code: str, token: str, request_id: str
) -> Callable[[Table], Decided]:
    return lambda table: decide_join(
        table,
        seat,
        account.name,
        account.bot,
        join_code,
        token,
        tokens.digest(request_id),
        account.account_id,
    )


class Challenges:
    """What a challenge does beyond its own stream: tell the parties, open its table."""

    def __init__(
        self,
        store: ChallengeStore,
        accounts_: AccountStore,
        tables: TableStore,
        projection: LobbyProjection,
    ) -> None:
        self.store = store
        self.accounts = accounts_
        self.tables = tables
        self.projection = projection

    async def announce(self, challenge: ChallengeState) -> None:
        """Tell the challenger it made the challenge and each opponent it was challenged."""
        made = challenge.message
        challenge_id = challenge.challenge_id
        for party in challenge.parties():
            outgoing = party == made.challenger_id
            event = (
                account_pb2.AccountEvent(
                    challenge_issued=account_pb2.ChallengeIssued(challenge=made)
                )
                if outgoing
                else account_pb2.AccountEvent(
                    challenge_received=account_pb2.ChallengeReceived(challenge=made)
                )
            )
            told = (challenge_id, outgoing)
            await self.accounts.execute(party, _told_once(_has_challenge(told), event))

    async def answered(self, challenge: ChallengeState, entry: log_pb2.ChallengeLogEntry) -> None:
        """Tell every party of an answer (or the expiry); open the table when it is the last
        acceptance."""
        state = challenge.message.state
        kind = entry.WhichOneof("kind")
        who = ""
        reason = challenge_pb2.DECLINE_REASON_UNSPECIFIED
        if kind == "accepted":
            who = entry.accepted.account_id
        elif kind == "declined":
            who, reason = entry.declined.account_id, entry.declined.reason
        elif kind == "cancelled":
            who = challenge.message.challenger_id
        if state == ACCEPTED:
            await self.open_table(challenge)
        answer = account_pb2.ChallengeAnswered(
            challenge_id=challenge.challenge_id,
            state=state,
            account_id=who,
            accepted=kind == "accepted",
            decline_reason=reason,
            table_id=challenge.message.table_id if state == ACCEPTED else "",
        )
        key = (answer.challenge_id, answer.account_id, answer.state)
        for party in challenge.parties():
            await self.accounts.execute(
                party,
                _told_once(
                    lambda a: key in a.challenge_answers,
                    account_pb2.AccountEvent(challenge_answered=answer),
                ),
            )
        if state == ACCEPTED:
            await self.assign_seats(challenge)

    async def open_table(self, challenge: ChallengeState) -> None:
        """Open the challenge's table with every seat held by its account (idempotent: the
        table's id and each join's request digest derive from the challenge)."""
        made = challenge.message
        table_id = made.table_id
        request_id = table_request_id(challenge.challenge_id)
        rules = protocol.rules_from_proto(made.rules)
        join_code = tokens.request_join_code(request_id, table_id)
        names = [made.challenger_name, *(o.name for o in made.opponents)]
        title = ("Challenge: " + " v ".join(names))[:64]
        decided = decide_new_table(
            new_match(rules),
            name=title,
            private=True,
            join_code=join_code,
            request_digest=tokens.digest(request_id),
            rated=made.rated,
        )
        await open_table(
            self.tables, self.projection, decided, table_id=table_id, request_id=request_id
        )
        for holder in made.seating:
            account = await self.accounts.load(holder.account_id)
            seat = protocol.seat_from_proto(holder.seat)
            seat_request = f"{request_id}-{seat}"
            token = tokens.request_seat_token(seat_request, table_id)
            with contextlib.suppress(AlreadyJoined):
                _, entries = await self.tables.execute(
                    table_id, _seat_join(seat, account, join_code, token, seat_request)
                )
                await self.projection.caught_up(entries[-1].position)
        log.info("challenge table opened", challenge_id=challenge.challenge_id, table_id=table_id)

    async def assign_seats(self, challenge: ChallengeState) -> None:
        made = challenge.message
        for party in challenge.parties():
            assigned = account_pb2.TableAssigned(
                table_id=made.table_id, seats=challenge.seats_of(party), rated=made.rated
            )
            await self.accounts.execute(
                party,
                _told_once(
                    lambda a: made.table_id in a.assigned_tables,
                    account_pb2.AccountEvent(table_assigned=assigned),
                ),
            )

    async def settle(self, challenge_id: str) -> ChallengeState:
        """The challenge, its expiry appended (and told) if it is due, its table opened (and
        told) if a crash came between its last acceptance and the table."""
        before = await self.store.load(challenge_id)
        if before.message.state == ACCEPTED and not await self._table_ready(before):
            log.info("finishing an accepted challenge", challenge_id=challenge_id)
            last = log_pb2.ChallengeAcceptance(table_id=before.message.table_id)
            await self.answered(before, log_pb2.ChallengeLogEntry(accepted=last))
        if not before.due(time.time()):
            return before
        return await self.expire(challenge_id)

    async def _table_ready(self, challenge: ChallengeState) -> bool:
        """Whether the accepted challenge's table exists with every seat held, and every
        party was told of it."""
        try:
            table = await self.tables.load(challenge.message.table_id)
        except errors.RequestError as error:
            if error.code is grpc.StatusCode.NOT_FOUND:
                return False
            raise
        if len(table.seat_accounts) != len(challenge.message.seating) and not table.started:
            return False
        for party in challenge.parties():  # and every party was told
            if challenge.message.table_id not in (await self.accounts.load(party)).assigned_tables:
                return False
        return True

    async def expire(self, challenge_id: str) -> ChallengeState:
        expired: list[log_pb2.ChallengeLogEntry] = []

        def decide(challenge: ChallengeState) -> log_pb2.ChallengeLogEntry | None:
            expired.clear()
            entry = decide_expiry(challenge, time.time())
            if entry is not None:
                expired.append(entry)
            return entry

        challenge = await self.store.execute(challenge_id, decide)
        if challenge.message.state == EXPIRED:
            # Told by whichever replica (or call) sees it first; telling is idempotent.
            ended = log_pb2.ChallengeLogEntry(expired=log_pb2.ChallengeEnded())
            await self.answered(challenge, ended)
            if expired:
                log.info("challenge expired", challenge_id=challenge_id)
        return challenge


# ---------------------------------------------------------------------------------- sweeper


class ChallengeSweeper:
    """Expires the pending challenges this replica has seen, once due (any replica may: the
    expected version lets one expiry through), and finishes accepted ones whose table a crash
    left unopened (idempotent)."""

    def __init__(self, challenges: Challenges, interval: float = SWEEP_INTERVAL) -> None:
        self._challenges = challenges
        self._interval = interval
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="challenge-sweeper")

    async def stop(self) -> None:
        if self._task is None:
            return
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task
        self._task = None

    async def sweep(self) -> int:
        """Expire every cached challenge that is due, forget those ended long ago; how many
        it expired."""
        now = time.time()
        expired = 0
        for challenge in self._challenges.store.cached():
            if challenge.message.state != PENDING and now > challenge.expires_at + FORGET_AFTER:
                # Ended long ago: nothing left to sweep (a later read loads it again).
                self._challenges.store.forget(challenge.challenge_id)
            elif challenge.due(now):
                try:
                    await self._challenges.expire(challenge.challenge_id)
                    expired += 1
                except errors.RequestError as error:
                    log.info("challenge not expired yet", reason=error.reason)
        return expired

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            try:
                await self.sweep()
            except Exception:
                log.exception("challenge sweep failed")


# ---------------------------------------------------------------------------------- servicer


def _key_required() -> errors.RequestError:
    return errors.refuse(
        Reason.KEY_REQUIRED, "send the account's key as the 'authorization: Bearer <key>' metadata"
    )


class ChallengeServicer(challenge_pb2_grpc.ChallengeServiceServicer):
    """Create, answer, cancel and read challenges."""

    def __init__(self, challenges: Challenges) -> None:
        self._challenges = challenges
        self._store = challenges.store
        self._accounts = challenges.accounts

    async def _caller(self, context: Context) -> Account:
        key = bearer_key_from(context)
        if key is None:
            raise _key_required()
        return await self._accounts.authenticate(key)

    async def CreateChallenge(
        self, request: challenge_pb2.CreateChallengeRequest, context: Context
    ) -> challenge_pb2.CreateChallengeResponse:
        challenger = await self._caller(context)
        request_id = check_request_id(request.request_id)
        rules = rules_of(request.rules)
        opponent_ids = check_opponent_ids(list(request.opponent_ids), challenger, rules.players)
        request_digest = tokens.digest(request_id) if request_id else b""
        challenge_id = (
            challenge_id_for(request_id, challenger.account_id)
            if request_id
            else secrets.token_hex(10)
        )
        if request_id:
            earlier = await self._created_before(challenge_id, request_digest, challenger)
            if earlier is not None:
                return challenge_pb2.CreateChallengeResponse(challenge=earlier)
        opponents = []
        for index, opponent_id in enumerate(opponent_ids):
            try:
                opponents.append(await self._accounts.load(opponent_id))
            except errors.RequestError as error:
                if error.code is not grpc.StatusCode.NOT_FOUND:
                    raise
                raise errors.refuse(
                    Reason.ACCOUNT_NOT_FOUND,
                    f"there is no account {opponent_id!r}",
                    field=f"opponent_ids[{index}]",
                ) from None
        made = decide_creation(
            challenge_id,
            challenger,
            opponents,
            request.rules,
            rated=request.rated,
            seating=list(request.seating),
            expiry_seconds=request.expiry_seconds,
            now=time.time(),
        )
        if not await self._store.create(made, request_digest):
            earlier = await self._created_before(challenge_id, request_digest, challenger)
            if earlier is None:  # a random id taken: 80 bits make this all but impossible
                raise errors.refuse(
                    Reason.CHALLENGE_CONTENDED, "the challenge id was taken; try again"
                )
            return challenge_pb2.CreateChallengeResponse(challenge=earlier)
        challenge = await self._store.load(challenge_id)
        await self._challenges.announce(challenge)
        log.info(
            "challenge made",
            challenge_id=challenge_id,
            challenger=challenger.account_id,
            opponents=opponent_ids,
            rated=request.rated,
        )
        return challenge_pb2.CreateChallengeResponse(challenge=challenge.view(time.time()))

    async def _created_before(
        self, challenge_id: str, request_digest: bytes, challenger: Account
    ) -> challenge_pb2.Challenge | None:
        """The challenge a CreateChallenge with this request id made, if there is one."""
        if not request_digest:
            return None
        try:
            challenge = await self._store.load(challenge_id)
        except errors.RequestError as error:
            if error.code is grpc.StatusCode.NOT_FOUND:
                return None
            raise
        if (
            challenge.created_by_request != request_digest
            or challenge.message.challenger_id != challenger.account_id
        ):
            raise accounts.request_id_reused()
        await self._challenges.announce(challenge)  # a crash may have come before it
        return challenge.view(time.time())

    async def _answer(
        self,
        challenge_id: str,
        request_id: str,
        decide: Callable[[ChallengeState, float, bytes], log_pb2.ChallengeLogEntry | None],
    ) -> challenge_pb2.Challenge:
        """Append the answer ``decide`` makes, or none when it is a retry of one made with
        ``request_id`` (the answer is told again while the challenge is as it left it)."""
        request_digest = tokens.digest(check_request_id(request_id)) if request_id else b""
        await self._challenges.settle(challenge_id)
        appended: list[log_pb2.ChallengeLogEntry] = []

        def decision(challenge: ChallengeState) -> log_pb2.ChallengeLogEntry | None:
            appended.clear()
            entry = decide(challenge, time.time(), request_digest)
            if entry is not None:
                appended.append(entry)
            return entry

        challenge = await self._store.execute(challenge_id, decision)
        if appended:
            await self._challenges.answered(challenge, appended[-1])
        else:  # a retry: a crash may have come between the answer and its telling
            earlier = challenge.answers[request_digest]
            if challenge.message.state == earlier.state:
                await self._challenges.answered(challenge, earlier.entry)
        return challenge.view(time.time())

    async def AcceptChallenge(
        self, request: challenge_pb2.AcceptChallengeRequest, context: Context
    ) -> challenge_pb2.AcceptChallengeResponse:
        account = await self._caller(context)
        challenge = await self._answer(
            request.challenge_id,
            request.request_id,
            lambda c, now, digest: decide_acceptance(c, account, now, digest),
        )
        log.info(
            "challenge accepted",
            challenge_id=request.challenge_id,
            account_id=account.account_id,
            table_id=challenge.table_id,
        )
        return challenge_pb2.AcceptChallengeResponse(challenge=challenge)

    async def DeclineChallenge(
        self, request: challenge_pb2.DeclineChallengeRequest, context: Context
    ) -> challenge_pb2.DeclineChallengeResponse:
        account = await self._caller(context)
        if request.reason not in challenge_pb2.DeclineReason.values():
            raise errors.refuse(
                Reason.MALFORMED_REQUEST, "reason is not a DeclineReason", field="reason"
            )
        challenge = await self._answer(
            request.challenge_id,
            request.request_id,
            lambda c, now, digest: decide_decline(c, account, request.reason, now, digest),
        )
        log.info(
            "challenge declined", challenge_id=request.challenge_id, account_id=account.account_id
        )
        return challenge_pb2.DeclineChallengeResponse(challenge=challenge)

    async def CancelChallenge(
        self, request: challenge_pb2.CancelChallengeRequest, context: Context
    ) -> challenge_pb2.CancelChallengeResponse:
        account = await self._caller(context)
        challenge = await self._answer(
            request.challenge_id,
            request.request_id,
            lambda c, now, digest: decide_cancel(c, account, now, digest),
        )
        log.info("challenge cancelled", challenge_id=request.challenge_id)
        return challenge_pb2.CancelChallengeResponse(challenge=challenge)

    async def GetChallenge(
        self, request: challenge_pb2.GetChallengeRequest, context: Context
    ) -> challenge_pb2.GetChallengeResponse:
        challenge = await self._challenges.settle(request.challenge_id)
        return challenge_pb2.GetChallengeResponse(challenge=challenge.view(time.time()))

    async def ListChallenges(
        self, request: challenge_pb2.ListChallengesRequest, context: Context
    ) -> challenge_pb2.ListChallengesResponse:
        account = await self._caller(context)
        if request.direction not in challenge_pb2.ChallengeDirection.values():
            raise errors.refuse(
                Reason.MALFORMED_REQUEST, "direction is not a ChallengeDirection", field="direction"
            )
        wanted = {
            challenge_pb2.CHALLENGE_DIRECTION_UNSPECIFIED: (True, False),
            challenge_pb2.CHALLENGE_DIRECTION_INCOMING: (False,),
            challenge_pb2.CHALLENGE_DIRECTION_OUTGOING: (True,),
        }[request.direction]
        ids = [cid for cid, outgoing in reversed(account.challenges) if outgoing in wanted]
        now = time.time()
        if request.pending_only:
            shown = []
            for challenge_id in ids:
                challenge = (await self._store.load(challenge_id)).view(now)
                if challenge.state == PENDING:
                    shown.append(challenge)
            found, next_token = paging.page(
                shown,
                page_size=request.page_size,
                page_token=request.page_token,
                default_size=DEFAULT_PAGE_SIZE,
                max_size=MAX_PAGE_SIZE,
            )
        else:
            page_ids, next_token = paging.page(
                ids,
                page_size=request.page_size,
                page_token=request.page_token,
                default_size=DEFAULT_PAGE_SIZE,
                max_size=MAX_PAGE_SIZE,
            )
            found = [(await self._store.load(cid)).view(now) for cid in page_ids]
        return challenge_pb2.ListChallengesResponse(challenges=found, next_page_token=next_token)
