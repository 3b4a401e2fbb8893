"""A replica SIGKILLed while bots play through the load balancer, with the history check.

``TABLES`` tables of four random bots (the SDK's runner; one client, so one HTTP/2 connection to
haproxy, per table) play through haproxy, which spreads their calls over both replicas. Once
every table has accepted ``BEFORE_KILL`` actions, replica spades-1 is SIGKILLed: its streams
break, haproxy takes it out, the bots reconnect through haproxy to spades-2, resume from their
last sequence and resend what was never answered. Once every table has accepted an action since
the kill, spades-1 is started again, and every match is played to its end. Then
tests/cluster/history.py reads the log in PostgreSQL directly and checks every table's history
against what the clients sent, were acknowledged and were delivered.

Printed (not asserted: no timed assertions): the seconds from the kill to each table's next
accepted action, p50 and max.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import statistics
import time

import pytest
import spades_cluster

from spades.bot import Backoff, BotView, MatchOutcome, play_match
from spades.client.client import DEFAULT_CHANNEL_OPTIONS
from spades.engine import Card, Rules
from spades_bots.random_bot import RandomBot
from tests.cluster.history import HistoryClient, check_history, read_tables
from tests.faults.common import assert_log_is_truth, eventually, seat_four, served_snapshots

TABLES = 6
RULES = Rules(max_hands=2)
BEFORE_KILL = 12
THINK = 0.02
FINISH_TIMEOUT = 150.0
#: Quick reconnection (the SDK's defaults wait up to 5 and 10 s).
CHANNEL_OPTIONS = tuple(
    {
        **dict(DEFAULT_CHANNEL_OPTIONS),
        "grpc.initial_reconnect_backoff_ms": 50,
        "grpc.min_reconnect_backoff_ms": 50,
        "grpc.max_reconnect_backoff_ms": 300,
    }.items()
)
BACKOFF = Backoff(initial=0.05, maximum=0.5, give_up_after=60.0)


class Thinking(RandomBot):
    async def bid(self, view: BotView) -> int:  # type: ignore[override]
        await asyncio.sleep(THINK)
        return super().bid(view)

    async def play(self, view: BotView) -> Card:  # type: ignore[override]
        await asyncio.sleep(THINK)
        return super().play(view)


def accepted_count(client: HistoryClient) -> int:
    return sum(len(journal.accepted) for journal in client.journals.values())


def first_accepted_after(client: HistoryClient, moment: float) -> float | None:
    times = [
        accepted.received_at
        for journal in client.journals.values()
        for accepted in journal.accepted
        if accepted.received_at > moment
    ]
    return min(times) if times else None


@pytest.mark.asyncio
@pytest.mark.timeout(360)
async def test_a_replica_sigkilled_under_play_loses_and_doubles_nothing(
    running_cluster: spades_cluster.Cluster,
) -> None:
    addresses = running_cluster.addresses()
    victim = addresses["replicas"][0]["name"]
    clients = [HistoryClient(addresses["grpc"], CHANNEL_OPTIONS) for _ in range(TABLES)]
    tables: list[tuple[str, list[str]]] = []
    tasks: list[list[asyncio.Future[MatchOutcome]]] = []
    try:
        for number, client in enumerate(clients):
            table_id, tokens = await seat_four(client, RULES, f"replica kill {number}")
            tables.append((table_id, tokens))
            tasks.append(
                [
                    asyncio.ensure_future(
                        play_match(
                            client,
                            Thinking(number * 4 + seat),
                            token,
                            table_id=table_id,
                            backoff=BACKOFF,
                        )
                    )
                    for seat, token in enumerate(tokens)
                ]
            )
        await eventually(
            lambda: all(accepted_count(client) >= BEFORE_KILL for client in clients),
            60,
            "every table accepting actions before the kill",
        )
        assert not any(task.done() for each in tasks for task in each), "a match ended early"
        status = await asyncio.to_thread(running_cluster.kill, victim, signal.SIGKILL)
        assert status == -signal.SIGKILL
        killed_at = time.monotonic()
        try:
            await eventually(
                lambda: all(first_accepted_after(c, killed_at) is not None for c in clients),
                60,
                "every table accepting actions again after the kill",
            )
        finally:
            await asyncio.to_thread(running_cluster.restart, victim)
        recovery = [
            moment - killed_at
            for client in clients
            if (moment := first_accepted_after(client, killed_at)) is not None
        ]
        # The seats whose stream the kill broke (they opened another one since).
        broken = [
            next(a.received_at for a in journal.accepted if a.received_at > killed_at) - killed_at
            for client in clients
            for journal in client.journals.values()
            if any(opened > killed_at for opened in journal.streams_opened)
            and any(a.received_at > killed_at for a in journal.accepted)
        ]
        everything = asyncio.gather(*(task for each in tasks for task in each))
        await asyncio.wait_for(everything, FINISH_TIMEOUT)
        outcomes = [[task.result() for task in each] for each in tasks]
        snapshots = await served_snapshots(clients[0], [table_id for table_id, _ in tables])
    finally:
        for each in tasks:
            for task in each:
                task.cancel()
        for each in tasks:
            for task in each:
                with contextlib.suppress(BaseException):
                    await task
        for client in clients:
            await client.close()
        if not running_cluster.components[victim].alive():
            await asyncio.to_thread(running_cluster.restart, victim)

    reconnects = sum(outcome.reconnects for each in outcomes for outcome in each)
    resent = sum(outcome.resent for each in outcomes for outcome in each)
    print(
        f"\n{victim} SIGKILLed under {TABLES} tables through haproxy: {reconnects} reconnects,"
        f" {resent} actions resent; kill -> next accepted action per table:"
        f" p50 {statistics.median(recovery):.2f} s, max {max(recovery):.2f} s"
    )
    assert reconnects > 0 and broken, "the kill must have broken some streams"
    print(
        f"for the {len(broken)} seats whose stream broke, kill -> their own next accepted"
        f" action: p50 {statistics.median(broken):.2f} s, max {max(broken):.2f} s"
    )
    streams = await read_tables(running_cluster.dsn, [table_id for table_id, _ in tables])
    for (table_id, tokens), client, table_outcomes in zip(tables, clients, outcomes, strict=True):
        assert all(outcome.end is not None for outcome in table_outcomes), table_id
        check_history(streams[table_id], client, dict(zip(tokens, table_outcomes, strict=True)))
    assert_log_is_truth(snapshots, streams)
