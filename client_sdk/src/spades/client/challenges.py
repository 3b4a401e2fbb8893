"""Challenges in the async client: challenge accounts, answer, cancel, look them up.

Every call but :meth:`ChallengeCalls.get_challenge` needs a client made with ``account_key=``
(the calls are the account's).

>>> async def main(opponent_id: str) -> None:  # doctest: +SKIP
...     async with SpadesClient("127.0.0.1:50051", account_key=KEY) as client:
...         made = await client.create_challenge([opponent_id], Rules(target_score=300))
...         # the opponent: await client.accept_challenge(made.challenge_id)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

import grpc

from spades import protocol
from spades.client.connection import new_request_id
from spades.engine import SEAT_NAMES, Rules
from spades.v1 import challenge_pb2, challenge_pb2_grpc

T = TypeVar("T")

#: Challenge states by the word for them.
STATE_NAMES: Final = {
    challenge_pb2.CHALLENGE_STATE_PENDING: "pending",
    challenge_pb2.CHALLENGE_STATE_ACCEPTED: "accepted",
    challenge_pb2.CHALLENGE_STATE_DECLINED: "declined",
    challenge_pb2.CHALLENGE_STATE_CANCELLED: "cancelled",
    challenge_pb2.CHALLENGE_STATE_EXPIRED: "expired",
}
#: Decline reasons by name ("" is no reason given).
DECLINE_REASONS: Final[dict[str, challenge_pb2.DeclineReason.ValueType]] = {
    "": challenge_pb2.DECLINE_REASON_UNSPECIFIED,
    **{
        name.removeprefix("DECLINE_REASON_").lower(): value
        for name, value in challenge_pb2.DeclineReason.items()
        if value != challenge_pb2.DECLINE_REASON_UNSPECIFIED
    },
}
_REASON_NAMES: Final = {value: name for name, value in DECLINE_REASONS.items()}
DIRECTIONS: Final = {
    "": challenge_pb2.CHALLENGE_DIRECTION_UNSPECIFIED,
    "incoming": challenge_pb2.CHALLENGE_DIRECTION_INCOMING,
    "outgoing": challenge_pb2.CHALLENGE_DIRECTION_OUTGOING,
}


@dataclass(frozen=True, slots=True)
class ChallengeOpponent:
    account_id: str
    name: str
    bot: bool
    accepted: bool


@dataclass(frozen=True, slots=True)
class SeriesMatch:
    """One finished match of a challenge's series."""

    table_id: str
    #: Each side's final score (North-South first).
    scores: tuple[int, ...]
    #: The side that won, 1-based (0: none).
    winning_side: int


@dataclass(frozen=True, slots=True)
class ChallengeInfo:
    """A challenge as anyone may see it."""

    challenge_id: str
    challenger_id: str
    challenger_name: str
    opponents: tuple[ChallengeOpponent, ...]
    rules: Rules
    rated: bool
    #: Seat (0 north .. 3 west) -> the account that holds it.
    seating: Mapping[int, str]
    #: "pending", "accepted", "declined", "cancelled" or "expired".
    state: str
    #: Seconds since the epoch.
    expire_time: float
    #: When accepted: the table opened for it.
    table_id: str
    declined_by: str
    #: When declined: the reason's name (see :data:`DECLINE_REASONS`).
    decline_reason: str
    #: The matches of its series (1: a single match).
    series_length: int = 1
    #: Each match of the series that has ended, in order.
    series: tuple[SeriesMatch, ...] = ()
    #: The matches each side has won so far (the rules' sides in order: North-South first).
    series_wins: tuple[int, ...] = ()

    @property
    def series_over(self) -> bool:
        """Whether every match of its series has been played."""
        return len(self.series) >= self.series_length

    @staticmethod
    def from_proto(message: challenge_pb2.Challenge) -> ChallengeInfo:
        return ChallengeInfo(
            challenge_id=message.challenge_id,
            challenger_id=message.challenger_id,
            challenger_name=message.challenger_name,
            opponents=tuple(
                ChallengeOpponent(o.account_id, o.name, o.bot, o.accepted)
                for o in message.opponents
            ),
            rules=protocol.rules_from_proto(message.rules),
            rated=message.rated,
            seating={protocol.seat_from_proto(h.seat): h.account_id for h in message.seating},
            state=STATE_NAMES.get(message.state, "unknown"),
            expire_time=message.expire_time.ToNanoseconds() / 1e9,
            table_id=message.table_id,
            declined_by=message.declined_by,
            decline_reason=_REASON_NAMES.get(message.decline_reason, ""),
            series_length=max(1, message.series_length),
            series=tuple(
                SeriesMatch(m.table_id, tuple(m.scores), m.winning_side) for m in message.series
            ),
            series_wins=tuple(message.series_wins),
        )

    def seats_of(self, account_id: str) -> tuple[int, ...]:
        return tuple(sorted(seat for seat, holder in self.seating.items() if holder == account_id))


@dataclass(frozen=True, slots=True)
class ChallengePage:
    challenges: tuple[ChallengeInfo, ...]
    next_page_token: str


def seating_to_proto(
    seating: Mapping[int, str] | Mapping[str, str],
) -> list[challenge_pb2.SeatHolder]:
    """Seats (0..3 or "north".."west") -> account ids, as the request wants them."""
    holders = []
    for seat, account_id in seating.items():
        index = SEAT_NAMES.index(seat.capitalize()) if isinstance(seat, str) else seat
        holders.append(
            challenge_pb2.SeatHolder(seat=protocol.seat_to_proto(index), account_id=account_id)
        )
    return holders


