"""Cluster benchmark: the topology of `make cluster` with 1, 2 and 3 replicas behind haproxy.

Run with ``make bench-cluster`` (or ``python tests/benchmarks/bench_cluster.py --replicas 1,2,3
--tables 16 --seconds 20``). Needs the cluster's Debian packages (``make cluster-tools``).

For each replica count, a fresh cluster (``tools/spades_cluster.py``: a private PostgreSQL and
NATS, the replicas, haproxy from ``deploy/haproxy/haproxy.cfg`` with a server line a replica,
Prometheus and Alertmanager) in a temporary folder, and then:

* **throughput**: one client process (``bench_server``'s: four random-playing seats a table,
  each answering its prompts at once, batched streams) plays ``--tables`` tables *through the
  balancer* for ``--seconds`` seconds; haproxy spreads each table's calls over the replicas.
  Printed: accepted actions per second (results that arrived inside the window), the latency
  from an action written to its event seen on the acting seat's stream (p50, p99), and the CPU
  time each kind of process spent in the window (``/proc/PID/stat``: utime + stime), per
  accepted action: the replicas together, PostgreSQL (the postmaster and its backends),
  haproxy, NATS, and the client. And the whole machine's busy CPU over the window (it is shared).
* ``--affinity``: the same with haproxy sending every Play call of one table to one replica (a
  consistent hash of the seat token's table id, ``TABLE_ID.secret`` in the ``spades-seat-token``
  metadata; calls without a token, the lobby's, all hash alike) instead of the shipped
  ``balance leastconn``, which spreads a table's seats over the replicas. Only the benchmark's
  copy of haproxy.cfg changes.
* **failover** (with 2 or more replicas): ``--failover-tables`` tables of thinking random bots
  (the cluster suite's scenario, ``tests/support/cluster_tables.py``, the SDK's runner) play through
  haproxy; once each has accepted 12 actions, spades-1 is SIGKILLed, and the seconds from the
  kill to each table's next accepted action, and to the next accepted action of each seat whose
  stream the kill broke, are printed (p50, max).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import multiprocessing
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import spades_cluster  # noqa: E402

from spades.engine import Rules  # noqa: E402
from tests.benchmarks.bench_server import (  # noqa: E402
    CLOCK_TICK,
    Stats,
    client_process,
    cpu_seconds,
    machine_busy_seconds,
)
from tests.support.cluster_tables import Play  # noqa: E402

FAILOVER_RULES = Rules(max_hands=3)
BEFORE_KILL = 12
SHIPPED_BALANCE = "balance leastconn"
#: Table affinity: a table's Play calls hash (consistently) on its id, the seat token's prefix.
AFFINITY_BALANCE = "balance hash req.hdr(spades-seat-token),field(1,.)\n    hash-type consistent"


class AffinityCluster(spades_cluster.Cluster):
    """The cluster with haproxy's gRPC backend balancing on the table id (``--affinity``)."""

    def _haproxy_config(self) -> Path:
        shipped = super()._haproxy_config().read_text()
        if shipped.count(SHIPPED_BALANCE) != 1:
            raise spades_cluster.ClusterError(f"haproxy.cfg: not one {SHIPPED_BALANCE!r}")
        path = self.folder / "haproxy-affinity.cfg"
        path.write_text(shipped.replace(SHIPPED_BALANCE, AFFINITY_BALANCE))
        return path


def process_group_cpu(root: int) -> float:
    """CPU seconds of ``root`` and its live children, plus the children it reaped (the
    postmaster and its backends)."""
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, parent = int(entry.name), int(fields[1])
        if pid == root:
            total += sum(int(value) for value in fields[11:15]) / CLOCK_TICK
        elif parent == root:
            total += (int(fields[11]) + int(fields[12])) / CLOCK_TICK
    return total


def cpu_by_kind(cluster: spades_cluster.Cluster) -> dict[str, float]:
    components = cluster.components
    replicas = [c for name, c in components.items() if name.startswith("spades-")]
    return {
        "replicas": sum(cpu_seconds(c.pid) for c in replicas),
        "postgres": process_group_cpu(components["postgres"].pid),
        "haproxy": cpu_seconds(components["balancer"].pid),
        "nats": cpu_seconds(components["nats"].pid),
    }


