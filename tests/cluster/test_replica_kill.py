"""A replica SIGKILLed while bots play through the load balancer, with the history check.

``TABLES`` tables of four random bots play through haproxy (tests/support/cluster_tables.py), which
spreads their calls over both replicas. Once every table has accepted ``BEFORE_KILL`` actions,
replica spades-1 is SIGKILLed: its streams break, haproxy takes it out, the bots reconnect
through haproxy to spades-2, resume from their last sequence and resend what was never
answered. Once every table has accepted an action since the kill, spades-1 is started again and
every match is played to its end. Then tests/support/history.py reads the log in PostgreSQL
directly and checks every table's history against what the clients sent, were acknowledged and
were delivered.

Printed (not asserted: no timed assertions): the seconds from the kill to each table's next
accepted action, and to the next accepted action of each seat whose stream broke, p50 and max.
"""

from __future__ import annotations

import asyncio
import signal
import statistics
import time

import pytest
import spades_cluster

from spades.engine import Rules
from tests.support.cluster_tables import Play

TABLES = 6
RULES = Rules(max_hands=2)
BEFORE_KILL = 12
THINK = 0.02


@pytest.mark.asyncio
@pytest.mark.timeout(360)
async def test_a_replica_sigkilled_under_play_loses_and_doubles_nothing(
    running_cluster: spades_cluster.Cluster,
) -> None:
    addresses = running_cluster.addresses()
    victim = addresses["replicas"][0]["name"]
    try:
        async with Play(addresses["grpc"], TABLES, RULES, THINK) as play:
            await play.until_each_accepted(BEFORE_KILL)
            assert not play.ended(), "a match ended before the kill"
            status = await asyncio.to_thread(running_cluster.kill, victim, signal.SIGKILL)
            assert status == -signal.SIGKILL
            killed_at = time.monotonic()
            try:
                await play.until_each_accepted_after(killed_at)
            finally:
                await asyncio.to_thread(running_cluster.restart, victim)
            recovery = play.recovery(killed_at)
            await play.finish()
            # The seats whose stream the kill broke (they opened another one since).
            broken = [
                next(a.received_at for a in journal.accepted if a.received_at > killed_at)
                - killed_at
                for table in play.tables
                for journal in table.client.journals.values()
                if any(opened > killed_at for opened in journal.streams_opened)
                and any(a.received_at > killed_at for a in journal.accepted)
            ]
            await play.check(running_cluster.dsn)
    finally:
        if not running_cluster.components[victim].alive():
            await asyncio.to_thread(running_cluster.restart, victim)
    print(
        f"\n{victim} SIGKILLed under {TABLES} tables through haproxy: {play.reconnects()}"
        f" reconnects, {play.resent()} actions resent; kill -> next accepted action per table:"
        f" {recovery}"
    )
    assert play.reconnects() > 0 and broken, "the kill must have broken some streams"
    print(
        f"for the {len(broken)} seats whose stream broke, kill -> their own next accepted"
        f" action: p50 {statistics.median(broken):.2f} s, max {max(broken):.2f} s"
    )
