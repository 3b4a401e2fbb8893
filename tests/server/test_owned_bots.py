"""A person owns bot accounts: creates them (the key shown once), lists them, rotates and
revokes their keys and sets their manifests; someone else's bot is refused; the operator still
does everything. On both log backends, through a real server."""

from __future__ import annotations

import grpc
import pytest

from spades.v1 import account_pb2, account_pb2_grpc
from tests.support.accounts import bearer
from tests.support.backends import Storages
from tests.support.clients import rpc_error
from tests.support.refusals import assert_call_refused, nothing_written, refused_unchanged
from tests.support.servers import log_head, running_server

pytestmark = pytest.mark.asyncio

Code = grpc.StatusCode
PASSWORD = "correct horse battery staple"
OPERATOR_TOKEN = "f3c1b2a4d5e6f7a8b9c0d1e2f3a4b5c6"
REQUEST_ID = "0f0e0d0c0b0a09080706050403020100"


OPERATOR = (("spades-operator-token", OPERATOR_TOKEN),)


async def test_a_person_makes_lists_and_manages_its_bots_and_no_one_elses(
    storage: Storages,
) -> None:
    async with (
        running_server(storage(), operator_token=OPERATOR_TOKEN) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
    ):
        service = account_pb2_grpc.AccountServiceStub(channel)
        owner = await service.SignUp(account_pb2.SignUpRequest(name="Owner", password=PASSWORD))
        session = owner.session_token
        made = await service.CreateBot(
            account_pb2.CreateBotRequest(name="Owned Bot", request_id=REQUEST_ID),
            metadata=bearer(session),
        )
        bot = made.account
        assert bot.kind == account_pb2.ACCOUNT_KIND_BOT
        assert bot.owner_account_id == owner.account.account_id and made.key.startswith("spk.")
        # A retry of the same call: the same bot, the same key, listed once.
        again = await service.CreateBot(
            account_pb2.CreateBotRequest(name="Owned Bot", request_id=REQUEST_ID),
            metadata=bearer(session),
        )
        assert (again.account.account_id, again.key) == (bot.account_id, made.key)
        listed = await service.ListBots(account_pb2.ListBotsRequest(), metadata=bearer(session))
        assert [b.account_id for b in listed.bots] == [bot.account_id]
        # The owner revokes the bot's key, then issues a new one (as only the operator could).
        revoked = await service.RevokeKey(
            account_pb2.RevokeKeyRequest(account_id=bot.account_id), metadata=bearer(session)
        )
        assert revoked.account.key_revoked
        async with nothing_written(server):
            error = await rpc_error(
                service.RevokeKey(account_pb2.RevokeKeyRequest(), metadata=bearer(made.key))
            )
            assert_call_refused(error, Code.UNAUTHENTICATED, "KEY_REVOKED")
        rotated = await service.RotateKey(
            account_pb2.RotateKeyRequest(account_id=bot.account_id), metadata=bearer(session)
        )
        assert rotated.key != made.key and not rotated.account.key_revoked
        manifest = account_pb2.RuleManifest(players=[4], options=[account_pb2.RULE_OPTION_JOKERS])
        declared = await service.SetManifest(
            account_pb2.SetManifestRequest(manifest=manifest, account_id=bot.account_id),
            metadata=bearer(session),
        )
        assert declared.account.manifest == manifest
        # Someone else: another person, the bot itself, and nobody.
        stranger = await service.SignUp(
            account_pb2.SignUpRequest(name="Stranger", password=PASSWORD)
        )
        head = await log_head(server)
        for call in (
            service.RotateKey(
                account_pb2.RotateKeyRequest(account_id=bot.account_id),
                metadata=bearer(stranger.session_token),
            ),
            service.RevokeKey(
                account_pb2.RevokeKeyRequest(account_id=bot.account_id),
                metadata=bearer(stranger.session_token),
            ),
            service.SetManifest(
                account_pb2.SetManifestRequest(manifest=manifest, account_id=bot.account_id),
                metadata=bearer(stranger.session_token),
            ),
        ):
            await refused_unchanged(server, call, Code.PERMISSION_DENIED, "NOT_BOT_OWNER")
        async with nothing_written(server):
            error = await rpc_error(
                service.CreateBot(
                    account_pb2.CreateBotRequest(name="Bot Of A Bot"), metadata=bearer(rotated.key)
                )
            )
            assert_call_refused(error, Code.PERMISSION_DENIED, "BOTS_FOR_PEOPLE")
        async with nothing_written(server):
            error = await rpc_error(
                service.CreateBot(account_pb2.CreateBotRequest(name="Anon Bot"))
            )
            assert_call_refused(error, Code.UNAUTHENTICATED, "KEY_REQUIRED")
        async with nothing_written(server):
            error = await rpc_error(
                service.CreateBot(
                    account_pb2.CreateBotRequest(name="owned bot"), metadata=bearer(session)
                )
            )
            assert_call_refused(error, Code.ALREADY_EXISTS, "NAME_TAKEN")
        assert await log_head(server) == head
        # The operator still does everything to anyone's bot.
        by_operator = await service.RotateKey(
            account_pb2.RotateKeyRequest(account_id=bot.account_id), metadata=OPERATOR
        )
        assert by_operator.key not in (rotated.key, made.key)
        await service.SetManifest(
            account_pb2.SetManifestRequest(
                manifest=account_pb2.RuleManifest(), account_id=bot.account_id
            ),
            metadata=OPERATOR,
        )
        owners_bots = await service.ListBots(
            account_pb2.ListBotsRequest(account_id=owner.account.account_id), metadata=OPERATOR
        )
        assert [b.account_id for b in owners_bots.bots] == [bot.account_id]
        await service.RevokeSession(
            account_pb2.RevokeSessionRequest(
                account_id=owner.account.account_id, session_id=owner.session.session_id
            ),
            metadata=OPERATOR,
        )
        async with nothing_written(server):
            error = await rpc_error(
                service.ListBots(account_pb2.ListBotsRequest(), metadata=bearer(session))
            )
            assert_call_refused(error, Code.UNAUTHENTICATED, "SESSION_REVOKED")
