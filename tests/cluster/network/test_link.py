"""A replica's link to the rest of the cluster slowed, then cut, under play, with the history check.

Tables of four random bots play through haproxy, which spreads their calls over both replicas;
spades-1 runs in its own network namespace (tests/cluster/network/conftest.py). The two
scenarios run in this order, on one cluster: the slow one first, since the cut's ten-second
stalls would themselves push the log's append latency up and could fire the alert the slow one
must be the cause of (the rule's window is five minutes).

**Slowed.** What spades-1 sends PostgreSQL goes through a narrow link (tests/cluster/netns.py:
this kernel has no netem, so a tc htb rate limit rather than a netem delay): every append it
makes takes longer. Actions slow down, nothing breaks: the real Prometheus (scraping every
second, the rule's ``for:`` shortened to 3 s, its expression as shipped) fires
``SpadesLogAppendSlow``, the link is made fast again and every match finishes.

**Cut.** Once every table has accepted ``BEFORE`` actions (and haproxy holds calls to
spades-1), the host's end of spades-1's link goes down: every packet to and from it is dropped,
no reset, no refusal. haproxy's checks then fail, it marks spades-1 down and ends the calls it
held to it (deploy/haproxy/haproxy.cfg: on-marked-down shutdown-sessions); their bots reconnect
through haproxy to spades-2 and resume, resending what was never answered. The link stays down
until every seat of every table has had an action accepted since the cut (a seat whose calls
went to spades-1 can only have moved), and at least ten seconds; then it comes back, spades-1
(the same process) is taken back by haproxy, and every match is played to its end.

After each, tests/support/history.py reads the log in PostgreSQL and holds every client's record
to it: every acknowledged action is in the log exactly once (so the replica apart acknowledged
nothing it could not commit: an action it was appending when cut off, committed or not, was
answered from the log or not at all, and its resend through spades-2 with the same action id
applied nothing twice), and every stream's deliveries are gap-free and in order.

Printed (not asserted: no timed assertions): spades-1's append p99 while slowed, the actions
accepted per second before and while slowed; the seconds from the cut to each seat's
next accepted action, p50 and max.
"""

from __future__ import annotations

import asyncio
import statistics
import time

import pytest
import spades_cluster

from spades.engine import Rules
from tests.cluster.netns import Link
from tests.cluster.network.balancer import sessions, until_up
from tests.cluster.network.conftest import APART
from tests.cluster.prometheus import query
from tests.support.cluster_tables import Play

TABLES = 4
RULES = Rules(max_hands=2)
BEFORE = 12
THINK = 0.02
#: What spades-1 may send PostgreSQL while slowed: an append's few hundred bytes take about a
#: tenth of a second on their own, more when several queue.
RATE = "32kbit"
#: The link stays down at least this long (and until every seat moved on).
CUT = 10.0
#: A bound, not a figure: the alert fired about 10 s after the slowdown in the runs here.
FIRE_TIMEOUT = 120.0
SLOW_ALERT = 'ALERTS{alertname="SpadesLogAppendSlow", alertstate="firing"}'


def append_p99(cluster: spades_cluster.Cluster, replica: str, window: str) -> float | None:
    """``replica``'s own p99 append latency over ``window``, as Prometheus has it."""
    instance = cluster.address(f"{replica}-metrics")
    rate = f'rate(spades_log_append_seconds_bucket{{instance="{instance}"}}[{window}])'
    result = query(
        cluster.addresses()["prometheus"], f"histogram_quantile(0.99, sum by (le) ({rate}))"
    )
    return float(result[0]["value"][1]) if result else None


@pytest.mark.asyncio
@pytest.mark.timeout(360)
async def test_a_slow_link_slows_actions_breaks_nothing_and_fires_log_append_slow(
    cluster_apart: spades_cluster.Cluster, link: Link
) -> None:
    prometheus = cluster_apart.addresses()["prometheus"]
    assert not await asyncio.to_thread(query, prometheus, SLOW_ALERT), "firing before the test"
    async with Play(cluster_apart.addresses()["grpc"], TABLES, RULES, THINK) as play:
        started = time.monotonic()
        await play.until_each_accepted(BEFORE)
        assert not play.ended(), "a match ended before the slowdown"
        link.slow(cluster_apart.ports["postgres"], RATE)
        slowed_at = time.monotonic()
        try:
            deadline = slowed_at + FIRE_TIMEOUT
            while not await asyncio.to_thread(query, prometheus, SLOW_ALERT):
                assert time.monotonic() < deadline, "SpadesLogAppendSlow never fired"
                await asyncio.sleep(0.5)
            fired_after = time.monotonic() - slowed_at
            window = f"{max(5, round(fired_after))}s"
            slowed = await asyncio.to_thread(append_p99, cluster_apart, APART, window)
        finally:
            link.unslow()
        fast_at = time.monotonic()
        rate_before = play.accepted_between(started, slowed_at) / (slowed_at - started)
        rate_slowed = play.accepted_between(slowed_at, fast_at) / (fast_at - slowed_at)
        await play.finish()
        await play.check(cluster_apart.dsn)
    print(
        f"\n{APART}'s link to PostgreSQL limited to {RATE} under {TABLES} tables:"
        f" SpadesLogAppendSlow fired {fired_after:.1f} s later; {APART}'s append p99 while"
        f" slowed {slowed} s; {rate_before:.0f} actions/s accepted"
        f" before, {rate_slowed:.0f} while slowed; {play.reconnects()} reconnects"
    )


@pytest.mark.asyncio
@pytest.mark.timeout(360)
async def test_a_replica_cut_off_acknowledges_nothing_it_could_not_commit(
    cluster_apart: spades_cluster.Cluster, link: Link
) -> None:
    addresses = cluster_apart.addresses()
    pid = next(r["pid"] for r in addresses["replicas"] if r["name"] == APART)
    async with Play(addresses["grpc"], TABLES, RULES, THINK) as play:
        await play.until_each_accepted(BEFORE)
        assert not play.ended(), "a match ended before the cut"
        held = await asyncio.to_thread(sessions, addresses, APART)
        assert held > 0, f"haproxy holds no call to {APART}: nothing to cut off"
        link.cut()
        cut_at = time.monotonic()
        try:
            # Every seat acts again while spades-1 is unreachable: its clients moved.
            await play.until_every_seat_accepted_after(cut_at)
            moved = [at - cut_at for at in play.seats_accepted_after(cut_at)]
            # The outage lasts its ten seconds, as a partition would, whatever the bots do.
            await asyncio.sleep(max(0.0, CUT - (time.monotonic() - cut_at)))
            accepted_while_cut = play.accepted_between(cut_at, time.monotonic())
        finally:
            link.heal()
        healed_at = time.monotonic()
        await until_up(cluster_apart, APART)
        taken_back = time.monotonic() - healed_at
        await play.finish()
        await play.check(cluster_apart.dsn)
    after = next(r for r in cluster_apart.addresses()["replicas"] if r["name"] == APART)
    assert after["pid"] == pid, f"{APART} did not live through the cut"
    assert play.reconnects() > 0, "the cut must have ended some streams"
    print(
        f"\n{APART} cut off for {healed_at - cut_at:.1f} s under {TABLES} tables through"
        f" haproxy ({held:.0f} calls held to it): cut -> each seat's next accepted action:"
        f" p50 {statistics.median(moved):.2f} s, max {max(moved):.2f} s;"
        f" {accepted_while_cut} actions accepted while it was cut off; haproxy took it back"
        f" {taken_back:.1f} s after the link came back; {play.reconnects()} reconnects,"
        f" {play.resent()} actions resent"
    )