class ChallengeCalls:
    """The ChallengeService calls of :class:`~spades.client.SpadesClient`."""

    _channel: grpc.aio.Channel
    timeout: float | None

    async def _call(self, call: Awaitable[T]) -> T:
        raise NotImplementedError  # the client's

    async def _call_with_retries(self, call: Callable[[], Awaitable[T]]) -> T:
        raise NotImplementedError  # the client's

    def _bearer(self, key: str | None = None) -> tuple[tuple[str, str], ...]:
        raise NotImplementedError  # AccountCalls'

    @property
    def _challenges(self) -> challenge_pb2_grpc.ChallengeServiceAsyncStub:
        return challenge_pb2_grpc.ChallengeServiceStub(self._channel)

    async def _retried(self, method: Callable[..., Awaitable[Any]], request: Any) -> ChallengeInfo:
        """One call of ``method`` with the account's key that answers with a challenge, tried
        again with the same request (so the same request id) while the server is unreachable."""
        metadata = self._bearer()
        response = await self._call_with_retries(
            lambda: method(request, metadata=metadata, timeout=self.timeout)
        )
        return ChallengeInfo.from_proto(response.challenge)

    async def create_challenge(
        self,
        opponent_ids: Sequence[str],
        rules: Rules | None = None,
        *,
        rated: bool = False,
        seating: Mapping[int, str] | Mapping[str, str] | None = None,
        expiry_seconds: int = 0,
        request_id: str | None = None,
        series_length: int = 0,
    ) -> ChallengeInfo:
        """Challenge the accounts ``opponent_ids`` at a table with ``rules`` (the default game
        if None), proposing ``seating`` (seat -> account id; None: the server's default), for a
        series of ``series_length`` matches (0 or 1: one).

        The call carries ``request_id`` (a fresh one if None) and is tried again with it while
        the server is unreachable: a retry gets the same challenge."""
        request = challenge_pb2.CreateChallengeRequest(
            opponent_ids=list(opponent_ids),
            rules=protocol.rules_to_proto(rules or Rules()),
            rated=rated,
            seating=seating_to_proto(seating or {}),
            expiry_seconds=expiry_seconds,
            request_id=request_id or new_request_id(),
            series_length=series_length,
        )
        return await self._retried(self._challenges.CreateChallenge, request)

    async def accept_challenge(
        self, challenge_id: str, *, request_id: str | None = None
    ) -> ChallengeInfo:
        """Accept a challenge addressed to the client's account; the last acceptance opens
        the table (``table_id``).

        The call carries ``request_id`` (a fresh one if None) and is tried again with it while
        the server is unreachable: a retry of an acceptance that was recorded gets the challenge
        as it is now, not ``CHALLENGE_ALREADY_ANSWERED``."""
        request = challenge_pb2.AcceptChallengeRequest(
            challenge_id=challenge_id, request_id=request_id or new_request_id()
        )
        return await self._retried(self._challenges.AcceptChallenge, request)

    async def decline_challenge(
        self, challenge_id: str, reason: str = "", *, request_id: str | None = None
    ) -> ChallengeInfo:
        """Decline a challenge, with a reason's name (see :data:`DECLINE_REASONS`); sent with
        ``request_id`` (a fresh one if None) and retried with it, as :meth:`accept_challenge`."""
        if reason not in DECLINE_REASONS:
            raise ValueError(
                f"{reason!r} is not a decline reason; choose from {list(DECLINE_REASONS)}"
            )
        request = challenge_pb2.DeclineChallengeRequest(
            challenge_id=challenge_id,
            reason=DECLINE_REASONS[reason],
            request_id=request_id or new_request_id(),
        )
        return await self._retried(self._challenges.DeclineChallenge, request)

    async def cancel_challenge(
        self, challenge_id: str, *, request_id: str | None = None
    ) -> ChallengeInfo:
        """Withdraw the client's own challenge; sent with ``request_id`` (a fresh one if None)
        and retried with it, as :meth:`accept_challenge`."""
        request = challenge_pb2.CancelChallengeRequest(
            challenge_id=challenge_id, request_id=request_id or new_request_id()
        )
        return await self._retried(self._challenges.CancelChallenge, request)

    async def get_challenge(self, challenge_id: str) -> ChallengeInfo:
        request = challenge_pb2.GetChallengeRequest(challenge_id=challenge_id)
        response = await self._call(self._challenges.GetChallenge(request, timeout=self.timeout))
        return ChallengeInfo.from_proto(response.challenge)

    async def list_challenges(
        self,
        direction: str = "",
        *,
        pending_only: bool = False,
        page_size: int = 0,
        page_token: str = "",
    ) -> ChallengePage:
        """The client's challenges ("incoming", "outgoing" or "" for both), newest first."""
        if direction not in DIRECTIONS:
            raise ValueError(f"{direction!r} is not a direction; choose incoming or outgoing")
        request = challenge_pb2.ListChallengesRequest(
            direction=DIRECTIONS[direction],
            pending_only=pending_only,
            page_size=page_size,
            page_token=page_token,
        )
        response = await self._call(
            self._challenges.ListChallenges(request, metadata=self._bearer(), timeout=self.timeout)
        )
        return ChallengePage(
            tuple(ChallengeInfo.from_proto(c) for c in response.challenges),
            response.next_page_token,
        )
