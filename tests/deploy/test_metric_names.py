"""The PromQL in the dashboard and the alert rules names only series the server exports."""

from __future__ import annotations

import pytest

from tests.deploy.files import (
    DEPLOY,
    PROMETHEUS_SYNTHETIC,
    alert_rules,
    dashboard_expressions,
    exported_series,
    load_json,
    promql_grouping_labels,
    promql_metric_names,
    promql_selector_labels,
    registry_output,
    server_metrics,
)

# Labels Prometheus attaches to every scraped series.
TARGET_LABELS = {"job", "instance"}


def expressions() -> list[tuple[str, str]]:
    dashboard = load_json(DEPLOY / "grafana/dashboards/spades.json")
    found = [(f"dashboard {where}", expr) for where, expr in dashboard_expressions(dashboard)]
    found += [(f"alert {rule['alert']}", rule["expr"]) for rule in alert_rules()]
    return found


def test_the_extractor_reads_promql_as_meant() -> None:
    expr = (
        "histogram_quantile(0.99, sum by (le, instance) (rate(spades_action_seconds_bucket"
        '{job="spades-server", instance=~"$instance"}[$__rate_interval]))) > 1e-3'
        ' and on () max(spades_tables{status="playing"} offset 5m) > 0'
        ' or absent(up{job="x"}) unless sum(rate(foo:bar_total[5m])) by (code)'
    )
    assert promql_metric_names(expr) == {
        "spades_action_seconds_bucket",
        "spades_tables",
        "up",
        "foo:bar_total",
    }
    assert dict(promql_selector_labels(expr)) == {
        "spades_action_seconds_bucket": {"job", "instance"},
        "spades_tables": {"status"},
        "up": {"job"},
    }
    assert promql_grouping_labels(expr) == {"le", "instance", "code"}


def test_derived_names_agree_with_the_registry_output() -> None:
    """The suffix rules give exactly what prometheus_client prints for unlabelled metrics."""
    unlabelled = [f for f, c in server_metrics().items() if not c._labelnames]
    printed = {name for name in registry_output() if name.startswith(tuple(unlabelled))}
    derived = {name for name in exported_series() if name.startswith(tuple(unlabelled))}
    assert printed, "no unlabelled spades metric printed"
    assert printed == derived


def test_exported_series_include_the_documented_ones() -> None:
    series = exported_series()
    for name in (
        "spades_tables",
        "spades_open_streams",
        "spades_actions_total",
        "spades_action_seconds_bucket",
        "spades_log_append_seconds_bucket",
        "spades_events_appended_total",
        "spades_append_conflicts_total",
        "spades_errors_total",
        "spades_quick_match_waiting",
    ):
        assert name in series
    assert series["spades_tables"] == {"status"}
    assert series["spades_actions_total"] == {"type", "result"}
    assert series["spades_action_seconds_bucket"] == {"le"}
    assert "spades_actions" not in series  # counters are exported with _total only


@pytest.mark.parametrize(("where", "expr"), expressions(), ids=[w for w, _ in expressions()])
def test_expression_names_exported_series(where: str, expr: str) -> None:
    series = exported_series()
    names = promql_metric_names(expr)
    assert names, f"{where}: no metric name found in {expr!r}"
    unknown = names - set(series) - PROMETHEUS_SYNTHETIC
    assert not unknown, f"{where}: {sorted(unknown)} not exported by the server ({expr!r})"


@pytest.mark.parametrize(("where", "expr"), expressions(), ids=[w for w, _ in expressions()])
def test_expression_labels_exist(where: str, expr: str) -> None:
    series = exported_series()
    available = set(TARGET_LABELS)
    for name, labels in promql_selector_labels(expr):
        known = series.get(name, set()) | TARGET_LABELS
        assert labels <= known, f"{where}: {name} has no label(s) {sorted(labels - known)}"
        available |= known
    for name in promql_metric_names(expr):
        available |= series.get(name, set())
    grouping = promql_grouping_labels(expr)
    assert grouping <= available, f"{where}: grouping by unknown {sorted(grouping - available)}"


def test_dashboard_shows_what_the_issue_asks() -> None:
    dashboard = load_json(DEPLOY / "grafana/dashboards/spades.json")
    used = set().union(*(promql_metric_names(e) for _, e in dashboard_expressions(dashboard)))
    for needed in (
        "spades_tables",  # tables by status
        "spades_actions_total",  # actions per second
        "spades_action_seconds_bucket",  # action latency p50/p99
        "spades_errors_total",  # errors by status code
        "spades_open_streams",  # open streams
        "spades_log_append_seconds_bucket",  # log append latency
        "spades_quick_match_waiting",  # quick-match queue
    ):
        assert needed in used, f"the dashboard has no panel on {needed}"
    exprs = [e for _, e in dashboard_expressions(dashboard)]
    for quantile in ("0.5", "0.99"):
        assert any(
            f"histogram_quantile({quantile}," in e and "spades_action_seconds_bucket" in e
            for e in exprs
        ), f"no action latency p{quantile}"
    assert any("by (code)" in e and "spades_errors_total" in e for e in exprs)
    assert any("by (status)" in e and "spades_tables" in e for e in exprs)
