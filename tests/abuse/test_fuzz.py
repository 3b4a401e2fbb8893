"""Fuzz: random and malformed messages to every method of every public service, and random
sequences of legal and illegal actions from every seat, against one real in-process server: the
hostile client of issue 10, written from the protos alone.

The server must never crash (health stays SERVING and a fresh match can be played to its end
afterwards), must answer everything with a precise status (never UNKNOWN or INTERNAL, and every
refused action has a reason), must code every refusal as docs/errors.md says (a
google.rpc.Status with an ErrorInfo in domain spades.v1 whose reason is a catalogued code of
that very status, on a failed call and in a refused ActionResult), and must never corrupt its
log (every table replays from its stored events to the state the server serves).

Hypothesis drives plain functions; the server and clients run on one event loop that each
example runs until its calls are done (bounded: a few seconds in all).
"""

from __future__ import annotations

import asyncio
import logging
import random
import uuid
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import grpc
import pytest
from google.protobuf import message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from google.rpc import error_details_pb2, status_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spades import protocol
from spades.client.errors import STATUS_DETAILS_METADATA
from spades.engine import MatchState, Rules, view, visible_legal_actions
from spades.reasons import DOMAIN, Reason
from spades.v1 import (
    account_pb2,
    account_pb2_grpc,
    actions_pb2,
    admin_pb2,
    admin_pb2_grpc,
    analysis_pb2,
    challenge_pb2,
    lobby_pb2,
    play_pb2,
    rating_pb2,
    tournament_pb2,
    view_pb2,
)
from spades.wire import AUTHORIZATION_METADATA as AUTHORIZATION
from spades_server.app.server import SpadesServer
from tests.support.admin import (
    OPERATOR_KEY,
    OPERATOR_TOKEN,
    OWN_CONNECTION,
    assert_log_replays,
    raw,
)
from tests.support.backends import BACKENDS, BackendName, Storages, require_postgres
from tests.support.clients import TOKEN_KEY, Client, close_streams
from tests.support.seats import play_turns
from tests.support.servers import log_events, running_server

T = TypeVar("T")

IMPRECISE = {grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL}
IMPRECISE_CODES = {grpc.StatusCode.UNKNOWN.value[0], grpc.StatusCode.INTERNAL.value[0]}
CALL_TIMEOUT = 10.0
CLIENT_WRITE_RACE = "Internal error from Core"
FUZZ_SETTINGS = settings(
    max_examples=200,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@dataclass
class Method:
    path: str
    request: type[Message]
    client_streaming: bool
    server_streaming: bool


def methods() -> list[Method]:
    found = []
    # Every service of the public contract, as a client written from the .proto files sees it.
    for module in (
        lobby_pb2,
        play_pb2,
        admin_pb2,
        account_pb2,
        challenge_pb2,
        tournament_pb2,
        rating_pb2,
        analysis_pb2,
    ):
        for method in (
            m for service in module.DESCRIPTOR.services_by_name.values() for m in service.methods
        ):
            found.append(
                Method(
                    f"/{method.containing_service.full_name}/{method.name}",
                    message_factory.GetMessageClass(method.input_type),
                    method.client_streaming,
                    method.server_streaming,
                )
            )
    return found


METHODS = methods()


# -- strategies --------------------------------------------------------------------------------

_INT_RANGES = {
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SINT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SFIXED32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_INT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_SINT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_SFIXED64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_FIXED32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1),
    FieldDescriptor.TYPE_FIXED64: (0, 2**64 - 1),
}


def _scalar(field: FieldDescriptor) -> st.SearchStrategy[Any]:
    kind = field.type
    if kind in _INT_RANGES:
        low, high = _INT_RANGES[kind]
        # Small values hit the interesting cases; the extremes are the "negative-looking" ones.
        small = st.integers(max(low, -3), 60)
        return st.one_of(small, st.sampled_from([low, high]), st.integers(low, high))
    if kind == FieldDescriptor.TYPE_ENUM:
        return st.one_of(st.integers(-2, 20), st.sampled_from([-(2**31), 2**31 - 1]))
    if kind == FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if kind == FieldDescriptor.TYPE_STRING:
        return st.one_of(st.text(max_size=24), st.just(""), st.text(min_size=60, max_size=200))
    if kind == FieldDescriptor.TYPE_BYTES:
        return st.binary(max_size=40)
    return st.floats(allow_nan=True)  # double/float (none in requests yet)