def throughput(cluster: spades_cluster.Cluster, tables: int, seconds: float) -> dict[str, Any]:
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(2)
    results: multiprocessing.Queue[Stats] = context.Queue()
    worker = context.Process(
        target=client_process,
        args=([cluster.addresses()["grpc"]], False, list(range(tables)), seconds, barrier, results),
        daemon=True,
    )
    worker.start()
    barrier.wait(timeout=300)
    before = cpu_by_kind(cluster)
    machine = machine_busy_seconds()
    begun = time.perf_counter()
    time.sleep(seconds)
    after = cpu_by_kind(cluster)
    machine = machine_busy_seconds() - machine
    elapsed = time.perf_counter() - begun
    stats = results.get(timeout=120)
    worker.join(30)
    cpu = {kind: after[kind] - before[kind] for kind in before}
    cpu["client"] = stats.cpu_seconds
    latencies = sorted(stats.latencies)
    return {
        "actions": stats.actions,
        "per_second": stats.actions / elapsed,
        "refused": stats.refused,
        "p50_ms": 1000 * statistics.median(latencies) if latencies else float("nan"),
        "p99_ms": 1000 * latencies[int(0.99 * (len(latencies) - 1))] if latencies else float("nan"),
        "cpu_ms_per_action": {
            kind: 1000 * value / max(1, stats.actions) for kind, value in cpu.items()
        },
        "cpu_cores": {kind: value / elapsed for kind, value in cpu.items()},
        "machine_cores": machine / elapsed,
    }


async def failover(cluster: spades_cluster.Cluster, tables: int, think: float) -> dict[str, Any]:
    """spades-1 SIGKILLed under ``tables`` tables through haproxy: kill → next accepted action."""
    async with Play(cluster.addresses()["grpc"], tables, FAILOVER_RULES, think) as play:
        await play.until_each_accepted(BEFORE_KILL)
        await asyncio.to_thread(cluster.kill, "spades-1", signal.SIGKILL)
        killed_at = time.monotonic()
        await play.until_every_seat_accepted_after(killed_at)
        per_table = [
            at - killed_at
            for table in play.tables
            if (at := table.first_accepted_after(killed_at)) is not None
        ]
        broken = [
            min(a.received_at for a in journal.accepted if a.received_at > killed_at) - killed_at
            for table in play.tables
            for journal in table.client.journals.values()
            if any(opened > killed_at for opened in journal.streams_opened)
        ]
    return {"tables": per_table, "broken_seats": broken}


def spread(values: list[float]) -> str:
    if not values:
        return "none"
    return f"p50 {statistics.median(values):.2f} s, max {max(values):.2f} s (n={len(values)})"


def run(replicas: int, args: argparse.Namespace, folder: Path) -> None:
    settings = spades_cluster.Settings(folder=folder / f"replicas-{replicas}", replicas=replicas)
    cluster = (AffinityCluster if args.affinity else spades_cluster.Cluster)(settings)
    cluster.start()
    try:
        figures = throughput(cluster, args.tables, args.seconds)
        cpu = figures["cpu_ms_per_action"]
        cores = figures["cpu_cores"]
        print(
            f"{replicas} replica(s){' (table affinity)' if args.affinity else ''},"
            f" {args.tables} tables through haproxy for {args.seconds:.0f} s:"
            f" {figures['per_second']:.0f} actions/s ({figures['actions']} accepted,"
            f" {figures['refused']} refused); action -> its event p50 {figures['p50_ms']:.1f} ms,"
            f" p99 {figures['p99_ms']:.1f} ms",
            flush=True,
        )
        print(
            "  CPU ms per accepted action: "
            + ", ".join(f"{kind} {value:.2f}" for kind, value in cpu.items())
            + "; cores busy: "
            + ", ".join(f"{kind} {value:.2f}" for kind, value in cores.items())
            + f"; the whole machine {figures['machine_cores']:.2f} of 2",
            flush=True,
        )
        if replicas >= 2 and args.failover_tables:
            result = asyncio.run(failover(cluster, args.failover_tables, args.think))
            print(
                f"  failover, spades-1 SIGKILLed under {args.failover_tables} tables:"
                f" kill -> next accepted action per table {spread(result['tables'])};"
                f" per seat whose stream broke {spread(result['broken_seats'])}",
                flush=True,
            )
    finally:
        cluster.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--replicas", default="1,2,3", help="replica counts, e.g. 1,2,3")
    parser.add_argument("--tables", type=int, default=16, help="tables played at once")
    parser.add_argument("--seconds", type=float, default=20.0, help="the measured window")
    parser.add_argument("--failover-tables", type=int, default=6, help="0: no failover run")
    parser.add_argument("--think", type=float, default=0.02, help="failover bots' think time")
    parser.add_argument(
        "--affinity", action="store_true", help="haproxy: a table's Play calls to one replica"
    )
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # the runner's "connection lost" lines during failover
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as folder:
        for replicas in (int(n) for n in args.replicas.split(",")):
            run(replicas, args, Path(folder))


if __name__ == "__main__":
    main()
