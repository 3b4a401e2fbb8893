"""SpadesReplicaDown for real: a replica SIGKILLed, Prometheus (scraping it every second) fires
the rule from deploy/prometheus/alerts.yml (its ``for:`` shortened to 3 s, its expression as
shipped), Alertmanager delivers it to the test's webhook, and once the replica is started again
the alert resolves and Alertmanager says so."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Callable

import pytest
import spades_cluster

from tests.cluster.prometheus import query
from tests.cluster.webhook import Alert, Notifications

#: Bounds, not figures: with 1 s scrapes and evaluations, a 3 s ``for:`` and a 1 s group wait
#: the alert arrived within about 6 s of the kill in the runs on the loaded 2-core machine.
FIRE_TIMEOUT = 90.0
RESOLVE_TIMEOUT = 90.0


def replica_down(instance: str, status: str) -> Callable[[Alert], bool]:
    def matches(alert: Alert) -> bool:
        labels = alert["labels"]
        return bool(
            alert["status"] == status
            and labels.get("alertname") == "SpadesReplicaDown"
            and labels.get("instance") == instance
            and labels.get("job") == "spades-server"
        )

    return matches


async def all_up(prometheus: str, replicas: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        up = await asyncio.to_thread(query, prometheus, 'up{job="spades-server"} == 1')
        if len(up) == replicas:
            return
        assert time.monotonic() < deadline, f"not every replica is up in Prometheus: {up}"
        await asyncio.sleep(0.5)


@pytest.mark.asyncio
@pytest.mark.timeout(300)
async def test_a_killed_replica_fires_replica_down_and_it_resolves_on_restart(
    running_cluster: spades_cluster.Cluster, alerts: tuple[str, Notifications]
) -> None:
    _, notifications = alerts
    addresses = running_cluster.addresses()
    victim = addresses["replicas"][1]
    instance = victim["metrics"].removeprefix("http://").removesuffix("/metrics")
    await all_up(addresses["prometheus"], len(addresses["replicas"]))
    before = notifications.count()
    try:
        status = await asyncio.to_thread(running_cluster.kill, victim["name"], signal.SIGKILL)
        assert status == -signal.SIGKILL
        killed_at = time.monotonic()
        fired = await asyncio.to_thread(
            notifications.wait_for,
            replica_down(instance, "firing"),
            FIRE_TIMEOUT,
            f"SpadesReplicaDown firing for {instance}",
            before,
        )
        fired_after = time.monotonic() - killed_at
        assert fired["labels"]["severity"] == "critical"
        assert instance in fired["annotations"]["summary"]
        restarting = notifications.count()
        restarted_at = time.monotonic()  # its metrics port answers before its gRPC is SERVING
        await asyncio.to_thread(running_cluster.restart, victim["name"])
        await asyncio.to_thread(
            notifications.wait_for,
            replica_down(instance, "resolved"),
            RESOLVE_TIMEOUT,
            f"SpadesReplicaDown resolved for {instance}",
            restarting,
        )
        resolved_after = time.monotonic() - restarted_at
    finally:
        if not running_cluster.components[victim["name"]].alive():
            await asyncio.to_thread(running_cluster.restart, victim["name"])
    print(
        f"\nSpadesReplicaDown delivered {fired_after:.1f} s after the SIGKILL,"
        f" resolved {resolved_after:.1f} s after the restart began"
    )
    # The other replica never went down.
    other = addresses["replicas"][0]["metrics"].removeprefix("http://").removesuffix("/metrics")
    assert not [
        alert for alert in notifications.alerts[before:] if replica_down(other, "firing")(alert)
    ]
