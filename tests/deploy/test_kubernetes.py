"""deploy/kubernetes: the objects are there and refer to each other consistently."""

from __future__ import annotations

from typing import Any

from spades_server.app import config
from tests.deploy.files import (
    DEPLOY,
    KUBERNETES,
    PENDING_VARIABLES,
    compose,
    dockerfile_stages,
    kubernetes_objects,
    load_yaml,
    port_of,
)


def objects(kind: str, folder: Any = KUBERNETES) -> list[dict[str, Any]]:
    return [o for o in kubernetes_objects(folder) if o["kind"] == kind]


def one(kind: str, folder: Any = KUBERNETES) -> dict[str, Any]:
    (found,) = objects(kind, folder)
    return found


def deployment() -> dict[str, Any]:
    return one("Deployment")


def container() -> dict[str, Any]:
    (found,) = deployment()["spec"]["template"]["spec"]["containers"]
    assert isinstance(found, dict)
    return found


def container_ports() -> dict[str, int]:
    return {p["name"]: p["containerPort"] for p in container()["ports"]}


def configmap_data() -> dict[str, str]:
    data: dict[str, str] = one("ConfigMap")["data"]
    return data


def test_kinds_and_kustomizations() -> None:
    kinds = {o["kind"] for o in kubernetes_objects()}
    assert kinds >= {
        "Deployment",
        "Service",
        "HorizontalPodAutoscaler",
        "ConfigMap",
        "Secret",
        "PodDisruptionBudget",
    }
    monitoring = KUBERNETES / "monitoring"
    assert {o["kind"] for o in kubernetes_objects(monitoring)} == {
        "ServiceMonitor",
        "PrometheusRule",
    }
    for folder in (KUBERNETES, monitoring):
        kustomization = load_yaml(folder / "kustomization.yaml")
        files = {p.name for p in folder.glob("*.yaml")} - {"kustomization.yaml"}
        assert set(kustomization["resources"]) == files, folder
    for o in kubernetes_objects() + kubernetes_objects(monitoring):
        assert o.get("apiVersion") and o["metadata"].get("name"), o


def test_api_versions() -> None:
    assert deployment()["apiVersion"] == "apps/v1"
    assert one("HorizontalPodAutoscaler")["apiVersion"] == "autoscaling/v2"
    assert one("PodDisruptionBudget")["apiVersion"] == "policy/v1"


def server_services() -> list[dict[str, Any]]:
    """The Services of the server's pods (not NATS's)."""
    return [s for s in objects("Service") if s["metadata"]["labels"].get(NAME) == "spades-server"]


NAME = "app.kubernetes.io/name"


def test_selectors_match_the_pod_template() -> None:
    labels = deployment()["spec"]["template"]["metadata"]["labels"]
    selector = deployment()["spec"]["selector"]["matchLabels"]
    assert selector.items() <= labels.items()
    for service in server_services():
        assert service["spec"]["selector"].items() <= labels.items(), service["metadata"]["name"]
    assert one("PodDisruptionBudget")["spec"]["selector"]["matchLabels"].items() <= labels.items()
    monitor = one("ServiceMonitor", KUBERNETES / "monitoring")
    monitored = [
        s
        for s in objects("Service")
        if monitor["spec"]["selector"]["matchLabels"].items() <= s["metadata"]["labels"].items()
    ]
    # exactly one Service with the metrics port: each pod is scraped once, job="spades-server"
    assert [s["metadata"]["name"] for s in monitored] == ["spades-server"]
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] in {p["name"] for p in monitored[0]["spec"]["ports"]}


def test_probes_are_grpc_on_the_service_port() -> None:
    grpc_port = container_ports()["grpc"]
    assert grpc_port == port_of(configmap_data()["SPADES_LISTEN"])
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        spec = container()[probe]
        assert set(spec) & {"grpc", "httpGet", "tcpSocket", "exec"} == {"grpc"}, probe
        assert spec["grpc"]["port"] == grpc_port, probe
    for probe in ("readinessProbe", "livenessProbe"):
        assert probe in container()


def test_services_target_the_container_ports() -> None:
    ports = container_ports()
    by_number = set(ports.values())
    for service in server_services():
        for port in service["spec"]["ports"]:
            target = port.get("targetPort", port["port"])
            assert target in ports or target in by_number, (service["metadata"]["name"], port)
    (main,) = [s for s in objects("Service") if s["metadata"]["name"] == "spades-server"]
    assert {p["name"]: p["port"] for p in main["spec"]["ports"]} == ports
    assert ports["metrics"] == port_of(configmap_data()["SPADES_METRICS"])
    annotations = deployment()["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/port"] == str(ports["metrics"])


