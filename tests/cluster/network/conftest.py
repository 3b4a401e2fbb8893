"""The network scenarios' cluster: the topology of `make cluster` with replica spades-1 in a
network namespace of its own (tests/cluster/netns.py), joined to the host by a link the tests
cut and slow. PostgreSQL and NATS listen at the host's end of the link (PostgreSQL on the
loopback address too), where every replica reaches them; haproxy and Prometheus reach spades-1
through the link. Timings shortened as for the rest of the cluster suite (tests/cluster's
conftest), never the rules' expressions.

A cluster of its own (about 20 s to start): the other scenarios' cluster has no link to break.
The namespace and the pair are removed however the tests end, and named uniquely per run.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import spades_cluster

from tests.cluster.conftest import ALERT_FOR, GROUP_WAIT, SCRAPE_INTERVAL, require_cluster_tools
from tests.cluster.netns import Link, why_not_possible
from tests.cluster.webhook import Notifications
from tests.support.backends import in_ci

#: The replica the tests cut off and slow down.
APART = "spades-1"


@pytest.fixture(scope="package")
def link() -> Iterator[Link]:
    reason = why_not_possible()
    if reason is not None:
        if in_ci():
            pytest.fail(reason)
        pytest.skip(reason)
    made = Link.make()
    try:
        yield made
    finally:
        made.remove()


@pytest.fixture(scope="package")
def cluster_apart(
    tmp_path_factory: pytest.TempPathFactory, alerts: tuple[str, Notifications], link: Link
) -> Iterator[spades_cluster.Cluster]:
    require_cluster_tools()
    url, _ = alerts
    settings = spades_cluster.Settings(
        folder=tmp_path_factory.mktemp("cluster-apart"),
        scrape_interval=SCRAPE_INTERVAL,
        evaluation_interval=SCRAPE_INTERVAL,
        alert_for=ALERT_FOR,
        alert_group_wait=GROUP_WAIT,
        alert_webhook=url,
        placements={APART: spades_cluster.Placement(link.namespace, link.namespace_address)},
        services_host=link.host_address,
    )
    with spades_cluster.running(settings) as started:
        yield started
