"""The session rules on their own (spades_server.domain.sessions), with the time given: a
session works until its expiry and not after, a revoked one is refused as revoked, a forged or
another account's token as not valid; and a Connect stream opened with a session ends when that
session is revoked."""

from __future__ import annotations

import grpc
import pytest

from spades.v1 import account_pb2, account_pb2_grpc
from spades_server.domain import errors, sessions
from spades_server.domain.accounts import Account, AccountDecided, AccountEntry
from tests.support.clients import Client
from tests.support.refusals import assert_call_refused

DAY = 24 * 3600.0
SIGNED_IN_AT = 1_000_000.0


def fold(account: Account, decided: object, at: float) -> None:
    assert isinstance(decided, AccountDecided)
    for event, _, _ in decided.events:
        account.fold(
            AccountEntry(
                account.account_id,
                account.version + 1,
                0,
                at,
                event,
                session_token_sha256=decided.session_token_sha256,
            )
        )


def refusal(account: Account, token: str, now: float) -> str:
    with pytest.raises(errors.RequestError) as refused:
        sessions.check_session(account, token, now)
    return refused.value.reason_code


def test_a_session_works_until_its_expiry_and_never_once_revoked() -> None:
    account = Account("a1", name="Ada")
    token = sessions.new_session_token("a1")
    fold(account, sessions.decide_sign_in(token, SIGNED_IN_AT, DAY, "10.0.0.1"), SIGNED_IN_AT)
    session = sessions.check_session(account, token, SIGNED_IN_AT + DAY - 1)
    assert session.address == "10.0.0.1" and session.expires_at == SIGNED_IN_AT + DAY
    assert refusal(account, token, SIGNED_IN_AT + DAY) == "SESSION_EXPIRED"
    assert sessions.live_sessions(account, SIGNED_IN_AT + DAY) == []
    # Another account's token, a forged secret, a key, and no token shape at all.
    other = sessions.new_session_token("a2")
    forged = token[: token.rindex(".")] + ".forgedforgedforgedforged"
    for wrong in (other, forged, "spk.a1.secretsecretsecret", "sps.a1"):
        assert refusal(account, wrong, SIGNED_IN_AT) == "SESSION_NOT_VALID"
    session_id = sessions.session_of_token(token)[1]  # type: ignore[index]
    fold(account, sessions.decide_session_end(account, session_id, by_operator=False), 5.0)
    assert refusal(account, token, SIGNED_IN_AT) == "SESSION_REVOKED"
    # Ending it again changes nothing; a session it never had is NOT_FOUND.
    assert sessions.decide_session_end(account, session_id, by_operator=False) is None
    with pytest.raises(errors.RequestError) as missing:
        sessions.decide_session_end(account, "0" * 16, by_operator=False)
    assert missing.value.reason_code == "SESSION_NOT_FOUND"


@pytest.mark.asyncio
@pytest.mark.timeout(30)
async def test_a_connect_stream_opened_with_a_session_ends_when_it_is_revoked(
    server: object, client: Client
) -> None:
    service = account_pb2_grpc.AccountServiceStub(client.channel)
    signed_up = await service.SignUp(
        account_pb2.SignUpRequest(name="Streamer", password="a long passphrase")
    )
    token = signed_up.session_token
    stream = service.Connect(
        account_pb2.ConnectRequest(), metadata=(("authorization", f"Bearer {token}"),)
    )
    kinds = []
    with pytest.raises(grpc.aio.AioRpcError) as ended:
        async for message in stream:
            kinds.append(message.event.WhichOneof("kind"))
            if kinds == ["account_created", "session_started"]:
                await service.RevokeSession(
                    account_pb2.RevokeSessionRequest(),
                    metadata=(("authorization", f"Bearer {token}"),),
                )
    # The event, then the end: a person signed up has no key (no key_issued).
    assert kinds == ["account_created", "session_started", "session_ended"]
    assert_call_refused(ended.value, grpc.StatusCode.UNAUTHENTICATED, "SESSION_REVOKED")