def test_replicas_fan_out_through_the_nats_service() -> None:
    fanout = configmap_data()["SPADES_FANOUT"]
    assert config.from_args(["--fanout", fanout]).fanout == fanout
    host, _, port = fanout.removeprefix("nats://").partition(":")
    (nats,) = [s for s in objects("Service") if s["metadata"]["name"] == host]
    (statefulset,) = objects("StatefulSet")
    pod = statefulset["spec"]["template"]
    assert (
        statefulset["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    )
    assert nats["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    (container_,) = pod["spec"]["containers"]
    client = {p["name"]: p["containerPort"] for p in container_["ports"]}["client"]
    (service_port,) = nats["spec"]["ports"]
    assert service_port["port"] == int(port) and service_port["targetPort"] == "client"
    assert client == 4222 and container_["image"].startswith("nats:2.")
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    assert container_["securityContext"]["readOnlyRootFilesystem"] is True


def test_replicas_autoscaling_and_resources() -> None:
    assert deployment()["spec"]["replicas"] == 2
    hpa = one("HorizontalPodAutoscaler")["spec"]
    target = hpa["scaleTargetRef"]
    assert (target["apiVersion"], target["kind"], target["name"]) == (
        "apps/v1",
        "Deployment",
        deployment()["metadata"]["name"],
    )
    assert hpa["minReplicas"] >= 2 and hpa["maxReplicas"] > hpa["minReplicas"]
    (metric,) = hpa["metrics"]
    assert metric["resource"]["name"] == "cpu"
    resources = container()["resources"]
    assert resources["requests"]["cpu"]  # utilisation is relative to the request
    assert resources["limits"]["memory"]


def test_runs_as_the_images_non_root_user() -> None:
    pod = deployment()["spec"]["template"]["spec"]["securityContext"]
    _, stages = dockerfile_stages(DEPLOY / "Dockerfile")
    image_user = stages[-1].all("USER")[-1].split(":")[0]
    assert pod["runAsNonRoot"] is True
    assert str(pod["runAsUser"]) == image_user
    security = container()["securityContext"]
    assert security["allowPrivilegeEscalation"] is False
    assert security["readOnlyRootFilesystem"] is True
    assert security["capabilities"]["drop"] == ["ALL"]
    mounts = {m["mountPath"] for m in container()["volumeMounts"]}
    assert "/tmp" in mounts


def test_configmap_and_secret_are_referenced() -> None:
    secret = one("Secret")
    secret_keys = set(secret.get("stringData", {})) | set(secret.get("data", {}))
    configmap = one("ConfigMap")
    referenced_keys = set()
    for source in container().get("envFrom", []):
        if "configMapRef" in source:
            assert source["configMapRef"]["name"] == configmap["metadata"]["name"]
        if "secretRef" in source:
            assert source["secretRef"]["name"] == secret["metadata"]["name"]
            referenced_keys |= secret_keys
    for variable in container().get("env", []):
        ref = variable.get("valueFrom", {}).get("secretKeyRef")
        if ref:
            assert ref["name"] == secret["metadata"]["name"]
            assert ref["key"] in secret_keys, ref["key"]
            referenced_keys.add(ref["key"])
    assert {"SPADES_POSTGRES_DSN", "SPADES_OPERATOR_TOKEN"} <= referenced_keys
    assert any("configMapRef" in source for source in container()["envFrom"])


def test_secret_holds_placeholders_only() -> None:
    secret = one("Secret")
    assert "data" not in secret  # readable placeholders, nothing base64-encoded
    for key, value in secret["stringData"].items():
        assert "REPLACE_ME" in value, f"{key} looks like a real value: keep placeholders here"


def environment_names() -> set[str]:
    """Every SPADES_* variable the deploy files set (compose, ConfigMap, Secret, Deployment)."""
    names = set(configmap_data()) | set(one("Secret")["stringData"])
    names |= {v["name"] for v in container().get("env", [])}
    for service in compose()["services"].values():
        names |= set(service.get("environment", {}))
    return {n for n in names if n.startswith("SPADES_")}


def test_every_variable_is_one_the_server_reads() -> None:
    unknown = environment_names() - set(config.ENVIRONMENT.values()) - PENDING_VARIABLES
    assert not unknown, f"the server reads no {sorted(unknown)} (spades_server.config)"


def test_postgres_dsn_variable_matches_the_server() -> None:
    named = {v for v in config.ENVIRONMENT.values() if "POSTGRES" in v or "DSN" in v}
    assert "SPADES_POSTGRES_DSN" in named, f"the server reads {sorted(named)}: rename in deploy/"