@st.composite
def message_of(draw: st.DrawFn, descriptor: Descriptor | Any, depth: int = 0) -> Message:
    """Any message of ``descriptor``'s type: random values, unknown enum numbers, empty and
    crowded oneofs, extreme integers, long repeated fields."""
    message = message_factory.GetMessageClass(descriptor)()
    for field in descriptor.fields:
        if not draw(st.booleans()):
            continue
        nested = field.message_type
        is_message = nested is not None
        if nested is not None and (depth >= 4 or nested.GetOptions().map_entry):
            continue
        value = message_of(nested, depth + 1) if nested is not None else _scalar(field)
        if field.is_repeated:
            count = draw(st.one_of(st.integers(0, 3), st.sampled_from([14, 60])))
            values = [draw(value) for _ in range(count)]
            container = getattr(message, field.name)
            if is_message:
                for item in values:
                    container.add().CopyFrom(item)
            else:
                container.extend(values)
        elif is_message:
            getattr(message, field.name).CopyFrom(draw(value))
        else:
            setattr(message, field.name, draw(value))
    return message


def _varint(number: int) -> bytes:
    out = bytearray()
    while True:
        low, number = number & 0x7F, number >> 7
        out.append(low | (0x80 if number else 0))
        if not number:
            return bytes(out)


def _overlong_varint(field_number: int) -> bytes:
    """A field as the ten-byte varint of 2**64 - 1: negative-looking for every integer type."""
    return _varint(field_number << 3) + _varint(2**64 - 1)


@st.composite
def payload_for(draw: st.DrawFn, request: type[Message]) -> bytes:
    """Bytes sent as one request message: random, a random valid message, or a broken one."""
    choice = draw(st.integers(0, 4))
    if choice == 0:
        return draw(st.binary(max_size=200))
    valid: Message = draw(message_of(request.DESCRIPTOR))
    data = valid.SerializeToString()
    if choice == 1 and data:
        return data[: draw(st.integers(0, len(data) - 1))]  # truncated
    if choice == 2:
        return data + draw(st.binary(min_size=1, max_size=20))  # trailing garbage
    if choice == 3:
        return data + _overlong_varint(draw(st.integers(1, 30)))
    return data


_ASCII = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=70)


# -- the server --------------------------------------------------------------------------------


class _Collect(logging.Handler):
    def __init__(self, into: list[str]) -> None:
        super().__init__(logging.ERROR)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        self.into.append(record.getMessage())


class Fuzz:
    """One server, a client, and a seated table whose seat tokens the fuzzer may use.

    ``server_errors`` collects what the server side reports as unexpected: an exception a
    servicer raised (gRPC answers it with UNKNOWN) and any exception no task retrieved.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, server: SpadesServer) -> None:
        self.loop = loop
        self.server = server
        self.server_errors: list[str] = []
        self._handler = _Collect(self.server_errors)
        logging.getLogger("grpc._cython.cygrpc").addHandler(self._handler)
        loop.set_exception_handler(
            lambda _, context: self.server_errors.append(str(context.get("exception", context)))
        )
        self.channel: grpc.aio.Channel = self.run(self._channel())
        self.client = Client(self.channel)
        created = self.run(self.client.create_table(Rules(), name="fuzzed"))
        self.table_id = created.table.table_id
        self.tokens: list[str] = self.run(self.client.seat_all(self.table_id))
        self.account_key = self.run(self._account_key())
        #: The real credentials a call may carry, each as its metadata.
        self.credentials: list[tuple[tuple[str, str], ...]] = [
            *(((TOKEN_KEY, token),) for token in self.tokens),
            ((OPERATOR_KEY, OPERATOR_TOKEN),),
            ((AUTHORIZATION, f"Bearer {self.account_key}"),),
        ]

    async def _account_key(self) -> str:
        request = account_pb2.CreateAccountRequest(name="fuzzer", kind=account_pb2.ACCOUNT_KIND_BOT)
        return (await account_pb2_grpc.AccountServiceStub(self.channel).CreateAccount(request)).key

    async def _channel(self) -> grpc.aio.Channel:
        return grpc.aio.insecure_channel(f"127.0.0.1:{self.server.port}", options=OWN_CONNECTION)

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float = 60.0) -> T:
        return self.loop.run_until_complete(asyncio.wait_for(coroutine, timeout))

    def close(self) -> None:
        logging.getLogger("grpc._cython.cygrpc").removeHandler(self._handler)


@pytest.fixture(scope="module")
def fuzz_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """One event loop for both backends' servers: gRPC may still call back into the first
    server's loop after it stopped, which would log "Event loop is closed" had it been closed."""
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


