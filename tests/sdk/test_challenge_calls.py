"""The SDK's challenge and manifest calls from the sync client, against a real server on
SQLite (the integrity check after reads its file): set a manifest, challenge, list, cancel,
decline and accept, blocking."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from spades.client import SyncSpadesClient
from spades.engine import Rules
from spades.manifest import manifest_of
from spades_server.app import integrity
from spades_server.app.server import SpadesServer


@pytest.fixture
def log_storage(database: Path) -> Path:
    """SQLite only: the test reads the server's log file with the integrity check."""
    return database


def _sync_challenges(address: str) -> list[str]:
    with SyncSpadesClient(address) as anonymous:
        host = anonymous.create_account("Sync Host", kind="person")
        guest = anonymous.create_account("Sync Guest", kind="bot")
    guest_id = guest.account.account_id
    seen = []
    with (
        SyncSpadesClient(address, account_key=host.key) as hosting,
        SyncSpadesClient(address, account_key=guest.key) as guesting,
    ):
        declared = guesting.set_manifest(manifest_of(options=["jokers"], max_series=2))
        assert declared.manifest == manifest_of(options=["jokers"], max_series=2)
        first = hosting.create_challenge(
            [guest_id], Rules(jokers=True), expiry_seconds=60, series_length=2
        )
        assert (first.series_length, first.series, first.series_over) == (2, (), False)
        assert hosting.online_bots().bots == ()  # no account stream is open
        second = hosting.create_challenge(
            [guest_id],
            seating={
                "north": host.account.account_id,
                "east": guest_id,
                "south": guest_id,
                "west": host.account.account_id,
            },
        )
        third = hosting.create_challenge([guest_id])
        listed = guesting.list_challenges("incoming", page_size=2)
        assert [c.challenge_id for c in listed.challenges] == [
            third.challenge_id,
            second.challenge_id,
        ]
        rest = guesting.list_challenges("incoming", page_size=2, page_token=listed.next_page_token)
        assert [c.challenge_id for c in rest.challenges] == [first.challenge_id]
        seen.append(hosting.cancel_challenge(third.challenge_id).state)
        seen.append(guesting.decline_challenge(second.challenge_id, "seating").decline_reason)
        accepted = guesting.accept_challenge(first.challenge_id)
        seen.append(accepted.state)
        assert accepted.seats_of(guest_id) == (1, 3)
        assert hosting.get_challenge(first.challenge_id).table_id == accepted.table_id
        pending = hosting.list_challenges("outgoing", pending_only=True)
        seen.append(str(len(pending.challenges)))
    return seen


@pytest.mark.asyncio
async def test_the_sync_client_challenges_answers_and_cancels(
    server: SpadesServer, database: Path
) -> None:
    seen = await asyncio.wait_for(
        asyncio.to_thread(_sync_challenges, f"127.0.0.1:{server.port}"), 60
    )
    assert seen == ["cancelled", "seating", "accepted", "0"]
    # The log with its challenge streams is whole, and every row decodes (the integrity check
    # reads challenge rows with their own reader).
    decoded = integrity.decode_everything(database)
    assert decoded.findings == [] and decoded.events > 20
    assert integrity.check_database(database).findings == []
