"""Client request ids on a challenge's answers: a retried AcceptChallenge, DeclineChallenge or
CancelChallenge gets the challenge as it is now (never CHALLENGE_ALREADY_ANSWERED or
CHALLENGE_CLOSED for its own answer) and records nothing, on the same server, after a restart
that came between the commit and the reply, and through another replica at once; an id used on
the challenge for something else is REQUEST_ID_REUSED and changes nothing."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import grpc
import pytest

from spades.client import SpadesClient, SpadesError
from spades.engine import Rules
from spades_server.app.server import SpadesServer
from spades_server.store import challenge_store, codecs
from spades_server.v1 import log_pb2
from tests.support.backends import Storages
from tests.support.servers import log_head, running_server

pytestmark = pytest.mark.asyncio

Code = grpc.StatusCode
ONE_HAND = Rules(max_hands=1)


def request_id() -> str:
    return uuid.uuid4().hex


@asynccontextmanager
async def clients(
    server: SpadesServer, keys: dict[str, str]
) -> AsyncIterator[dict[str, SpadesClient]]:
    """A client per account (its key as Bearer) of ``server``."""
    address = f"127.0.0.1:{server.port}"
    async with AsyncExitStack() as stack:
        yield {
            name: await stack.enter_async_context(SpadesClient(address, account_key=key))
            for name, key in keys.items()
        }


async def make_accounts(server: SpadesServer, *names: str) -> dict[str, tuple[str, str]]:
    """Bot accounts by name: (account id, key)."""
    made = {}
    async with SpadesClient(f"127.0.0.1:{server.port}") as anonymous:
        for name in names:
            created = await anonymous.create_account(name, kind="bot")
            made[name] = (created.account.account_id, created.key)
    return made


async def rows_of(server: SpadesServer, challenge_id: str) -> list[log_pb2.ChallengeLogEntry]:
    stored = await server.log.read(challenge_store.stream_of(challenge_id))
    return [codecs.decode_challenge(row) for row in stored]


async def refused(call: object, code: Code, reason_code: str) -> None:
    with pytest.raises(SpadesError) as raised:
        await call  # type: ignore[misc]
    assert (raised.value.code, raised.value.reason_code) == (code, reason_code), raised.value


async def test_a_retried_acceptance_gets_the_challenge_and_records_nothing(
    server: SpadesServer,
) -> None:
    made = await make_accounts(server, "Ada", "Bea")
    keys = {name: key for name, (_, key) in made.items()}
    async with clients(server, keys) as party:
        challenge = await party["Ada"].create_challenge([made["Bea"][0]], ONE_HAND)
        accept = request_id()
        first = await party["Bea"].accept_challenge(challenge.challenge_id, request_id=accept)
        assert first.state == "accepted" and first.table_id
        head = await log_head(server)
        again = await party["Bea"].accept_challenge(challenge.challenge_id, request_id=accept)
        assert (again.state, again.table_id) == ("accepted", first.table_id)
        # Another id is another call: the acceptance is there already.
        await refused(
            party["Bea"].accept_challenge(challenge.challenge_id, request_id=request_id()),
            Code.FAILED_PRECONDITION,
            "CHALLENGE_ALREADY_ANSWERED",
        )
        # The same id for another answer, or from another account, is not a retry.
        await refused(
            party["Bea"].decline_challenge(challenge.challenge_id, request_id=accept),
            Code.INVALID_ARGUMENT,
            "REQUEST_ID_REUSED",
        )
        await refused(
            party["Ada"].cancel_challenge(challenge.challenge_id, request_id=accept),
            Code.INVALID_ARGUMENT,
            "REQUEST_ID_REUSED",
        )
        assert await log_head(server) == head
        rows = await rows_of(server, challenge.challenge_id)
        assert [row.WhichOneof("kind") for row in rows] == ["created", "accepted"]


async def test_a_retried_decline_or_cancel_gets_the_ended_challenge(server: SpadesServer) -> None:
    made = await make_accounts(server, "Ada", "Bea")
    keys = {name: key for name, (_, key) in made.items()}
    async with clients(server, keys) as party:
        declined = await party["Ada"].create_challenge([made["Bea"][0]], ONE_HAND)
        decline = request_id()
        for _ in range(2):
            answer = await party["Bea"].decline_challenge(
                declined.challenge_id, "later", request_id=decline
            )
            assert answer.state == "declined"
        create, cancel = request_id(), request_id()
        cancelled = await party["Ada"].create_challenge(
            [made["Bea"][0]], ONE_HAND, request_id=create
        )
        # The creation's id is not a cancellation's: refused, the challenge still pending.
        await refused(
            party["Ada"].cancel_challenge(cancelled.challenge_id, request_id=create),
            Code.INVALID_ARGUMENT,
            "REQUEST_ID_REUSED",
        )
        assert (await party["Ada"].get_challenge(cancelled.challenge_id)).state == "pending"
        for _ in range(2):
            answer = await party["Ada"].cancel_challenge(cancelled.challenge_id, request_id=cancel)
            assert answer.state == "cancelled"
        await refused(
            party["Ada"].cancel_challenge(cancelled.challenge_id, request_id=request_id()),
            Code.FAILED_PRECONDITION,
            "CHALLENGE_CLOSED",
        )
    for challenge_id, ended in (
        (declined.challenge_id, "declined"),
        (cancelled.challenge_id, "cancelled"),
    ):
        rows = await rows_of(server, challenge_id)
        assert [row.WhichOneof("kind") for row in rows] == ["created", ended]


async def test_the_sdk_sends_a_request_id_with_each_answer(server: SpadesServer) -> None:
    made = await make_accounts(server, "Ada", "Bea")
    keys = {name: key for name, (_, key) in made.items()}
    async with clients(server, keys) as party:
        challenge = await party["Ada"].create_challenge([made["Bea"][0]], ONE_HAND)
        await party["Bea"].accept_challenge(challenge.challenge_id)
    accepted = (await rows_of(server, challenge.challenge_id))[-1]
    assert accepted.WhichOneof("kind") == "accepted"
    assert len(accepted.request_id_sha256) == 32  # the id's SHA-256, never the id


async def test_an_answer_committed_before_a_restart_is_answered_after_it(storage: Storages) -> None:
    """The server went away after the commit and before the client read the reply."""
    database = storage()
    accept = request_id()
    async with running_server(database) as server:
        made = await make_accounts(server, "Ada", "Bea")
        keys = {name: key for name, (_, key) in made.items()}
        async with clients(server, keys) as party:
            challenge = await party["Ada"].create_challenge([made["Bea"][0]], ONE_HAND)
            first = await party["Bea"].accept_challenge(challenge.challenge_id, request_id=accept)
    async with running_server(database) as server, clients(server, keys) as party:
        head = await log_head(server)
        again = await party["Bea"].accept_challenge(challenge.challenge_id, request_id=accept)
        assert (again.state, again.table_id) == ("accepted", first.table_id)
        assert await log_head(server) == head


async def test_one_acceptance_through_two_replicas_at_once_has_one_outcome(
    tmp_path: Path, postgres: None
) -> None:
    from tests.support.servers import replicas

    async with replicas(tmp_path, 2) as servers:
        made = await make_accounts(servers[0], "Ada", "Bea")
        keys = {name: key for name, (_, key) in made.items()}
        async with clients(servers[0], keys) as first, clients(servers[1], keys) as second:
            challenge = await first["Ada"].create_challenge(
                [made["Bea"][0]], ONE_HAND, request_id=request_id()
            )
            accept = request_id()
            answers = await asyncio.gather(
                first["Bea"].accept_challenge(challenge.challenge_id, request_id=accept),
                second["Bea"].accept_challenge(challenge.challenge_id, request_id=accept),
            )
            assert {(a.state, a.table_id) for a in answers} == {("accepted", answers[0].table_id)}
            assert answers[0].table_id
        rows = await rows_of(servers[0], challenge.challenge_id)
        assert [row.WhichOneof("kind") for row in rows] == ["created", "accepted"]
