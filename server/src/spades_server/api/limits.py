"""Limits that keep one client from hurting the others.

Each limit refuses with RESOURCE_EXHAUSTED and a reason a person can act on, before anything is
written; where waiting helps (reason code RATE_LIMITED), the reason says how long ("retry in
0.25 s") and the status carries it for a program as ``google.rpc.RetryInfo.retry_delay``, on a
call's status and in a refused ``ActionResult.status`` alike.

| limit | default | where |
|---|---|---|
| size of one received message | 64 KiB | gRPC itself (``grpc.max_receive_message_length``) |
| actions per seat | 400/s, bursts of 800 | each ActionResult (refused, not the stream) |
| actions per connection | 4000/s, bursts of 8000 | each ActionResult |
| Play and Seat calls per seat token (live + replaced, closing) | 4 | Play, Seat (the call) |
| tables created per client address | 600 a minute (bursts of 600) | CreateTable |
| quick-match players waiting per client address | 64 | QuickMatch |
| sign-in attempts per account | 10 a minute (bursts of 10) | SignIn (TOO_MANY_SIGN_INS) |
| sign-ins and sign-ups per client address | 30 a minute (bursts of 30) | SignIn, SignUp |

The defaults are far above what a correct client does: a seat can only act on its turn (an
action that is accepted needs the three other seats to act first), so a seat's honest rate is at
most a quarter of its table's (about 350 actions/s for one table on a 2-CPU machine), and the
64-table benchmark on loopback (about 700 actions/s in all, its channels sharing one connection
and every client the address 127.0.0.1) is not throttled. Rates are token
buckets: ``rate`` a second on average, ``2 * rate`` at once after a quiet spell. A limit of 0
turns that limit off. Every limit is per server process: N replicas allow N times as much.
A :class:`Buckets` holds a bucket per key it has seen (``len``, ``in``) and forgets idle ones
once it holds ``SWEEP_AT``.

Malformed requests are also refused here (the :class:`Guard` interceptor): bytes that do not
parse as the method's request message end the call with INVALID_ARGUMENT (MALFORMED_REQUEST)
rather than gRPC's UNKNOWN, and a string or id over its documented length with INVALID_ARGUMENT
(FIELD_TOO_LONG, :func:`~spades_server.domain.checks.check_lengths`) before any other check. A Play
stream's actions are checked the same way, each in its own ``ActionResult``.
"""

from __future__ import annotations

import contextvars
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Any

import grpc

from spades.reasons import Reason
from spades.wire import (
    AUTHORIZATION_METADATA,
    SEAT_METADATA,
    SEAT_TOKEN_METADATA,
    TABLE_ID_METADATA,
)
from spades_server.api.auth import client_address, metadata_value, peer_of
from spades_server.domain import errors, tokens
from spades_server.domain.checks import check_lengths
from spades_server.domain.errors import LimitExceeded
from spades_server.ops.settings import Settings

Context = grpc.aio.ServicerContext[Any, Any]

PLAY_METHOD = "/spades.v1.PlayService/Play"
#: The seat's stream without client streaming (browsers): counted with the Play streams.
SEAT_METHOD = "/spades.v1.PlayService/Seat"
#: A bucket map is swept of idle (full) buckets when it grows past this many keys.
SWEEP_AT = 4096

#: The peer (``context.peer()``) of the call being handled; set by :class:`Guard`.
PEER: contextvars.ContextVar[str] = contextvars.ContextVar("spades_peer", default="")


def seconds(delay: float) -> str:
    """A delay for a person: rounded up to a hundredth, no trailing zeros ("0.25", "12")."""
    return f"{math.ceil(delay * 100) / 100:g}"


@dataclass(slots=True)
class TokenBucket:
    """``rate`` tokens a second, at most ``burst`` saved up; an action takes one."""

    rate: float
    burst: float
    tokens: float
    stamp: float

    def take(self, now: float) -> float:
        """Take a token: 0.0 when granted, else the seconds until one is there (none taken)."""
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        return (1.0 - self.tokens) / self.rate

    def give_back(self) -> None:
        self.tokens = min(self.burst, self.tokens + 1.0)

    def idle(self, now: float) -> bool:
        """Full again: forgetting it changes nothing."""
        return self.tokens + (now - self.stamp) * self.rate >= self.burst


