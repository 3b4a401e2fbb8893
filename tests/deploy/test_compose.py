"""deploy/compose.yaml: every service, file and address it names exists and agrees."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from spades_server.app import config
from tests.deploy.files import (
    DEPLOY,
    dockerfile_stages,
    load_yaml,
    port_of,
)

SERVER_REPLICAS = ("spades-1", "spades-2")


def services() -> dict[str, Any]:
    found: dict[str, Any] = load_yaml(DEPLOY / "compose.yaml")["services"]
    return found


def depends_on(service: dict[str, Any]) -> dict[str, str]:
    """{dependency: condition}, from the list or the mapping form."""
    value = service.get("depends_on", {})
    if isinstance(value, list):
        return dict.fromkeys(value, "service_started")
    return {name: (spec or {}).get("condition", "service_started") for name, spec in value.items()}


def has_healthcheck(name: str, service: dict[str, Any]) -> bool:
    if "healthcheck" in service:
        return not service["healthcheck"].get("disable", False)
    build = service.get("build")
    if build:  # the image's own HEALTHCHECK
        stages = dockerfile_stages(DEPLOY / build["context"] / build["dockerfile"])[1]
        return bool(stages[-1].all("HEALTHCHECK"))
    return False


def test_the_stack_is_complete() -> None:
    assert set(services()) == {
        *SERVER_REPLICAS,
        "postgres",
        "nats",
        "haproxy",
        "alertmanager",
        "prometheus",
        "grafana",
    }
    assert services()["postgres"]["image"].startswith("postgres:15")


def test_every_dependency_exists_and_healthy_ones_have_a_check() -> None:
    all_services = services()
    for name, service in all_services.items():
        for dependency, condition in depends_on(service).items():
            assert dependency in all_services, f"{name} depends on unknown {dependency}"
            assert condition in ("service_started", "service_healthy")
            if condition == "service_healthy":
                assert has_healthcheck(dependency, all_services[dependency]), dependency


def test_replicas_share_one_image_and_differ_only_by_name() -> None:
    first, second = (dict(services()[name]) for name in SERVER_REPLICAS)
    assert first.pop("hostname") == SERVER_REPLICAS[0]
    assert second.pop("hostname") == SERVER_REPLICAS[1]
    assert first == second
    assert depends_on(first) == {"postgres": "service_healthy", "nats": "service_healthy"}
    build = first["build"]
    assert (DEPLOY / build["context"] / build["dockerfile"]).resolve() == DEPLOY / "Dockerfile"


def test_replicas_use_postgres_and_listen_on_every_interface() -> None:
    postgres = services()["postgres"]
    for name in SERVER_REPLICAS:
        env = services()[name]["environment"]
        dsn = re.fullmatch(
            r"postgresql://(\w+):[^@]+@([\w-]+):(\d+)/(\w+)", env["SPADES_POSTGRES_DSN"]
        )
        assert dsn, env["SPADES_POSTGRES_DSN"]
        user, host, port, database = dsn.groups()
        assert host == "postgres" and port == "5432"
        assert user == postgres["environment"]["POSTGRES_USER"]
        assert database == postgres["environment"]["POSTGRES_DB"]
        assert env["SPADES_LISTEN"] == "0.0.0.0:50051"
        assert env["SPADES_METRICS"] == "0.0.0.0:9464"
        assert "SPADES_OPERATOR_TOKEN" in env
    assert any(v.endswith(":/var/lib/postgresql/data") for v in postgres["volumes"])
    assert "pg_isready" in " ".join(postgres["healthcheck"]["test"])


def test_replicas_fan_out_through_the_nats_service() -> None:
    nats = services()["nats"]
    assert nats["image"].startswith("nats:2.")
    assert "4222" in [str(port) for port in nats["expose"]]
    assert "healthz" in " ".join(nats["healthcheck"]["test"])
    for name in SERVER_REPLICAS:
        fanout = services()[name]["environment"]["SPADES_FANOUT"]
        assert fanout == "nats://nats:4222", fanout
        # The server takes it (a bad value is refused at start).
        assert config.from_args(["--fanout", fanout]).fanout == fanout


def test_bind_mounts_exist_and_named_volumes_are_declared() -> None:
    declared = set(load_yaml(DEPLOY / "compose.yaml").get("volumes") or {})
    for name, service in services().items():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("."):
                assert (DEPLOY / source).exists(), f"{name}: {source} does not exist"
            else:
                assert source in declared, f"{name}: volume {source} not declared"


def haproxy_config() -> str:
    return (DEPLOY / "haproxy" / "haproxy.cfg").read_text(encoding="utf-8")


def haproxy_variables() -> set[str]:
    """The environment variables haproxy.cfg reads ("${NAME}" outside comments)."""
    lines = [line for lines in haproxy_sections().values() for line in lines]
    return set(re.findall(r"\$\{(\w+)\}", "\n".join(lines)))


def haproxy_sections() -> dict[str, list[str]]:
    """Each section ("backend spades_grpc", ...) with its lines, comments left out."""
    sections: dict[str, list[str]] = {}
    current: list[str] = []
    for raw in haproxy_config().splitlines():
        line = raw.split("#", 1)[0].rstrip()
        if not line:
            continue
        if not line[0].isspace():
            current = sections.setdefault(line.strip(), [])
        else:
            current.append(line.strip())
    return sections


def test_compose_gives_haproxy_every_address_it_reads() -> None:
    haproxy = services()["haproxy"]
    environment = haproxy["environment"]
    assert set(environment) == haproxy_variables()
    mounts = dict(v.split(":")[:2] for v in haproxy["volumes"])
    assert mounts["./haproxy/haproxy.cfg"] == "/usr/local/etc/haproxy/haproxy.cfg"
    replica_env = services()[SERVER_REPLICAS[0]]["environment"]
    for number, name in enumerate(SERVER_REPLICAS, start=1):
        prefix = f"REPLICA_{number}"
        assert environment[f"{prefix}_GRPC"] == f"{name}:{port_of(replica_env['SPADES_LISTEN'])}"
        assert environment[f"{prefix}_WEB"] == f"{name}:{port_of(replica_env['SPADES_WEB'])}"
        assert environment[f"{prefix}_METRICS_HOST"] == name
        assert environment[f"{prefix}_METRICS_PORT"] == str(port_of(replica_env["SPADES_METRICS"]))
    published = {port.split(":")[-1] for port in haproxy["ports"]}
    for frontend in ("BALANCER_GRPC", "BALANCER_WEB", "BALANCER_METRICS"):
        assert str(port_of(environment[frontend])) in published, frontend


def test_haproxy_balances_grpc_calls_over_http2_to_every_replica() -> None:
    sections = haproxy_sections()
    grpc_frontend = sections["frontend grpc"]
    # h2c with prior knowledge on the way in, HTTP/2 to each replica: per-call balancing.
    assert 'bind "${BALANCER_GRPC}" proto h2' in grpc_frontend
    assert "default_backend spades_grpc" in grpc_frontend
    servers = [line for line in sections["backend spades_grpc"] if line.startswith("server ")]
    assert [line.split()[1] for line in servers] == list(SERVER_REPLICAS)
    for number, line in enumerate(servers, start=1):
        assert f'"${{REPLICA_{number}_GRPC}}" proto h2' in line
        assert " check" in line
    web = [line for line in sections["backend spades_web"] if line.startswith("server ")]
    assert [line.split()[1] for line in web] == list(SERVER_REPLICAS)
    # Long-lived Play and Watch streams: no short idle cut-off.
    defaults = sections["defaults"]
    assert "timeout client 1h" in defaults and "timeout server 1h" in defaults
    assert "mode http" in defaults


def test_haproxy_accepts_its_configuration() -> None:
    """haproxy -c on the file itself, every address on loopback (the Debian package)."""
    haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
    if not Path(haproxy).is_file():  # (a failure under CI, as every skip)
        pytest.skip("haproxy not installed (Debian: make cluster-tools)")
    environment = {name: "127.0.0.1:1" for name in haproxy_variables()}
    environment.update(
        {name: "127.0.0.1" for name in haproxy_variables() if name.endswith("_METRICS_HOST")}
    )
    environment.update(
        {name: "1" for name in haproxy_variables() if name.endswith("_METRICS_PORT")}
    )
    result = subprocess.run(
        [haproxy, "-c", "-f", str(DEPLOY / "haproxy" / "haproxy.cfg")],
        env=environment,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_prometheus_scrapes_every_replica_and_loads_the_rules() -> None:
    config = load_yaml(DEPLOY / "prometheus" / "prometheus.yml")
    names = set(services())
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    targets = {
        job: [t for group in spec.get("static_configs", []) for t in group["targets"]]
        for job, spec in jobs.items()
    }
    for job, addresses in targets.items():
        for address in addresses:
            host = address.rpartition(":")[0]
            assert host == "localhost" or host in names, f"{job}: {host} is no compose service"
    metrics_port = port_of(services()[SERVER_REPLICAS[0]]["environment"]["SPADES_METRICS"])
    assert sorted(targets["spades-server"]) == [f"{n}:{metrics_port}" for n in SERVER_REPLICAS]
    assert jobs["spades-server"].get("metrics_path", "/metrics") == "/metrics"
    balancer = services()["haproxy"]["environment"]["BALANCER_METRICS"]
    assert targets["haproxy"] == [f"haproxy:{port_of(balancer)}"]
    alertmanagers = [
        target
        for manager in config["alerting"]["alertmanagers"]
        for group in manager["static_configs"]
        for target in group["targets"]
    ]
    assert alertmanagers == ["alertmanager:9093"]
    # rule files resolve relative to prometheus.yml, which compose mounts with its folder
    mounts = dict(v.split(":")[:2] for v in services()["prometheus"]["volumes"])
    assert mounts["./prometheus"] == "/etc/prometheus"
    assert "--config.file=/etc/prometheus/prometheus.yml" in services()["prometheus"]["command"]
    for rule_file in config["rule_files"]:
        assert (DEPLOY / "prometheus" / rule_file).is_file(), rule_file


def test_grafana_provisioning_points_at_mounted_files_and_services() -> None:
    grafana = services()["grafana"]
    mounts = dict(v.split(":")[:2] for v in grafana["volumes"])
    assert mounts["./grafana/provisioning"] == "/etc/grafana/provisioning"
    (datasource,) = load_yaml(DEPLOY / "grafana/provisioning/datasources/prometheus.yml")[
        "datasources"
    ]
    host = re.fullmatch(r"http://([\w-]+):(\d+)", datasource["url"])
    assert host and host.group(1) in services()
    (provider,) = load_yaml(DEPLOY / "grafana/provisioning/dashboards/spades.yml")["providers"]
    path = provider["options"]["path"]
    source = next(src for src, target in mounts.items() if target == path)
    assert (DEPLOY / source / "spades.json").is_file()
    home = grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert home == f"{path}/spades.json"
