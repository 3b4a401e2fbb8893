"""deploy/compose.yaml: every service, file and address it names exists and agrees."""

from __future__ import annotations

import importlib
import re
import warnings
from collections.abc import Iterator
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
        "envoy",
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


def envoy_clusters() -> dict[str, Any]:
    config = load_yaml(DEPLOY / "envoy" / "envoy.yaml")
    return {c["name"]: c for c in config["static_resources"]["clusters"]}


def type_urls(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if "@type" in node:
            yield node["@type"]
        for value in node.values():
            yield from type_urls(value)
    elif isinstance(node, list):
        for value in node:
            yield from type_urls(value)


def test_envoy_config_is_valid_for_the_envoy_v3_api() -> None:
    """Every field, enum and typed_config in envoy.yaml exists in Envoy's v3 API.

    envoy-data-plane has dataclasses generated from Envoy's protos; from_dict refuses unknown
    fields and unregistered Any types. (Imported by name: its generated code is not for mypy.)
    """
    config = load_yaml(DEPLOY / "envoy" / "envoy.yaml")
    with warnings.catch_warnings():  # its generated models trip pydantic deprecation warnings
        warnings.simplefilter("ignore", DeprecationWarning)
        pytest.importorskip("envoy_data_plane", reason="envoy-data-plane not installed")
        for url in set(type_urls(config)):
            package = url.removeprefix("type.googleapis.com/").rpartition(".")[0]
            importlib.import_module(f"envoy_data_plane.{package}")  # registers its Any types
        bootstrap = importlib.import_module("envoy_data_plane.envoy.config.bootstrap.v3")
    parsed = bootstrap.Bootstrap.from_dict(config)
    assert [c.name for c in parsed.static_resources.clusters] == list(envoy_clusters())
    with pytest.raises(KeyError):  # the check has teeth: a misspelt field is refused
        bootstrap.Bootstrap.from_dict({**config, "admn": {}})


def test_envoy_balances_over_every_replica_with_grpc_health_checks() -> None:
    (cluster,) = envoy_clusters().values()
    endpoints = [
        e["endpoint"]["address"]["socket_address"]
        for group in cluster["load_assignment"]["endpoints"]
        for e in group["lb_endpoints"]
    ]
    assert {(e["address"], e["port_value"]) for e in endpoints} == {
        (name, 50051) for name in SERVER_REPLICAS
    }
    options = cluster["typed_extension_protocol_options"][
        "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
    ]
    assert "http2_protocol_options" in options["explicit_http_config"]  # gRPC upstream: HTTP/2
    (health_check,) = cluster["health_checks"]
    assert "grpc_health_check" in health_check


def test_envoy_routes_reach_a_defined_cluster_and_ports_are_published() -> None:
    config = load_yaml(DEPLOY / "envoy" / "envoy.yaml")
    clusters = envoy_clusters()
    (listener,) = config["static_resources"]["listeners"]
    (chain,) = listener["filter_chains"]
    (manager,) = chain["filters"]
    routes = [
        route
        for host in manager["typed_config"]["route_config"]["virtual_hosts"]
        for route in host["routes"]
    ]
    assert routes
    for route in routes:
        assert route["route"]["cluster"] in clusters
        assert route["route"]["timeout"] == "0s"  # long-lived Play/Watch streams
    published = {port.split(":")[-1] for port in services()["envoy"]["ports"]}
    assert str(listener["address"]["socket_address"]["port_value"]) in published
    assert str(config["admin"]["address"]["socket_address"]["port_value"]) in published


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
    admin = load_yaml(DEPLOY / "envoy" / "envoy.yaml")["admin"]["address"]["socket_address"]
    assert targets["envoy"] == [f"envoy:{admin['port_value']}"]
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


def test_envoy_carries_grpc_web_and_cors_for_browsers() -> None:
    """Browsers reach the replicas through Envoy over gRPC-Web, with CORS answered."""
    config = load_yaml(DEPLOY / "envoy" / "envoy.yaml")
    (listener,) = config["static_resources"]["listeners"]
    (manager,) = listener["filter_chains"][0]["filters"]
    filters = [f["name"] for f in manager["typed_config"]["http_filters"]]
    # grpc_web and cors before the router (the router must stay last).
    assert filters == [
        "envoy.filters.http.grpc_web",
        "envoy.filters.http.cors",
        "envoy.filters.http.router",
    ]
    (host,) = manager["typed_config"]["route_config"]["virtual_hosts"]
    cors = host["typed_per_filter_config"]["envoy.filters.http.cors"]
    allowed = {name.strip() for name in cors["allow_headers"].split(",")}
    assert {"content-type", "x-grpc-web", "spades-seat-token", "authorization"} <= allowed
    exposed = {name.strip() for name in cors["expose_headers"].split(",")}
    assert {"grpc-status", "grpc-message", "grpc-status-details-bin"} <= exposed
    # A route that is not limited to application/grpc: gRPC-Web and preflights reach it.
    assert any("grpc" not in route["match"] for route in host["routes"])
