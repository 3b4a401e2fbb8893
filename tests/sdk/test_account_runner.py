"""AccountRunner across a server restart (it reconnects, resumes after its last sequence and
answers a challenge made meanwhile) and beside a newer runner for the same account (it stops:
one stream per account)."""

from __future__ import annotations

import asyncio

import pytest

from spades.bot import Backoff
from spades.bot.account import AccountRunner, Superseded, accept_all
from spades.client import SpadesClient
from spades.engine import Rules
from spades_bots.random_bot import RandomBot
from spades_server.app.server import SpadesServer
from tests.support.backends import LogStorage, Storages
from tests.support.servers import new_server

pytestmark = pytest.mark.asyncio


def server_on(where: LogStorage, port: int = 0) -> SpadesServer:
    """A server (not started) on the test's log, on ``port`` (0: any free one)."""
    return new_server(where, listen=f"127.0.0.1:{port}", shutdown_grace=0.2)


async def until(condition: object, seconds: float = 30) -> None:
    async with asyncio.timeout(seconds):
        while not condition():  # type: ignore[operator]
            await asyncio.sleep(0.1)


async def test_the_runner_reconnects_after_a_restart_and_answers_what_came_meanwhile(
    storage: Storages,
) -> None:
    where = storage()
    server = server_on(where)
    port = await server.start()
    address = f"127.0.0.1:{port}"
    try:
        async with SpadesClient(address) as anonymous:
            host = await anonymous.create_account("Restart Host", kind="person")
            guest = await anonymous.create_account("Restart Guest", kind="bot")
        async with (
            SpadesClient(address, account_key=guest.key) as guest_client,
            SpadesClient(address, account_key=host.key) as host_client,
        ):
            runner = AccountRunner(
                guest_client, RandomBot, policy=accept_all, backoff=Backoff(initial=0.1)
            )
            running = asyncio.create_task(runner.run())
            await until(lambda: runner.sequence >= 2)  # created, key issued: it follows
            seen = runner.sequence
            await server.stop()
            server = server_on(where, port)
            await server.start()
            made = await host_client.create_challenge(
                [guest.account.account_id], Rules(max_hands=1), expiry_seconds=60
            )
            await until(lambda: made.challenge_id in runner.stats.accepted)
            assert runner.stats.reconnects >= 1 and runner.sequence > seen
            # The host plays its seats too, so the guest's games end (it finishes them on stop).
            hosting = AccountRunner(host_client, RandomBot)
            host_running = asyncio.create_task(hosting.run())
            await until(lambda: len(runner.stats.outcomes) == 2, 60)
            for each in (runner, hosting):
                each.stop()
            await asyncio.gather(running, host_running)
            assert (await host_client.get_challenge(made.challenge_id)).state == "accepted"
    finally:
        await server.stop()


async def test_a_newer_runner_for_the_account_takes_over(storage: Storages) -> None:
    server = server_on(storage())
    port = await server.start()
    address = f"127.0.0.1:{port}"
    try:
        async with SpadesClient(address) as anonymous:
            made = await anonymous.create_account("Twice Run", kind="bot")
        async with (
            SpadesClient(address, account_key=made.key) as first_client,
            SpadesClient(address, account_key=made.key) as second_client,
        ):
            first = AccountRunner(first_client, RandomBot)
            older = asyncio.create_task(first.run())
            await until(lambda: first.sequence >= 2)
            second = AccountRunner(second_client, RandomBot)
            newer = asyncio.create_task(second.run())
            with pytest.raises(Superseded):
                await asyncio.wait_for(older, 30)
            await until(lambda: second.sequence >= 2)
            second.stop()
            await newer
    finally:
        await server.stop()


async def test_a_stopped_runner_gives_up_its_seat_in_the_rated_queue(storage: Storages) -> None:
    server = server_on(storage())
    port = await server.start()
    address = f"127.0.0.1:{port}"
    try:
        async with SpadesClient(address) as anonymous:
            made = await anonymous.create_account("Queued Bot", kind="bot")
        async with SpadesClient(address, account_key=made.key) as client:
            runner = AccountRunner(client, RandomBot)
            running = asyncio.create_task(runner.run())
            queueing = asyncio.create_task(runner.queue_rated("Queued Bot"))
            # Seated (the stream's table_assigned): the runner waits there for players.
            await until(lambda: runner.playing == 1)
            (table_id,) = runner.tables
            runner.stop()
            await asyncio.wait_for(asyncio.gather(running, queueing), 30)
            table = await client.get_table(table_id)
            assert table.status == "waiting" and not any(s.occupied for s in table.seats)
    finally:
        await server.stop()