@pytest.fixture(scope="module", params=BACKENDS)
def fuzz(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    fuzz_loop: asyncio.AbstractEventLoop,
) -> Iterator[Fuzz]:
    """One server for the module's examples, on each log backend in turn."""
    backend: BackendName = request.param
    if backend == "postgres":
        require_postgres()
    storage = Storages(backend, tmp_path_factory.mktemp("fuzz"))()
    loop = fuzz_loop
    context = running_server(storage, operator_token=OPERATOR_TOKEN)
    server = loop.run_until_complete(context.__aenter__())
    state = Fuzz(loop, server)
    try:
        yield state
    finally:
        loop.run_until_complete(state.channel.close(None))
        loop.run_until_complete(context.__aexit__(None, None, None))
        loop.run_until_complete(storage.remove())
        state.close()


async def assert_still_whole(fuzz: Fuzz) -> None:
    """No unexpected server error, health SERVING, every log replays to the served state, and
    a fresh match plays out."""
    assert not fuzz.server_errors, fuzz.server_errors
    health = health_pb2_grpc.HealthStub(fuzz.channel)
    reply = await health.Check(health_pb2.HealthCheckRequest())
    assert reply.status == health_pb2.HealthCheckResponse.SERVING
    assert await assert_log_replays(fuzz.server, fuzz.client) >= 1
    client = fuzz.client
    created = await client.create_table(Rules(max_hands=1), name="after the fuzz")
    table_id = created.table.table_id
    tokens = await client.seat_all(table_id)
    streams = await client.started_streams(tokens)
    final = await play_turns(client, table_id, streams, random.Random(5))
    assert final.view.phase == view_pb2.PHASE_ENDED
    await close_streams(streams)


# -- random and malformed messages to every method ---------------------------------------------


def _metadata() -> st.SearchStrategy[tuple[tuple[str, str], ...]]:
    return st.lists(
        st.tuples(st.sampled_from([TOKEN_KEY, OPERATOR_KEY, AUTHORIZATION, "x-other"]), _ASCII),
        max_size=2,
    ).map(tuple)


async def _call(fuzz: Fuzz, method: Method, payloads: list[bytes], metadata: Any) -> None:
    channel = raw(fuzz.channel)
    status: grpc.StatusCode | None = None
    details: str | None = None
    results: list[play_pb2.ActionResult] = []
    try:
        if not method.client_streaming and not method.server_streaming:
            await channel.unary_unary(method.path)(
                payloads[0], metadata=metadata, timeout=CALL_TIMEOUT
            )
        elif not method.client_streaming:
            async for _ in channel.unary_stream(method.path)(
                payloads[0], metadata=metadata, timeout=CALL_TIMEOUT
            ):
                break  # a Watch of a real table streams forever: the first answer will do
        else:
            call = channel.stream_stream(method.path)(metadata=metadata, timeout=CALL_TIMEOUT)
            try:
                for payload in payloads:
                    await call.write(payload)
                await call.done_writing()
            except asyncio.InvalidStateError:
                pass  # the server ended the call already; its status is what counts
            except grpc.aio.AioRpcError as error:
                # A write that loses the race with the server's end of the call makes gRPC's
                # client report INTERNAL "Internal error from Core" instead of the server's
                # status: that one is not observable here (the server side is checked by
                # `Fuzz.server_errors` instead). Any other error is the server's own status,
                # checked below like every other.
                if error.details() != CLIENT_WRITE_RACE:
                    raise
                return
            async for answer in call:
                response = play_pb2.PlayResponse.FromString(answer)
                if response.WhichOneof("kind") == "action_result":
                    results.append(response.action_result)
            status, details = await call.code(), await call.details()
    except grpc.aio.AioRpcError as error:
        status, details = error.code(), error.details()
        assert details, f"{method.path}: {status} without a reason"
        assert_coded(method.path, status.value[0], _status_details(error.trailing_metadata()))
    assert status not in IMPRECISE, (method.path, status, details)
    assert status != grpc.StatusCode.DEADLINE_EXCEEDED, f"{method.path} did not answer"
    for result in results:
        assert result.accepted or (result.code not in IMPRECISE_CODES and result.reason), result
        if not result.accepted:
            assert_coded(f"{method.path} result", result.code, result.status)


def _status_details(trailers: Any) -> status_pb2.Status | None:
    """The google.rpc.Status a failed call carries in its grpc-status-details-bin trailer."""
    for key, value in trailers or ():
        if key == STATUS_DETAILS_METADATA:
            return status_pb2.Status.FromString(value)
    return None


def assert_coded(where: str, code: int, status: status_pb2.Status | None) -> None:
    """A refusal a program can act on, as a client built from the protos and docs/errors.md
    reads it: a google.rpc.Status of the same code with an ErrorInfo (domain spades.v1) whose
    reason is a catalogued code of exactly that status."""
    assert status is not None and status.code == code, (where, code, status)
    infos = []
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            infos.append(info)
    assert len(infos) == 1, (where, status)
    (info,) = infos
    reason = Reason.of(info.reason)
    assert info.domain == DOMAIN and reason is not None, (where, info)
    assert grpc.StatusCode[reason.status].value[0] == code, (where, reason, code)


