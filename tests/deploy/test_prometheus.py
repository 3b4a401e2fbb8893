"""Alert rules: structure, the Kubernetes copy, and promtool (installed by `make test`)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.deploy.files import DEPLOY, KUBERNETES, alert_rules, load_yaml

PROMTOOL = shutil.which("promtool")
#: `make test` installs promtool (make cluster-tools): under CI its absence, like every skip,
#: is a failure (tests/support/skips.py).
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None,
    reason="promtool not installed (make cluster-tools, or Debian: apt-get install prometheus)",
)


def test_every_rule_is_complete() -> None:
    rules = alert_rules()
    assert rules
    for rule in rules:
        assert set(rule) >= {"alert", "expr", "for", "labels", "annotations"}, rule["alert"]
        assert rule["labels"]["severity"] in ("warning", "critical")
        assert rule["annotations"].get("summary") and rule["annotations"].get("description")
        assert 'job="spades-server"' in rule["expr"], rule["alert"]
        assert rule["for"][-1] in "smh" and rule["for"][:-1].isdigit()
    assert len({rule["alert"] for rule in rules}) == len(rules)


def test_the_issue_alerts_are_there() -> None:
    by_name = {rule["alert"]: rule for rule in alert_rules()}
    assert "spades_errors_total" in by_name["SpadesHighErrorRate"]["expr"]
    latency = by_name["SpadesActionLatencyHigh"]["expr"]
    assert "histogram_quantile(0.99" in latency and "spades_action_seconds_bucket" in latency
    stuck = by_name["SpadesNoTablesProgressing"]
    assert "rate(spades_events_appended_total" in stuck["expr"]
    assert 'status="playing"' in stuck["expr"]
    assert stuck["for"] == "10m"
    assert by_name["SpadesReplicaDown"]["expr"].startswith("up{")


def test_kubernetes_prometheus_rule_matches_alerts_yml() -> None:
    rule = load_yaml(KUBERNETES / "monitoring" / "prometheusrule.yaml")
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    assert rule["kind"] == "PrometheusRule"
    assert rule["spec"]["groups"] == load_yaml(DEPLOY / "prometheus" / "alerts.yml")["groups"]


@needs_promtool
def test_promtool_checks_config_and_rules() -> None:
    assert PROMTOOL is not None, "promtool is not installed (make cluster-tools installs it)"
    for command in (
        ["check", "config", "prometheus.yml"],
        ["check", "rules", "alerts.yml"],
    ):
        result = subprocess.run(
            [PROMTOOL, *command],
            cwd=DEPLOY / "prometheus",
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0, result.stdout + result.stderr


@needs_promtool
def test_promtool_rule_unit_tests() -> None:
    """prometheus/alerts_test.yml: each alert fires on made-up series, and stays quiet."""
    assert PROMTOOL is not None, "promtool is not installed (make cluster-tools installs it)"
    result = subprocess.run(
        [PROMTOOL, "test", "rules", "alerts_test.yml"],
        cwd=DEPLOY / "prometheus",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
