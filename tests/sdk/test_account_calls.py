"""The SDK's account and rating calls, async and sync, against a real server on each log
backend."""

from __future__ import annotations

import asyncio

import pytest

from spades.client import (
    AlreadyExists,
    SpadesClient,
    SyncSpadesClient,
    Unauthenticated,
)
from spades.engine import Rules
from spades_server.app.server import SpadesServer


def _sync_session(address: str) -> tuple[str, str, int]:
    with SyncSpadesClient(address) as anonymous:
        created = anonymous.create_account("Sync Person", kind="person")
        assert anonymous.get_account(name="sync PERSON") == created.account
        try:
            anonymous.create_account("SYNC person")
        except AlreadyExists as error:
            assert "taken" in error.reason
        else:
            raise AssertionError("a name was taken twice")
    with SyncSpadesClient(address, account_key=created.key) as account:
        seat = account.join_table(account.create_table("rated", Rules(), rated=True).table_id, "x")
        rotated = account.rotate_key()
        revoked = account.revoke_key()
        board = account.leaderboard("partnership")
    return rotated.key, str(revoked.key_revoked), seat.seat + len(board.lines)


@pytest.mark.asyncio
async def test_the_sdk_creates_accounts_seats_them_and_rotates_their_keys(
    server: SpadesServer,
) -> None:
    address = f"127.0.0.1:{server.port}"
    key, revoked, seat = await asyncio.to_thread(_sync_session, address)
    assert revoked == "True" and seat == 0  # seated at North; no one rated yet
    async with SpadesClient(address, account_key=key) as client:
        with pytest.raises(Unauthenticated, match="revoked"):
            await client.rotate_key()
        with pytest.raises(ValueError, match="bot or person"):
            await client.create_account("Robot", kind="robot")
        assert await client.ratings((await client.get_account(name="Sync Person")).account_id) == ()