def test_random_and_malformed_messages_get_precise_statuses(fuzz: Fuzz) -> None:
    @FUZZ_SETTINGS
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        method = data.draw(st.sampled_from(METHODS), label="method")
        count = data.draw(st.integers(1, 5)) if method.client_streaming else 1
        payloads = [data.draw(payload_for(method.request)) for _ in range(count)]
        if method.client_streaming and data.draw(st.booleans()):
            start = play_pb2.PlayRequest(start=play_pb2.StartPlay())
            payloads.insert(0, start.SerializeToString())  # get past `start`
        metadata = data.draw(_metadata(), label="metadata")
        if data.draw(st.booleans()):  # a real credential: a seat token, the operator's, a key
            metadata = data.draw(st.sampled_from(fuzz.credentials), label="credential")
        fuzz.run(_call(fuzz, method, payloads, metadata))

    run()
    fuzz.run(assert_still_whole(fuzz))


# -- random sequences of legal and illegal actions from every seat ---------------------------

RULE_SETS = [
    Rules(),
    Rules(players=3, jokers=True),
    Rules(blind_nil=True, blind_nil_deficit=0, blind_nil_pass_cards=2),
    Rules(max_hands=1, target_score=100),
]
STEP_KINDS = ["legal", "legal", "legal", "legal", "random", "stale", "again", "bad id", "other"]


async def _play_randomly(fuzz: Fuzz, data: st.DataObject) -> None:
    rules = data.draw(st.sampled_from(RULE_SETS), label="rules")
    seed = data.draw(st.binary(min_size=32, max_size=32), label="seed")
    client = fuzz.client
    # A given seed (through the admin service): the same draws make the same match.
    created = await admin_pb2_grpc.AdminServiceStub(fuzz.channel).CreateTableWithDeals(
        admin_pb2.CreateTableWithDealsRequest(
            name="fuzzed actions", rules=protocol.rules_to_proto(rules), seed=seed
        ),
        metadata=((OPERATOR_KEY, OPERATOR_TOKEN),),
    )
    table_id = created.table.table_id
    tokens = await client.seat_all(table_id, rules.players)
    streams = [client.seat_stream(token) for token in tokens]
    for stream in streams:
        await stream.start()
    last_ids: dict[int, str] = {}
    for _ in range(data.draw(st.integers(5, 40), label="steps")):
        table = fuzz.server.store.cached(table_id)
        state = table.state
        if table.finished:
            break  # a concession ended the match, and with it every seat's stream
        kind = data.draw(st.sampled_from(STEP_KINDS))
        seat = data.draw(st.integers(0, rules.players - 1))
        sequence = table.version
        action_id = uuid.uuid4().hex
        turn = state.turn
        legal = visible_legal_actions(state, turn) if turn is not None else []
        if kind in ("legal", "stale") and legal and turn is not None:
            seat = turn
            action = protocol.action_to_proto(legal[data.draw(st.integers(0, len(legal) - 1))])
            if kind == "stale":
                sequence = data.draw(st.integers(0, max(sequence - 1, 0)))
        else:
            action = cast(actions_pb2.Action, data.draw(message_of(actions_pb2.Action.DESCRIPTOR)))
            if kind == "other":
                sequence = data.draw(st.integers(0, 2**64 - 1))
        if kind == "again" and seat in last_ids:
            action_id = last_ids[seat]
        elif kind == "bad id":
            action_id = data.draw(st.sampled_from(["", "x" * 65]))
        result = await streams[seat].act(action, sequence, action_id=action_id)
        assert result.accepted or (result.code not in IMPRECISE_CODES and result.reason), result
        if not result.accepted:
            assert_coded(f"{kind} action", result.code, result.status)
        if kind == "legal" and legal and not state.is_over:
            assert result.accepted, (result, action)
        if action_id:
            last_ids[seat] = action_id
    for stream in streams:
        await stream.close()
    # The log replays to what the server serves.
    logged = await log_events(fuzz.server, table_id)
    replayed = MatchState.from_events(protocol.event_from_proto(event) for event in logged)
    served = (await fuzz.server.store.load(table_id)).state
    for viewer in (None, *range(rules.players)):
        assert protocol.view_to_proto(view(replayed, viewer)) == protocol.view_to_proto(
            view(served, viewer)
        )


def test_random_legal_and_illegal_actions_from_every_seat(fuzz: Fuzz) -> None:
    @settings(FUZZ_SETTINGS, max_examples=40)
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        fuzz.run(_play_randomly(fuzz, data))

    run()
    fuzz.run(assert_still_whole(fuzz))