class Buckets:
    """One token bucket per key; ``rate`` 0 means no limit."""

    def __init__(
        self, rate: float, burst: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate = rate
        self.burst = max(burst, 1.0)
        self._clock = clock
        self._buckets: dict[Hashable, TokenBucket] = {}
        self._sweep_at = SWEEP_AT

    def take(self, key: Hashable) -> float:
        """Take a token for ``key``: 0.0 when granted, else the seconds to wait."""
        if self.rate <= 0:
            return 0.0
        now = self._clock()
        bucket = self._buckets.get(key)
        if bucket is None:
            if len(self._buckets) >= self._sweep_at:
                self._sweep(now)
            bucket = self._buckets[key] = TokenBucket(self.rate, self.burst, self.burst, now)
        return bucket.take(now)

    def __len__(self) -> int:
        """How many keys hold a bucket now (idle ones are swept once there are many)."""
        return len(self._buckets)

    def __contains__(self, key: object) -> bool:
        return key in self._buckets

    def give_back(self, key: Hashable) -> None:
        bucket = self._buckets.get(key)
        if bucket is not None:
            bucket.give_back()

    def _sweep(self, now: float) -> None:
        for key in [key for key, bucket in self._buckets.items() if bucket.idle(now)]:
            del self._buckets[key]
        self._sweep_at = max(SWEEP_AT, 2 * len(self._buckets))


class Limits:
    """Every limit of one server process (see the module's table)."""

    def __init__(
        self, settings: Settings | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        settings = settings or Settings()
        self.settings = settings
        seat_rate = settings.seat_action_rate
        connection_rate = settings.connection_action_rate
        tables_rate = settings.tables_per_address / 60.0
        self._seat_actions = Buckets(seat_rate, 2 * seat_rate, clock)
        self._connection_actions = Buckets(connection_rate, 2 * connection_rate, clock)
        self._tables = Buckets(tables_rate, settings.tables_per_address, clock)
        self._sign_ins_by_account = Buckets(
            settings.sign_ins_per_account / 60.0, settings.sign_ins_per_account, clock
        )
        self._sign_ins_by_address = Buckets(
            settings.sign_ins_per_address / 60.0, settings.sign_ins_per_address, clock
        )
        #: Open Play calls per SHA-256 of their seat token.
        self.play_streams: dict[bytes, int] = {}
        #: Quick-match seats taken from each client address: (table id, seat) pairs.
        self._quick_match: dict[str, set[tuple[str, int]]] = {}

    # -- actions (per seat, per connection) ---------------------------------------------------

    def check_action(self, table_id: str, seat: int, peer: str | None = None) -> None:
        """Count one action of ``seat`` on the current call's connection, or refuse it."""
        delay = self._seat_actions.take((table_id, seat))
        if delay:
            rate = self.settings.seat_action_rate
            raise LimitExceeded(
                f"too many actions from this seat (at most {rate:g} a second): "
                f"retry in {seconds(delay)} s",
                delay,
            )
        connection = PEER.get() if peer is None else peer
        delay = self._connection_actions.take(connection)
        if delay:
            self._seat_actions.give_back((table_id, seat))
            rate = self.settings.connection_action_rate
            raise LimitExceeded(
                f"too many actions on this connection (at most {rate:g} a second): "
                f"retry in {seconds(delay)} s",
                delay,
            )

    # -- tables per client address -------------------------------------------------------------

    def check_table_creation(self, context: Context) -> None:
        """Count one table created from the caller's address, or refuse it (RATE_LIMITED)."""
        self.check_table_creation_from(client_address(peer_of(context)))

    def check_table_creation_from(self, address: str) -> None:
        """Count one table created from the client ``address``, or refuse it (RATE_LIMITED)."""
        delay = self._tables.take(address)
        if delay:
            per_minute = self.settings.tables_per_address
            raise LimitExceeded(
                f"too many tables created from {address} (at most {per_minute} a minute): "
                f"retry in {seconds(delay)} s",
                delay,
            )

    # -- sign-in attempts per account and per client address ----------------------------------

    def check_sign_in(self, context: Context, account_id: str = "") -> None:
        """Count one sign-in attempt (a sign-up when ``account_id`` is empty) from the caller's
        address and for the account, or refuse it (TOO_MANY_SIGN_INS, with the delay): every
        attempt counts, so guessing a password is as slow as the limit."""
        address = client_address(peer_of(context))
        delay = self._sign_ins_by_address.take(address)
        if delay:
            per_minute = self.settings.sign_ins_per_address
            raise errors.refuse(
                Reason.TOO_MANY_SIGN_INS,
                f"too many sign-in attempts from {address} (at most {per_minute} a minute): "
                f"retry in {seconds(delay)} s",
                retry_delay=delay,
                metadata={"per": "address"},
            )
        if not account_id:
            return
        delay = self._sign_ins_by_account.take(account_id)
        if delay:
            self._sign_ins_by_address.give_back(address)
            per_minute = self.settings.sign_ins_per_account
            raise errors.refuse(
                Reason.TOO_MANY_SIGN_INS,
                f"too many sign-in attempts for this account (at most {per_minute} a minute): "
                f"retry in {seconds(delay)} s",
                retry_delay=delay,
                metadata={"per": "account"},
            )

    # -- quick-match entries per client address --------------------------------------------------

    def check_quick_match(self, context: Context, waiting: Callable[[str, int], bool]) -> str:
        """Refuse a quick-match entry when the caller's address already has its limit of
        players waiting (``waiting(table_id, seat)``: still seated at a table not started).
        Returns the address, for :meth:`quick_match_seated`."""
        address = client_address(peer_of(context))
        limit = self.settings.quick_match_per_address
        if limit <= 0:
            return address
        entries = self._quick_match.get(address)
        if entries:
            entries -= {entry for entry in entries if not waiting(*entry)}
            if not entries:
                del self._quick_match[address]
            elif len(entries) >= limit:
                raise LimitExceeded(
                    f"{address} already has {len(entries)} players waiting in the quick-match "
                    f"queue (at most {limit}); wait until their tables start",
                    reason_code=Reason.QUICK_MATCH_QUEUE_FULL,
                )
        return address

    def quick_match_seated(self, address: str, table_id: str, seat: int) -> None:
        if self.settings.quick_match_per_address > 0:
            self._quick_match.setdefault(address, set()).add((table_id, seat))

    # -- open Play streams per seat token ------------------------------------------------------
    # One stream per seat token, newest wins: a new one replaces the open one, which closes once
    # it has sent what it owes (or after the stream write timeout, if its client stopped
    # reading). This bounds the calls still open meanwhile: a client that reads has two, briefly.

    def open_play_stream(self, token: str) -> bytes:
        """Count one more open Play or Seat call with ``token``, or refuse; returns its key."""
        key = tokens.digest(token)
        count = self.play_streams.get(key, 0)
        limit = self.settings.max_play_streams
        if limit > 0 and count >= limit:
            raise LimitExceeded(
                f"this seat's credential already has {count} open Play streams (at most {limit}): "
                "each new one replaces the one before, but the replaced ones have not closed "
                "yet (a replaced stream closes once its client has read what it is owed); "
                "read or cancel them before opening another",
                reason_code=Reason.TOO_MANY_STREAMS,
            )
        self.play_streams[key] = count + 1
        return key

    def close_play_stream(self, key: bytes) -> None:
        count = self.play_streams.get(key, 0) - 1
        if count > 0:
            self.play_streams[key] = count
        else:
            self.play_streams.pop(key, None)


def play_credential(context: Context) -> str | None:
    """What a Play or Seat call's stream limit counts by: its seat token, or its account key
    with the table and seat it names (an account's seats each have their own count)."""
    token = metadata_value(context, SEAT_TOKEN_METADATA)
    if token is not None:
        return token
    key = metadata_value(context, AUTHORIZATION_METADATA)
    if key is None:
        return None
    table_id = metadata_value(context, TABLE_ID_METADATA) or ""
    seat = (metadata_value(context, SEAT_METADATA) or "").strip().lower()
    return "\n".join((key, table_id, seat))


def server_options(settings: Settings) -> list[tuple[str, Any]]:
    """gRPC server options for the limits gRPC enforces itself."""
    options: list[tuple[str, Any]] = []
    if settings.max_message_bytes > 0:
        options.append(("grpc.max_receive_message_length", settings.max_message_bytes))
    return options


# ------------------------------------------------------------------------------------------
# The interceptor: malformed requests, open streams per seat token, the caller's peer.


class _Malformed:
    """A request whose bytes did not parse (the deserializer's stand-in for it)."""

    def __init__(self, error: Exception) -> None:
        self.error = error


def _tolerant(deserialize: Callable[[bytes], Any] | None) -> Callable[[bytes], Any] | None:
    if deserialize is None:
        return None

    def parse(data: bytes) -> Any:
        try:
            return deserialize(data)
        except Exception as error:  # DecodeError, or any other refusal of the bytes
            return _Malformed(error)

    return parse


def _malformed(method: str, number: int | None = None) -> errors.RequestError:
    where = "the request" if number is None else f"message {number} of the stream"
    return errors.refuse(
        Reason.MALFORMED_REQUEST,
        f"{where} is not a valid {method.rsplit('/', 1)[-1]} request message",
    )


class Guard(grpc.aio.ServerInterceptor):  # type: ignore[type-arg]
    """Refuses malformed requests with INVALID_ARGUMENT, counts open Play streams per seat
    token, and records the caller's peer (:data:`PEER`) for the per-connection limits.

    Goes after the interceptor that turns a :class:`errors.RequestError` into a status.
    """

    def __init__(self, limits: Limits) -> None:
        self._limits = limits

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Any]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Any:
        handler = await continuation(handler_call_details)
        if handler is None:
            return handler
        method = handler_call_details.method
        deserialize = _tolerant(handler.request_deserializer)
        serialize = handler.response_serializer
        if handler.unary_unary:
            inner_unary = handler.unary_unary

            async def unary(request: Any, context: Context) -> Any:
                PEER.set(peer_of(context))
                if isinstance(request, _Malformed):
                    raise _malformed(method)
                check_lengths(request)  # before anything else reads the request
                return await inner_unary(request, context)

            return grpc.unary_unary_rpc_method_handler(
                unary, request_deserializer=deserialize, response_serializer=serialize
            )
        if handler.unary_stream:
            inner_stream = handler.unary_stream

            seat_limits = self._limits

            async def unary_stream(request: Any, context: Context) -> AsyncIterator[Any]:
                PEER.set(peer_of(context))
                if isinstance(request, _Malformed):
                    raise _malformed(method)
                check_lengths(request)
                key = None
                if method == SEAT_METHOD:
                    token = play_credential(context)
                    if token is not None:
                        key = seat_limits.open_play_stream(token)
                try:
                    async for message in inner_stream(request, context):
                        yield message
                finally:
                    if key is not None:
                        seat_limits.close_play_stream(key)

            return grpc.unary_stream_rpc_method_handler(
                unary_stream, request_deserializer=deserialize, response_serializer=serialize
            )
        if handler.stream_stream:
            inner_streams = handler.stream_stream
            limits = self._limits

            async def stream_stream(requests: Any, context: Context) -> AsyncIterator[Any]:
                PEER.set(peer_of(context))
                malformed: list[errors.RequestError] = []

                async def checked() -> AsyncIterator[Any]:
                    number = 0
                    async for request in requests:
                        number += 1
                        if isinstance(request, _Malformed):
                            # Ends the client's side: the call then ends with this status.
                            malformed.append(_malformed(method, number))
                            return
                        yield request

                key = None
                if method == PLAY_METHOD:
                    token = play_credential(context)
                    if token is not None:
                        key = limits.open_play_stream(token)
                try:
                    async for message in inner_streams(checked(), context):
                        yield message
                except errors.RequestError:
                    if malformed:
                        raise malformed[0] from None
                    raise
                finally:
                    if key is not None:
                        limits.close_play_stream(key)
                if malformed:
                    raise malformed[0]

            return grpc.stream_stream_rpc_method_handler(
                stream_stream, request_deserializer=deserialize, response_serializer=serialize
            )
        return handler
