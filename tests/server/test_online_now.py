"""Online now (PresenceService.ListOnlineBots) through a real server on both log backends: a bot
is listed, with its manifest and ratings, exactly while its account stream is open; a person's
stream does not list it; a replica that stops renewing its rows (killed) stops counting once
they expire, and a heartbeat keeps a live one listed."""

from __future__ import annotations

import asyncio

import pytest

from spades.client import SpadesClient
from spades.manifest import manifest_of
from spades_server.app.server import SpadesServer
from spades_server.processes.presence import Presence
from tests.support.accounts import play_rated_match, stream_open
from tests.support.time import ManualClock

#: The name of the presence's heartbeat task (what sleeps on its clock).
HEARTBEAT = "presence-heartbeat"

pytestmark = pytest.mark.asyncio

#: A bounded wait for what the server does after a stream closes.
WAIT = 20


async def online_names(client: SpadesClient) -> list[str]:
    return [bot.account.name for bot in (await client.online_bots()).bots]


async def until_online(client: SpadesClient, names: list[str]) -> None:
    async with asyncio.timeout(WAIT):
        while await online_names(client) != names:
            await asyncio.sleep(0.05)


async def test_a_bot_is_online_while_its_stream_is_open_with_its_manifest_and_ratings(
    server: SpadesServer,
) -> None:
    address = f"127.0.0.1:{server.port}"
    async with SpadesClient(address) as anonymous:
        owl = await anonymous.create_account("Night Owl", kind="bot")
        lark = await anonymous.create_account("Lark", kind="bot")
        pat = await anonymous.create_account("Pat", kind="person")
        await play_rated_match(
            server, {owl.key: ("random", "north,south"), lark.key: ("random", "east,west")}
        )
        owl_client = SpadesClient(address, account_key=owl.key)
        pat_client = SpadesClient(address, account_key=pat.key)
        try:
            await owl_client.set_manifest(manifest_of(options=["jokers"], max_series=3))
            assert await online_names(anonymous) == []
            async with stream_open(owl_client), stream_open(pat_client):
                # Listed once its stream is open (the row is written before its first event);
                # the person's open stream lists nobody.
                page = (await anonymous.online_bots()).bots
                assert [bot.account.name for bot in page] == ["Night Owl"]
                (listed,) = page
                assert listed.account.account_id == owl.account.account_id
                assert listed.account.manifest is not None
                assert listed.account.manifest.max_series_length == 3
                assert [r.pool for r in listed.ratings] == ["partnership"]
                assert listed.ratings[0].matches == 1
                async with stream_open(SpadesClient(address, account_key=lark.key)):
                    # Longest online first.
                    assert await online_names(anonymous) == ["Night Owl", "Lark"]
                await until_online(anonymous, ["Night Owl"])
            # Its stream closed: no longer online.
            await until_online(anonymous, [])
        finally:
            await owl_client.close()
            await pat_client.close()


async def test_a_replica_that_stops_renewing_stops_counting_and_a_heartbeat_keeps_one(
    server: SpadesServer,
) -> None:
    """Two replicas' presence on one log: one (its clock ours) holds a stream open and renews,
    the other's rows were written and never renewed, as a killed replica leaves them."""
    clock = ManualClock(start=1_000.0)
    live = Presence(server.log, ttl=30, clock=clock)
    dead = Presence(server.log, ttl=30, clock=clock)
    await live.opened("live-bot")
    clock.advance(1)
    await dead.opened("dead-bot")
    assert [o.account_id for o in await live.online()] == ["live-bot", "dead-bot"]
    clock.advance(19)
    await live.renew()  # the heartbeat: the dead replica renews nothing
    clock.advance(15)
    # Past the dead replica's expiry (30 s after its last write), within the live one's.
    assert [o.account_id for o in await live.online()] == ["live-bot"]
    assert [o.account_id for o in await dead.online()] == ["live-bot"]
    # Two streams of one account on this replica: online until the last one closes, and
    # since the first opened.
    await live.opened("live-bot")
    await live.closed("live-bot")
    assert [(o.account_id, o.since) for o in await live.online()] == [("live-bot", 1_000.0)]
    await live.closed("live-bot")
    assert await live.online() == []


