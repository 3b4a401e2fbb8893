"""TLS: --tls-cert/--tls-key serve TLS; a client trusting the certificate plays (the SDK's clients
with ``credentials``, and the server's own house bots), a plaintext client cannot. The
certificate is self-signed, made in the test."""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from spades.client import AdminClient, SpadesClient, StreamEvent, SyncSpadesClient, Unavailable
from spades.engine import Phase, Rules
from spades.engine import events as ev
from spades.v1 import lobby_pb2
from spades_server.app import config
from spades_server.app.server import SpadesServer
from spades_server.ops.settings import Settings
from tests.support.backends import Storages
from tests.support.clients import Client
from tests.support.servers import running_server
from tests.support.tls import self_signed


@pytest.mark.asyncio
async def test_a_tls_server_serves_a_client_that_trusts_its_certificate(tmp_path: Path) -> None:
    cert_file, key_file, cert_pem = self_signed(tmp_path)
    async with running_server(
        tmp_path / "tables.db", tls_cert=str(cert_file), tls_key=str(key_file)
    ) as server:
        credentials = grpc.ssl_channel_credentials(root_certificates=cert_pem)
        async with grpc.aio.secure_channel(f"127.0.0.1:{server.port}", credentials) as channel:
            client = Client(channel)
            created = await client.create_table(Rules(), name="over TLS")
            tokens = await client.seat_all(created.table.table_id)
            stream = client.seat_stream(tokens[0])
            snapshot = await stream.start()
            assert len(snapshot.view.hand) == 13
            await stream.close()
            health = health_pb2_grpc.HealthStub(channel)
            reply = await health.Check(health_pb2.HealthCheckRequest())
            assert reply.status == health_pb2.HealthCheckResponse.SERVING

        # Plaintext against the TLS port: no answer but UNAVAILABLE.
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as plain:
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await Client(plain).lobby.ListTables(lobby_pb2.ListTablesRequest(), timeout=5)
            assert caught.value.code() == grpc.StatusCode.UNAVAILABLE

        # A client that does not trust the certificate is refused too.
        (tmp_path / "other").mkdir()
        _, _, other_pem = self_signed(tmp_path / "other")
        untrusting = grpc.ssl_channel_credentials(root_certificates=other_pem)
        async with grpc.aio.secure_channel(f"127.0.0.1:{server.port}", untrusting) as channel:
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await Client(channel).lobby.ListTables(lobby_pb2.ListTablesRequest(), timeout=5)
            assert caught.value.code() == grpc.StatusCode.UNAVAILABLE


OPERATOR_TOKEN = "an-operator-token-for-tls-tests-0123456789"


@pytest.mark.asyncio
async def test_the_sdk_clients_and_the_house_bots_work_on_a_tls_server(
    tmp_path: Path, storage: Storages
) -> None:
    cert_file, key_file, cert_pem = self_signed(tmp_path)
    async with running_server(
        storage(),
        tls_cert=str(cert_file),
        tls_key=str(key_file),
        operator_token=OPERATOR_TOKEN,
    ) as server:
        address = f"127.0.0.1:{server.port}"
        credentials = grpc.ssl_channel_credentials(root_certificates=cert_pem)
        async with SpadesClient(address, credentials=credentials) as client:
            created = await client.create_table("house over TLS", Rules(max_hands=1))
            # Four house bots: clients of the server itself, which serves only TLS here.
            seated = [await client.add_house_bot(created.table_id) for _ in range(4)]
            assert sorted(bot.seat for bot in seated) == [0, 1, 2, 3]
            ended = None
            async with asyncio.timeout(60):
                async for message in client.watch(created.table_id, after_sequence=1):
                    if isinstance(message, StreamEvent) and isinstance(
                        message.event, ev.MatchEnded
                    ):
                        ended = message.event
                        break
            assert ended is not None and ended.reason is ev.EndReason.MAX_HANDS
            final = await client.get_view(created.table_id)
            assert final.view.phase is Phase.ENDED and final.view.viewer is None
        async with AdminClient(address, OPERATOR_TOKEN, credentials=credentials) as admin:
            tables, _ = await admin.list_tables()
            assert created.table_id in {detail.table.table_id for detail in tables}

        def sync_listing() -> int:
            with SyncSpadesClient(address, credentials=credentials) as sync:
                return len(sync.list_tables().tables)

        assert await asyncio.to_thread(sync_listing) >= 1
        # Without the certificate's trust the SDK cannot connect either.
        async with SpadesClient(address, timeout=5) as plain:
            with pytest.raises(Unavailable):
                await plain.list_tables()


@pytest.mark.asyncio
async def test_an_unreadable_certificate_is_a_clear_error(tmp_path: Path) -> None:
    server = SpadesServer(
        Settings(
            listen="127.0.0.1:0",
            database=str(tmp_path / "tables.db"),
            metrics="off",
            web="off",
            tls_cert=str(tmp_path / "missing.crt"),
            tls_key=str(tmp_path / "missing.key"),
        )
    )
    with pytest.raises(OSError, match=r"cannot read --tls-cert .*missing\.crt"):
        await server.start()


def test_tls_flags_and_environment_variables(capsys: pytest.CaptureFixture[str]) -> None:
    settings = config.from_args(
        ["--tls-cert", "a.crt"], {"SPADES_TLS_KEY": "a.key", "SPADES_TLS_CERT": "b.crt"}
    )
    assert (settings.tls_cert, settings.tls_key) == ("a.crt", "a.key")
    with pytest.raises(SystemExit):
        config.from_args(["--tls-cert", "a.crt"], {})
    assert "go together" in capsys.readouterr().err
