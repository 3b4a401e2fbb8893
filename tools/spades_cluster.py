"""`make cluster`: the deployment run natively on one machine, from the deployment's own files.

It starts, each as a real process on 127.0.0.1 and ephemeral ports, with its data and log in
one folder (``var/cluster/`` by default):

- a private PostgreSQL (``initdb``, then ``postgres`` itself) holding the event log;
- a private NATS server, the replicas' fan-out (``--fanout nats://...``);
- two ``spades-server`` replicas on that PostgreSQL;
- haproxy in front of their gRPC and web ports, configured by ``deploy/haproxy/haproxy.cfg``
  (the file ships unchanged: the addresses reach it as environment variables);
- Prometheus scraping every replica and haproxy with ``deploy/prometheus/``'s configuration and
  alert rules (only the addresses are filled in);
- Alertmanager with ``deploy/alertmanager/alertmanager.yml``.

It prints every address (the balancer's gRPC one is where a bot connects) and writes them, with
each process's pid, to ``<folder>/addresses.json``; then it waits in the foreground until Ctrl-C
or SIGTERM and stops everything (the balancer first, PostgreSQL last).

The tests start the same topology through :class:`Cluster` (``tests/cluster/``) and break it:
:meth:`Cluster.kill` and :meth:`Cluster.restart` act on one component by name. Each port is
chosen once, so a component restarted comes back on the same address and nothing in front of it
needs to be told.

For the alert tests (and an impatient operator) the timings may be shortened, never the rules'
expressions: ``--scrape-interval``, ``--evaluation-interval``, ``--alert-for`` (every rule's
``for:``), ``--alert-group-wait`` (Alertmanager's ``group_wait`` and ``group_interval``), and
``--alert-webhook`` (the receiver's url).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import grpc
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
HAPROXY_CONFIG = DEPLOY / "haproxy" / "haproxy.cfg"
PROMETHEUS_CONFIG = DEPLOY / "prometheus" / "prometheus.yml"
ALERTMANAGER_CONFIG = DEPLOY / "alertmanager" / "alertmanager.yml"
LOOPBACK = "127.0.0.1"
#: The replicas the deployment ships (compose, haproxy.cfg, prometheus.yml name two).
REPLICAS = 2
#: Seconds any one component gets to become ready (a loaded machine is slow, not broken).
START_TIMEOUT = 90.0
STOP_TIMEOUT = 20.0
#: The addresses the shipped prometheus.yml and alertmanager use (compose's service names).
SHIPPED_REPLICA_METRICS = tuple(f"spades-{n}:9464" for n in range(1, REPLICAS + 1))
SHIPPED_BALANCER_METRICS = "haproxy:8404"
SHIPPED_PROMETHEUS = "localhost:9090"
SHIPPED_ALERTMANAGER = "alertmanager:9093"
#: Behind a proxy every client reaches a replica from the proxy's address over a few shared
#: connections: the per-address and per-connection limits are off (as in compose.yaml).
BEHIND_A_PROXY = {
    "SPADES_TABLES_PER_ADDRESS": "0",
    "SPADES_QUICK_MATCH_PER_ADDRESS": "0",
    "SPADES_CONNECTION_ACTION_RATE": "0",
}


class ClusterError(RuntimeError):
    """A component did not start (its log says why: the message names it)."""


def free_port() -> int:
    """A port nothing listens on now."""
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """``count`` different ports nothing listens on now, chosen once per component so restarts
    keep them. Every probe stays bound until all are chosen: a probe closed at once lets the
    kernel hand out the same port again (seen: NATS and Alertmanager given one port, and the
    Alertmanager readiness check answered by NATS)."""
    probes: list[socket.socket] = []
    try:
        for _ in range(count):
            probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            probes.append(probe)
            probe.bind((LOOPBACK, 0))
        return [int(probe.getsockname()[1]) for probe in probes]
    finally:
        for probe in probes:
            probe.close()


def tool(name: str, *folders: str) -> str:
    """The executable ``name`` on PATH or in one of ``folders`` (Debian puts some in sbin)."""
    found = shutil.which(name) or next(
        (str(Path(f) / name) for f in folders if (Path(f) / name).is_file()), None
    )
    if found is None:
        raise ClusterError(f"{name} not found (make cluster installs the Debian packages)")
    return found


def postgres_bin() -> Path:
    """The newest PostgreSQL server binaries Debian installed (/usr/lib/postgresql/N/bin)."""
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3])
    )
    if not versions:
        raise ClusterError("no PostgreSQL server found under /usr/lib/postgresql (postgresql)")
    return versions[-1].parent


def wait_until(check: Callable[[], bool], what: str, timeout: float = START_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise ClusterError(f"not within {timeout:.0f} s: {what}")
        time.sleep(0.1)


def accepts(address: str) -> bool:
    host, _, port = address.rpartition(":")
    with contextlib.suppress(OSError), socket.create_connection((host, int(port)), timeout=1):
        return True
    return False


def http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return int(response.status) == 200
    except (OSError, urllib.error.URLError):
        return False


def grpc_serving(address: str) -> bool:
    """Whether the gRPC health service at ``address`` says SERVING (service "")."""
    with grpc.insecure_channel(address, options=[("grpc.enable_http_proxy", 0)]) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=""), timeout=2
            )
        except grpc.RpcError:
            return False
    return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


def as_user(user: str | None, argv: list[str]) -> list[str]:
    """``argv`` run as ``user`` (None: as we are).

    Through setpriv rather than Popen(user=...): that makes Python fork() instead of vfork(),
    and a fork of a process whose gRPC threads are busy (the tests') can crash in gRPC's fork
    handlers before it execs; setpriv also keeps the pid (it execs the command)."""
    if user is None:
        return argv
    return [
        tool("setpriv", "/usr/bin"),
        f"--reuid={user}",
        f"--regid={user}",
        "--init-groups",
        *argv,
    ]


# -- one child process -------------------------------------------------------------------------


@dataclass
class Component:
    """One supervised process: how to start it, how to know it is ready, its log file."""

    name: str
    argv: Callable[[], list[str]]
    ready: Callable[[], bool]
    log_path: Path
    env: Mapping[str, str] | None = None
    #: Run as this user (we are root): through setpriv, which execs it with that user's ids.
    user: str | None = None
    #: Signal for a clean stop (postgres: SIGINT is its "fast" shutdown).
    stop_signal: int = signal.SIGTERM
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def pid(self) -> int:
        assert self.process is not None, f"{self.name} never started"
        return self.process.pid

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self, timeout: float = START_TIMEOUT) -> None:
        with self.log_path.open("ab") as log:
            # A session of its own: Ctrl-C in the terminal reaches only this script, which stops
            # the children in order.
            self.process = subprocess.Popen(
                as_user(self.user, self.argv()),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=None if self.env is None else dict(self.env),
                start_new_session=True,
            )
        process = self.process

        def ready() -> bool:
            if process.poll() is not None:
                raise ClusterError(
                    f"{self.name} exited ({process.returncode}) while starting; see {self.log_path}"
                )
            return self.ready()

        wait_until(ready, f"{self.name} ready (see {self.log_path})", timeout)

    def kill(self, signum: int = signal.SIGKILL, *, group: bool = False) -> int:
        """Send ``signum`` (to its whole process group with ``group``) and reap it."""
        assert self.process is not None
        with contextlib.suppress(ProcessLookupError):
            if group:
                os.killpg(self.process.pid, signum)
            else:
                self.process.send_signal(signum)
        return self.process.wait(STOP_TIMEOUT)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(self.stop_signal)
        try:
            self.process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(STOP_TIMEOUT)
        # What it may have left behind (postgres's backends after a SIGKILL of the postmaster).
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)


# -- the cluster -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Placement:
    """A replica run apart from the others, in the network namespace ``namespace`` (made by
    whoever asks for it: a test's fixture, with a link to the host that it may break).

    The replica listens on ``address`` (its end of the link); PostgreSQL and NATS must then
    listen where it reaches them, :attr:`Settings.services_host` (the host's end)."""

    namespace: str
    address: str


@dataclass(frozen=True)
class Settings:
    """What a cluster may be told; every default is the deployment's own."""

    folder: Path
    #: Prometheus's global intervals (prometheus.yml's when None).
    scrape_interval: str | None = None
    evaluation_interval: str | None = None
    #: Every alert rule's ``for:`` (alerts.yml's when None); the expressions never change.
    alert_for: str | None = None
    #: Alertmanager's ``group_wait`` and ``group_interval`` (alertmanager.yml's when None).
    alert_group_wait: str | None = None
    #: Alertmanager's receiver url (alertmanager.yml's when None).
    alert_webhook: str | None = None
    #: More flags for every replica.
    replica_args: tuple[str, ...] = ()
    #: How many replicas (the deployment's two by default): with another number, haproxy's
    #: and Prometheus's shipped files get one server line and one target a replica, made
    #: like the shipped ones (the benchmark runs 1, 2 and 3).
    replicas: int = REPLICAS
    #: Replicas run apart, by name ("spades-1"): in a network namespace of their own.
    placements: Mapping[str, Placement] = field(default_factory=dict)
    #: Where PostgreSQL and NATS listen (PostgreSQL on the loopback address too), and every
    #: replica reaches them: a placed replica needs the host's end of its link here.
    services_host: str = LOOPBACK


def readable_by(user: str, path: Path) -> bool:
    """Whether ``user`` may enter every folder down to ``path`` (PostgreSQL runs as its own
    user when we are root, and its data folder must be reachable)."""
    account = pwd.getpwnam(user)
    for folder in [path, *path.parents]:
        mode = folder.stat()
        if mode.st_uid == account.pw_uid:
            continue
        if mode.st_gid == account.pw_gid and mode.st_mode & stat.S_IXGRP:
            continue
        if not mode.st_mode & stat.S_IXOTH:
            return False
    return True


class Cluster:
    """The topology of `make cluster`; :meth:`start`, then :meth:`addresses`, :meth:`stop`.

    Components by name: ``postgres``, ``nats``, ``spades-1``, ``spades-2`` (and on, with more
    replicas), ``balancer``, ``alertmanager``, ``prometheus``.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.folder = settings.folder.resolve()
        self.folder.mkdir(parents=True, exist_ok=True)
        self.operator_token = secrets.token_hex(16)
        names = (
            "postgres",
            "nats",
            "balancer-grpc",
            "balancer-web",
            "balancer-metrics",
            "prometheus",
            "alertmanager",
            *(f"spades-{n}-{kind}" for n in self._numbers() for kind in ("grpc", "web", "metrics")),
        )
        self.ports = dict(zip(names, free_ports(len(names)), strict=True))
        self._temporary_postgres: Path | None = None
        self.postgres_user = "postgres" if os.geteuid() == 0 else None
        self.postgres_data = self._postgres_data_folder()
        self.components: dict[str, Component] = {}
        self._add_components()

    def _numbers(self) -> range:
        return range(1, self.settings.replicas + 1)

    def host(self, port_name: str) -> str:
        """The address ``port_name`` listens on: a placed replica's own, the services' host
        for PostgreSQL and NATS, else the loopback address."""
        if port_name in ("postgres", "nats"):
            return self.settings.services_host
        replica = port_name.rpartition("-")[0]
        placement = self.settings.placements.get(replica)
        return placement.address if placement is not None else LOOPBACK

    def address(self, port_name: str) -> str:
        return f"{self.host(port_name)}:{self.ports[port_name]}"

    @property
    def dsn(self) -> str:
        return f"postgresql://spades@{self.address('postgres')}/spades"

    @property
    def nats_url(self) -> str:
        return f"nats://{self.address('nats')}"

    # -- PostgreSQL ----------------------------------------------------------------------------

    def _postgres_data_folder(self) -> Path:
        data = self.folder / "postgres"
        if self.postgres_user is None or readable_by(self.postgres_user, self.folder):
            return data
        # Root's temporary folders (pytest's) are closed to other users: the data goes to a
        # folder of its own under /tmp instead, removed with the cluster.
        self._temporary_postgres = Path(tempfile.mkdtemp(prefix="spades-cluster-postgres-"))
        self._temporary_postgres.chmod(0o755)
        return self._temporary_postgres / "data"

    def _initdb(self) -> None:
        if (self.postgres_data / "PG_VERSION").is_file():
            return
        self.postgres_data.mkdir(parents=True, exist_ok=True)
        if self.postgres_user is not None:
            account = pwd.getpwnam(self.postgres_user)
            os.chown(self.postgres_data, account.pw_uid, account.pw_gid)
        subprocess.run(
            as_user(
                self.postgres_user,
                [
                    str(postgres_bin() / "initdb"),
                    "--pgdata",
                    str(self.postgres_data),
                    "--username",
                    "spades",
                    "--auth",
                    "trust",
                    "--encoding",
                    "UTF8",
                    "--no-sync",
                ],
            ),
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            cwd="/",
        )

    def _trust_services_host(self) -> None:
        """Let replicas connect from the services' host's network (initdb trusts only the
        loopback addresses): "samenet", the networks of the server's own addresses."""
        if self.settings.services_host == LOOPBACK:
            return
        hba = self.postgres_data / "pg_hba.conf"
        line = "host all all samenet trust"
        if line not in hba.read_text().splitlines():
            with hba.open("a") as rules:
                rules.write(f"# tools/spades_cluster.py: a replica apart reaches us here\n{line}\n")

    def _postgres_argv(self) -> list[str]:
        return [
            str(postgres_bin() / "postgres"),
            "-D",
            str(self.postgres_data),
            "-p",
            str(self.ports["postgres"]),
            "-c",
            f"listen_addresses={','.join(dict.fromkeys([LOOPBACK, self.settings.services_host]))}",
            "-c",
            "unix_socket_directories=",
            "-c",
            "shared_buffers=32MB",
            "-c",
            "max_connections=100",
        ]

    def _postgres_ready(self) -> bool:
        result = subprocess.run(
            [str(postgres_bin() / "pg_isready"), "-h", LOOPBACK, "-p", str(self.ports["postgres"])],
            capture_output=True,
        )
        return result.returncode == 0

    def _create_database(self) -> None:
        createdb = [
            str(postgres_bin() / "createdb"),
            "-h",
            LOOPBACK,
            "-p",
            str(self.ports["postgres"]),
        ]
        result = subprocess.run(
            [*createdb, "-U", "spades", "spades"], capture_output=True, text=True
        )
        if result.returncode != 0 and "already exists" not in result.stderr:
            raise ClusterError(f"createdb: {result.stderr.strip()}")

    # -- the components ------------------------------------------------------------------------

    def _add(self, component: Component) -> None:
        self.components[component.name] = component

    def _add_components(self) -> None:
        logs = self.folder
        self._add(
            Component(
                "postgres",
                self._postgres_argv,
                self._postgres_ready,
                logs / "postgres.log",
                user=self.postgres_user,
                stop_signal=signal.SIGINT,
            )
        )
        nats = tool("nats-server", "/usr/sbin")
        self._add(
            Component(
                "nats",
                lambda: [nats, "-a", self.host("nats"), "-p", str(self.ports["nats"])],
                lambda: accepts(self.address("nats")),
                logs / "nats.log",
            )
        )
        server = str(Path(sys.executable).with_name("spades-server"))
        for number in self._numbers():
            self._add(self._replica(number, server))
        self._add(
            Component(
                "balancer",
                lambda: [tool("haproxy", "/usr/sbin"), "-db", "-f", str(self._haproxy_config())],
                self._balancer_sees_replicas,
                logs / "haproxy.log",
                env=self._balancer_environment(),
                stop_signal=signal.SIGUSR1,  # haproxy's soft stop: finish the calls in flight
            )
        )
        self._add(
            Component(
                "alertmanager",
                self._alertmanager_argv,
                lambda: http_ok(f"http://{self.address('alertmanager')}/-/ready"),
                logs / "alertmanager.log",
            )
        )
        self._add(
            Component(
                "prometheus",
                self._prometheus_argv,
                lambda: http_ok(f"http://{self.address('prometheus')}/-/ready"),
                logs / "prometheus.log",
            )
        )

    def _replica(self, number: int, server: str) -> Component:
        name = f"spades-{number}"
        environment = {k: v for k, v in os.environ.items() if not k.startswith("SPADES_")}
        environment.update(BEHIND_A_PROXY)
        environment["SPADES_OPERATOR_TOKEN"] = self.operator_token

        placement = self.settings.placements.get(name)
        # ip netns exec execs the server in the namespace (the pid stays the server's).
        inside = (
            []
            if placement is None
            else [tool("ip", "/usr/sbin"), "netns", "exec", placement.namespace]
        )

        def argv() -> list[str]:
            return [
                *inside,
                server,
                "--postgres-dsn",
                self.dsn,
                "--fanout",
                self.nats_url,
                "--listen",
                self.address(f"{name}-grpc"),
                "--web",
                self.address(f"{name}-web"),
                "--metrics",
                self.address(f"{name}-metrics"),
                "--log-format",
                "json",
                *self.settings.replica_args,
            ]

        return Component(
            name,
            argv,
            lambda: grpc_serving(self.address(f"{name}-grpc")),
            self.folder / f"{name}.log",
            env=environment,
        )

    def _haproxy_config(self) -> Path:
        """haproxy.cfg as shipped; for another number of replicas, a copy with a server line
        per replica in each backend (the shipped last one's, renumbered)."""
        if self.settings.replicas == REPLICAS:
            return HAPROXY_CONFIG
        lines: list[str] = []
        servers: list[str] = []

        def flush() -> None:
            for number in self._numbers():
                model = servers[min(number, len(servers)) - 1]
                last = min(number, len(servers))
                lines.append(
                    model.replace(f"spades-{last} ", f"spades-{number} ").replace(
                        f"REPLICA_{last}_", f"REPLICA_{number}_"
                    )
                )
            servers.clear()

        for line in HAPROXY_CONFIG.read_text().splitlines():
            if line.strip().startswith("server spades-"):
                servers.append(line)
                continue
            if servers:
                flush()
            lines.append(line)
        if servers:
            flush()
        path = self.folder / "haproxy.cfg"
        path.write_text("\n".join(lines) + "\n")
        return path

    def _balancer_environment(self) -> dict[str, str]:
        environment = dict(os.environ)
        environment.update(
            BALANCER_GRPC=self.address("balancer-grpc"),
            BALANCER_WEB=self.address("balancer-web"),
            BALANCER_METRICS=self.address("balancer-metrics"),
        )
        for number in self._numbers():
            prefix = f"REPLICA_{number}"
            environment[f"{prefix}_GRPC"] = self.address(f"spades-{number}-grpc")
            environment[f"{prefix}_WEB"] = self.address(f"spades-{number}-web")
            environment[f"{prefix}_METRICS_HOST"] = self.host(f"spades-{number}-metrics")
            environment[f"{prefix}_METRICS_PORT"] = str(self.ports[f"spades-{number}-metrics"])
        return environment

    def _balancer_sees_replicas(self) -> bool:
        """Whether haproxy's checks found every live replica up (its own metrics say so)."""
        url = f"http://{self.address('balancer-metrics')}/metrics"
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                text = response.read().decode()
        except (OSError, urllib.error.URLError):
            return False
        live = sum(self.components[f"spades-{n}"].alive() for n in self._numbers())
        up = [
            line
            for line in text.splitlines()
            if line.startswith("haproxy_server_status{")
            and 'proxy="spades_grpc"' in line
            and 'state="UP"' in line
            and line.endswith(" 1")
        ]
        return len(up) >= live

    # -- Prometheus and Alertmanager, from the shipped files -----------------------------------

    def _prometheus_argv(self) -> list[str]:
        folder = self.folder / "prometheus"
        folder.mkdir(exist_ok=True)
        config = self._prometheus_config(folder)
        return [
            tool("prometheus"),
            f"--config.file={config}",
            f"--storage.tsdb.path={folder / 'data'}",
            f"--web.listen-address={self.address('prometheus')}",
            "--web.enable-lifecycle",
        ]

    def _prometheus_config(self, folder: Path) -> Path:
        config: dict[str, Any] = yaml.safe_load(PROMETHEUS_CONFIG.read_text())
        replicas = [self.address(f"spades-{n}-metrics") for n in self._numbers()]
        replaced = {
            SHIPPED_BALANCER_METRICS: [self.address("balancer-metrics")],
            SHIPPED_PROMETHEUS: [self.address("prometheus")],
            SHIPPED_ALERTMANAGER: [self.address("alertmanager")],
        }
        # The shipped replicas' targets name ours; the last one also those beyond it.
        for index, shipped in enumerate(SHIPPED_REPLICA_METRICS):
            last = index == len(SHIPPED_REPLICA_METRICS) - 1
            replaced[shipped] = replicas[index:] if last else replicas[index : index + 1]

        def fill(targets: list[str]) -> list[str]:
            unknown = set(targets) - set(replaced)
            if unknown:
                raise ClusterError(f"{PROMETHEUS_CONFIG}: no cluster address for {unknown}")
            return [address for target in targets for address in replaced[target]]

        for job in config["scrape_configs"]:
            for group in job.get("static_configs", []):
                group["targets"] = fill(group["targets"])
        for manager in config.get("alerting", {}).get("alertmanagers", []):
            for group in manager.get("static_configs", []):
                group["targets"] = fill(group["targets"])
        intervals = config.setdefault("global", {})
        if self.settings.scrape_interval:
            intervals["scrape_interval"] = self.settings.scrape_interval
        if self.settings.evaluation_interval:
            intervals["evaluation_interval"] = self.settings.evaluation_interval
        rule_files = []
        for rule_file in config.get("rule_files", []):
            rules: dict[str, Any] = yaml.safe_load(
                (PROMETHEUS_CONFIG.parent / rule_file).read_text()
            )
            if self.settings.alert_for:
                for group in rules["groups"]:
                    for rule in group["rules"]:
                        if "alert" in rule:
                            rule["for"] = self.settings.alert_for
            written = folder / Path(rule_file).name
            written.write_text(yaml.safe_dump(rules, sort_keys=False))
            rule_files.append(str(written))
        config["rule_files"] = rule_files
        path = folder / "prometheus.yml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        return path

    def _alertmanager_argv(self) -> list[str]:
        folder = self.folder / "alertmanager"
        folder.mkdir(exist_ok=True)
        config: dict[str, Any] = yaml.safe_load(ALERTMANAGER_CONFIG.read_text())
        if self.settings.alert_group_wait:
            config["route"]["group_wait"] = self.settings.alert_group_wait
            config["route"]["group_interval"] = self.settings.alert_group_wait
        if self.settings.alert_webhook:
            for receiver in config["receivers"]:
                for webhook in receiver.get("webhook_configs", []):
                    webhook["url"] = self.settings.alert_webhook
        path = folder / "alertmanager.yml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        return [
            tool("prometheus-alertmanager", "/usr/bin"),
            f"--config.file={path}",
            f"--storage.path={folder / 'data'}",
            f"--web.listen-address={self.address('alertmanager')}",
            "--cluster.listen-address=",  # one Alertmanager: no gossip port
        ]

    # -- running it ----------------------------------------------------------------------------

    def start(self) -> None:
        """Start everything in dependency order; on any failure, stop what started."""
        try:
            self._initdb()
            self._trust_services_host()
            self.components["postgres"].start()
            self._create_database()
            for name in ("nats", *(f"spades-{n}" for n in self._numbers())):
                self.components[name].start()
            for name in ("balancer", "alertmanager", "prometheus"):
                self.components[name].start()
        except BaseException:
            self.stop()
            raise
        self.write_addresses()

    def stop(self) -> None:
        """Stop everything, the balancer first and PostgreSQL last."""
        replicas = [f"spades-{n}" for n in self._numbers()]
        for name in ("balancer", "prometheus", "alertmanager", *replicas, "nats"):
            if name in self.components:
                self.components[name].stop()
        self.components["postgres"].stop()
        if self._temporary_postgres is not None:
            shutil.rmtree(self._temporary_postgres, ignore_errors=True)

    def kill(self, name: str, signum: int = signal.SIGKILL) -> int:
        """Signal one component and reap it (PostgreSQL: its whole process group, as when its
        container is killed); its exit status."""
        return self.components[name].kill(signum, group=name == "postgres")

    def restart(self, name: str) -> None:
        """Start a stopped component again, on the same ports and data."""
        component = self.components[name]
        assert not component.alive(), f"{name} is running"
        if name == "postgres":
            # Backends of a killed postmaster may hold its shared memory for a moment.
            component.stop()
            deadline = time.monotonic() + START_TIMEOUT
            while True:
                try:
                    component.start(timeout=START_TIMEOUT)
                    break
                except ClusterError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)
        else:
            component.start()
        self.write_addresses()

    def addresses(self) -> dict[str, Any]:
        """Every address, and each process's pid (the file `make cluster` writes)."""
        pids = {name: c.pid if c.alive() else None for name, c in self.components.items()}
        return {
            "grpc": self.address("balancer-grpc"),
            "web": f"http://{self.address('balancer-web')}/",
            "prometheus": f"http://{self.address('prometheus')}/",
            "alertmanager": f"http://{self.address('alertmanager')}/",
            "replicas": [
                {
                    "name": f"spades-{n}",
                    "grpc": self.address(f"spades-{n}-grpc"),
                    "web": f"http://{self.address(f'spades-{n}-web')}/",
                    "metrics": f"http://{self.address(f'spades-{n}-metrics')}/metrics",
                    "pid": pids[f"spades-{n}"],
                    "log": str(self.components[f"spades-{n}"].log_path),
                }
                for n in self._numbers()
            ],
            "postgres": {"dsn": self.dsn, "pid": pids["postgres"], "data": str(self.postgres_data)},
            "nats": {"url": self.nats_url, "pid": pids["nats"]},
            "balancer": {
                "pid": pids["balancer"],
                "metrics": f"http://{self.address('balancer-metrics')}/metrics",
            },
            "operator_token": self.operator_token,
        }

    def write_addresses(self) -> Path:
        path = self.folder / "addresses.json"
        path.write_text(json.dumps(self.addresses(), indent=2) + "\n")
        return path


@contextlib.contextmanager
def running(settings: Settings) -> Iterator[Cluster]:
    """A started cluster, stopped on exit (the tests' fixture)."""
    cluster = Cluster(settings)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


# -- the command -------------------------------------------------------------------------------


BOT = os.path.relpath(Path(sys.executable).with_name("spades-bot"))


def describe(addresses: Mapping[str, Any], out: IO[str]) -> None:
    lines = [
        f"Spades cluster: connect a bot to {addresses['grpc']}",
        f"  bot:           {BOT} --server {addresses['grpc']} --quick-match --bot random",
        f"  web:           {addresses['web']}",
        f"  prometheus:    {addresses['prometheus']}  (targets, alerts)",
        f"  alertmanager:  {addresses['alertmanager']}",
        f"  balancer:      haproxy pid {addresses['balancer']['pid']},"
        f" metrics {addresses['balancer']['metrics']}",
    ]
    for replica in addresses["replicas"]:
        lines.append(
            f"  {replica['name']}:      gRPC {replica['grpc']}, metrics {replica['metrics']},"
            f" pid {replica['pid']}"
        )
    lines += [
        f"  postgres:      {addresses['postgres']['dsn']}  pid {addresses['postgres']['pid']}",
        f"  nats:          {addresses['nats']['url']}  pid {addresses['nats']['pid']}",
        "  stop:          Ctrl-C or SIGTERM",
    ]
    print("\n".join(lines), file=out, flush=True)


def parse_arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--folder", type=Path, default=ROOT / "var" / "cluster")
    parser.add_argument(
        "--scrape-interval", help="Prometheus scrape_interval (default: the file's)"
    )
    parser.add_argument("--evaluation-interval", help="Prometheus evaluation_interval")
    parser.add_argument("--alert-for", help="every alert rule's for: (default: the rules')")
    parser.add_argument("--alert-group-wait", help="Alertmanager group_wait and group_interval")
    parser.add_argument("--alert-webhook", help="Alertmanager's receiver url")
    parser.add_argument(
        "--replicas", type=int, default=REPLICAS, help=f"how many replicas (default {REPLICAS})"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    arguments = parse_arguments(argv)
    settings = Settings(
        folder=arguments.folder,
        scrape_interval=arguments.scrape_interval,
        evaluation_interval=arguments.evaluation_interval,
        alert_for=arguments.alert_for,
        alert_group_wait=arguments.alert_group_wait,
        alert_webhook=arguments.alert_webhook,
        replicas=arguments.replicas,
    )
    stopping = threading.Event()
    started = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        stopping.set()
        if not started.is_set():  # still starting: abandon it (start() stops what it began)
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    cluster = Cluster(settings)
    print(f"starting the cluster in {cluster.folder} ...", flush=True)
    try:
        cluster.start()
    except ClusterError as error:
        print(f"cluster: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    started.set()
    describe(cluster.addresses(), sys.stdout)
    print(f"  addresses:     {cluster.folder / 'addresses.json'}", flush=True)
    reported: set[str] = set()
    try:
        while not stopping.wait(1.0):
            for name, component in cluster.components.items():
                if not component.alive() and name not in reported:
                    reported.add(name)
                    print(f"{name} exited; see {component.log_path}", file=sys.stderr, flush=True)
    finally:
        print("stopping the cluster ...", flush=True)
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