async def test_the_heartbeat_unlists_the_rows_a_killed_replica_left_and_a_slow_one_comes_back(
    server: SpadesServer,
) -> None:
    """Rows a killed replica left stop being listed at the next sweep (they would pile up with
    every kill), while a replica that was only slow lists itself again when it renews."""
    clock = ManualClock(start=1_000.0)
    live = Presence(server.log, ttl=30, clock=clock)
    killed = Presence(server.log, ttl=30, clock=clock)
    slow = Presence(server.log, ttl=30, clock=clock)
    await live.opened("live-bot")
    await killed.opened("killed-bot")
    await slow.opened("slow-bot")

    async def listed() -> list[str]:
        rows = await server.log.projection_rows("presence", listed_only=True, offset=0, limit=50)
        return sorted(row.key.split("@")[0] for row in rows)

    assert await live.sweep() == 0  # nothing has expired yet
    clock.advance(20)
    await live.renew()
    clock.advance(15)  # past the killed and the slow replicas' expiry, within the live one's
    assert await listed() == ["killed-bot", "live-bot", "slow-bot"]
    assert await live.sweep() == 2
    assert await listed() == ["live-bot"]
    assert [o.account_id for o in await live.online()] == ["live-bot"]
    await slow.renew()  # the slow replica's next write takes its row back
    assert await listed() == ["live-bot", "slow-bot"]
    assert [o.account_id for o in await live.online()] == ["live-bot", "slow-bot"]


async def test_the_heartbeat_renews_on_the_clock_it_is_given(server: SpadesServer) -> None:
    """The heartbeat sleeps on the presence's clock: each of its periods on a test's clock
    renews the rows, so a bot stays listed well past the rows' lifetime."""
    clock = ManualClock(start=1_000.0)
    presence = Presence(server.log, ttl=30, heartbeat=10, clock=clock)
    await presence.start()
    try:
        await presence.opened("kept-bot")
        for _ in range(6):  # 60 s of the clock: twice the rows' lifetime
            await clock.pass_time(10, HEARTBEAT)
        assert [o.account_id for o in await presence.online()] == ["kept-bot"]
    finally:
        await presence.stop()


async def test_the_heartbeat_deletes_rows_unlisted_past_the_grace_and_never_a_listed_one(
    server: SpadesServer,
) -> None:
    """Unlisted rows are deleted once unlisted for ``forget_after`` seconds (a killed replica
    would otherwise leave rows in the table for ever): a killed replica's, and a stream's that
    closed on the live replica; the live replica's listed row, renewed, never is."""
    clock = ManualClock(start=1_000.0)
    live = Presence(server.log, ttl=30, heartbeat=10, forget_after=600, clock=clock)
    killed = Presence(server.log, ttl=30, clock=clock)
    await live.opened("live-bot")
    await live.opened("closed-bot")
    await killed.opened("killed-bot")  # its replica writes no more (never started)
    await live.closed("closed-bot")  # unlisted at 1000
    await live.start()

    async def stored() -> list[str]:
        rows = await server.log.projection_rows("presence", listed_only=False, offset=0, limit=50)
        return sorted(row.key.split("@")[0] for row in rows)

    try:
        # Heartbeats every 10 s: the killed replica's row expires at 1030 and is unlisted by
        # that heartbeat; the closed stream's row goes at 1600, the killed replica's at 1630.
        for _ in range(59):
            await clock.pass_time(10, HEARTBEAT)
        assert clock.now() == 1_590.0
        assert await stored() == ["closed-bot", "killed-bot", "live-bot"]
        await clock.pass_time(10, HEARTBEAT)
        assert await stored() == ["killed-bot", "live-bot"]
        for _ in range(2):
            await clock.pass_time(10, HEARTBEAT)
        assert await stored() == ["killed-bot", "live-bot"]
        await clock.pass_time(10, HEARTBEAT)
        assert await stored() == ["live-bot"]
        for _ in range(60):  # well past the grace, the listed row stays
            await clock.pass_time(10, HEARTBEAT)
        assert await stored() == ["live-bot"]
        assert [o.account_id for o in await live.online()] == ["live-bot"]
    finally:
        await live.stop()
