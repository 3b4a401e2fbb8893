"""Every file under deploy/ parses, and the README names each of them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.deploy.files import DEPLOY

YAML_FILES = sorted([*DEPLOY.rglob("*.yaml"), *DEPLOY.rglob("*.yml")])
JSON_FILES = sorted(DEPLOY.rglob("*.json"))


def test_the_expected_files_exist() -> None:
    expected = [
        "Dockerfile",
        "Dockerfile.dockerignore",
        "constraints.txt",
        "compose.yaml",
        "haproxy/haproxy.cfg",
        "alertmanager/alertmanager.yml",
        "prometheus/prometheus.yml",
        "prometheus/alerts.yml",
        "prometheus/alerts_test.yml",
        "grafana/provisioning/datasources/prometheus.yml",
        "grafana/provisioning/dashboards/spades.yml",
        "grafana/dashboards/spades.json",
        "kubernetes/kustomization.yaml",
        "kubernetes/deployment.yaml",
        "kubernetes/service.yaml",
        "kubernetes/hpa.yaml",
        "kubernetes/configmap.yaml",
        "kubernetes/secret.yaml",
        "kubernetes/monitoring/prometheusrule.yaml",
        "README.md",
    ]
    missing = [name for name in expected if not (DEPLOY / name).is_file()]
    assert not missing


@pytest.mark.parametrize("path", YAML_FILES, ids=lambda p: str(p.relative_to(DEPLOY)))
def test_yaml_parses(path: Path) -> None:
    documents = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]
    assert documents, f"{path} is empty"
    assert all(isinstance(d, dict) for d in documents)


@pytest.mark.parametrize("path", JSON_FILES, ids=lambda p: str(p.relative_to(DEPLOY)))
def test_json_parses(path: Path) -> None:
    assert isinstance(json.loads(path.read_text(encoding="utf-8")), dict)


def test_readme_names_every_file() -> None:
    readme = (DEPLOY / "README.md").read_text(encoding="utf-8")
    files = [p for p in DEPLOY.rglob("*") if p.is_file() and p.name != "README.md"]
    unnamed = [
        str(p.relative_to(DEPLOY))
        for p in files
        if str(p.relative_to(DEPLOY)) not in readme and p.name not in readme
    ]
    assert not unnamed, f"deploy/README.md does not mention {unnamed}"
