"""The cluster suites' fixtures: one cluster for the whole package, the topology of
`make cluster` started by the same module (tools/spades_cluster.py) in a temporary folder, with
Prometheus's and Alertmanager's timings shortened (never the rules' expressions) and alerts
delivered to a webhook this process listens on.

Every test leaves the cluster as it found it (a component it kills, it restarts), so the tests
may run in any order on one cluster; starting it takes about 20 s on a loaded machine.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import spades_cluster

from tests.cluster.webhook import Notifications, webhook_receiver

#: The shortened timings: a scrape and a rule evaluation every second, every alert's ``for:``
#: 3 s, Alertmanager's group wait 1 s. SpadesReplicaDown then fires about 5 s after a kill.
SCRAPE_INTERVAL = "1s"
ALERT_FOR = "3s"
GROUP_WAIT = "1s"
#: Grafana's $__rate_interval for a 1 s scrape is 4 s; a longer window keeps rates non-empty
#: on a loaded machine whose scrapes come late.
RATE_INTERVAL = "15s"
NEEDED = ("nats-server", "haproxy", "prometheus", "promtool", "prometheus-alertmanager")


def missing_tools() -> list[str]:
    missing = [name for name in NEEDED if not shutil.which(name, path="/usr/sbin:/usr/bin:/bin")]
    if not list(Path("/usr/lib/postgresql").glob("*/bin/initdb")):
        missing.append("postgresql")
    return missing


def require_cluster_tools() -> None:
    """Go on when the cluster's programs are installed; else skip, saying how to install them
    (a failure under CI, where make test installs them: make cluster-tools)."""
    missing = missing_tools()
    if missing:
        pytest.skip(f"missing {', '.join(missing)}: make cluster-tools installs them (as root)")


@pytest.fixture(scope="package")
def alerts() -> Iterator[tuple[str, Notifications]]:
    with webhook_receiver() as receiver:
        yield receiver


@pytest.fixture(scope="package")
def running_cluster(
    tmp_path_factory: pytest.TempPathFactory, alerts: tuple[str, Notifications]
) -> Iterator[spades_cluster.Cluster]:
    require_cluster_tools()
    url, _ = alerts
    settings = spades_cluster.Settings(
        folder=tmp_path_factory.mktemp("cluster"),
        scrape_interval=SCRAPE_INTERVAL,
        evaluation_interval=SCRAPE_INTERVAL,
        alert_for=ALERT_FOR,
        alert_group_wait=GROUP_WAIT,
        alert_webhook=url,
    )
    with spades_cluster.running(settings) as started:
        yield started
