"""A log written before the private envelope stays readable: the server serves it as the old one
did (tests/server/legacy/expected.json), and its tokens and join codes still work."""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import grpc
import pytest

from spades import protocol
from spades.engine import events as ev
from spades.v1 import events_pb2, lobby_pb2, play_pb2
from spades_server.app.server import SpadesServer
from spades_server.domain import tokens
from spades_server.eventlog.sqlite import SqliteEventLog
from spades_server.store import journal
from tests.server.legacy.served import HERE, MANIFEST, logged_counts, served
from tests.support.clients import TOKEN_KEY, Client, rpc_error, stream_error, watch
from tests.support.servers import log_entries, running_server


def expected_now() -> dict[str, Any]:
    """What the old server served, less what changed on purpose: a finished record's
    TableCreated carried the seed (now in the record's own ``seed`` field only), and said
    nothing of the table's listing (now its name, privacy, quick match and rated, as the
    lobby's summary says them: docs/protocol.md)."""
    expected: dict[str, Any] = json.loads((HERE / "expected.json").read_text())
    for table in expected.values():
        created = table["record"]["events"][0]["event"]["table_created"]
        created.pop("seed", None)
        created.pop("preset_deals", None)
        listing = ("name", "private", "quick_match", "rated")
        created.update({key: table["summary"][key] for key in listing if key in table["summary"]})
    return expected


@asynccontextmanager
async def serving(database: Path) -> AsyncIterator[tuple[SpadesServer, Client]]:
    # No house bots: nothing but these tests' calls writes to the log (the clock may). And no
    # freeing of unclaimed seats: the fixture's waiting tables were joined long ago by holders
    # who never opened a stream (the log is older than stream claims), so their seats are past
    # --unclaimed-seat-timeout and the first sweep (a second after the start) would free them,
    # before or after these tests open their streams depending on the machine's speed.
    async with (
        running_server(database, house_bots=0, unclaimed_seat_timeout=0) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
    ):
        yield server, Client(channel)


@pytest.fixture
def legacy_db(tmp_path: Path) -> Path:
    shutil.copy(HERE / "legacy.db", tmp_path / "legacy.db")
    return tmp_path / "legacy.db"


@pytest.mark.asyncio
async def test_every_legacy_row_is_read_without_its_secrets_in_the_public_message(
    legacy_db: Path,
) -> None:
    log = SqliteEventLog(str(legacy_db))
    await log.open()
    try:
        rows = [row for entry in MANIFEST.values() for row in await log.read(entry["table_id"])]
    finally:
        await log.close()
    assert rows and not any(row.data.startswith(journal.ENVELOPE_MARKER) for row in rows)
    entries = [journal.decode(row) for row in rows]
    secrets = [
        secret
        for entry in entries
        for secret in (
            entry.secrets.join_code_sha256,
            entry.secrets.seat_token_sha256,
            entry.secrets.substitute_token_sha256,
            getattr(entry.event, "seed", None) if isinstance(entry.event, ev.TableCreated) else b"",
        )
        if secret
    ]
    assert len(secrets) >= 4 + 2 + 4 + 1 + 1 + 4  # table seeds, a join code, every token
    for entry in entries:
        if isinstance(entry.event, ev.SeedRevealed):
            continue  # the seed, public at the end
        data = entry.message.SerializeToString()
        assert not any(secret in data for secret in secrets), "an old secret field stayed"
        assert not entry.message.action_id
    created = [e for e in entries if isinstance(e.event, ev.TableCreated)]
    assert all(isinstance(e.event, ev.TableCreated) and e.event.seed for e in created)
    private = MANIFEST["private"]
    private_created = next(e for e in created if e.table_id == private["table_id"])
    assert private_created.secrets.join_code_sha256 == tokens.digest(private["join_code"])
    seated = {e.secrets.seat_token_sha256 for e in entries if isinstance(e.event, ev.SeatTaken)}
    for table in MANIFEST.values():
        for token in table["tokens"].values():
            assert tokens.digest(token) in seated
    substituted = [e for e in entries if isinstance(e.event, ev.SeatSubstituted)]
    assert [e.secrets.substitute_token_sha256 for e in substituted] == [
        tokens.digest(MANIFEST["substituted"]["substitute"]["token"])
    ]
    assert any(e.action_id for e in entries)


@pytest.mark.asyncio
async def test_the_new_server_serves_a_legacy_log_as_the_old_one_did(legacy_db: Path) -> None:
    counts = await logged_counts(legacy_db)
    async with serving(legacy_db) as (_, client):
        assert await served(client, counts) == expected_now()
        # The action ids of the old rows reach only their actor's stream now.
        finished = MANIFEST["finished"]
        for seat, token in finished["tokens"].items():
            stream = client.seat_stream(token)
            await stream.start(after_sequence=1)
            events: list[events_pb2.Event] = []
            while len(events) < counts["finished"] - 1:
                message = await stream.next()
                if message.WhichOneof("kind") == "event":
                    events.append(message.event)
            await stream.close()
            own = [e for e in events if e.action_id]
            assert own, f"seat {seat} got none of its action ids"
            for event in own:
                assert protocol.event_from_proto(event).actor == int(seat)


@pytest.mark.asyncio
async def test_legacy_tokens_and_join_codes_still_work(legacy_db: Path) -> None:
    private, substituted = MANIFEST["private"], MANIFEST["substituted"]
    async with serving(legacy_db) as (server, client):
        wrong = await rpc_error(
            client.lobby.JoinTable(
                lobby_pb2.JoinTableRequest(
                    table_id=private["table_id"], player_name="Eve", join_code="WRONGCODE2"
                )
            )
        )
        assert wrong.code() is grpc.StatusCode.PERMISSION_DENIED
        joined = await client.lobby.JoinTable(
            lobby_pb2.JoinTableRequest(
                table_id=private["table_id"], player_name="Ann", join_code=private["join_code"]
            )
        )
        assert joined.seat_token
        # An old seat token still names its seat.
        left = await client.lobby.LeaveTable(
            lobby_pb2.LeaveTableRequest(),
            metadata=((TOKEN_KEY, private["tokens"]["0"]),),
        )
        assert left.seat == protocol.seat_to_proto(0)
        # The substitute's old token plays its seat until the player takes it back.
        substitute = substituted["substitute"]
        stream = client.seat_stream(substitute["token"])
        await stream.start()
        await stream.close()
        player = client.seat_stream(substituted["tokens"][str(substitute["seat"])])
        await player.start()
        await player.close()
        refused = await stream_error(
            lambda: client.play.Play(metadata=((TOKEN_KEY, substitute["token"]),)),  # type: ignore[call-arg]
            play_pb2.PlayRequest(start=play_pb2.StartPlay()),
        )
        assert refused.code() is grpc.StatusCode.UNAUTHENTICATED
        written = await log_entries(server, substituted["table_id"])
    assert any(isinstance(entry.event, ev.SeatReclaimed) for entry in written)
    # Old and new rows side by side: a restarted server reads both.
    async with serving(legacy_db) as (server, client):
        summary = (
            await client.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=private["table_id"]))
        ).table
        assert [seat.occupied for seat in summary.seats] == [False, True, True, False]
        spectator = watch(client, substituted["table_id"])
        snapshot = await spectator.snapshot()
        spectator.close()
        assert snapshot.sequence >= len(written)
        entries = await log_entries(server, private["table_id"])
        assert entries[-1].event == ev.SeatLeft(0)
