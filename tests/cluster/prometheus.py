"""Asking the cluster's real Prometheus: instant queries, and the dashboard's panel queries
with Grafana's variables filled in as Grafana would."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

DASHBOARDS = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "dashboards"


def query(prometheus: str, expression: str) -> list[dict[str, Any]]:
    """The instant vector ``expression`` evaluates to now (``prometheus``: its base URL)."""
    url = f"{prometheus.rstrip('/')}/api/v1/query?" + urllib.parse.urlencode({"query": expression})
    with urllib.request.urlopen(url, timeout=10) as response:
        answer = json.load(response)
    assert answer["status"] == "success", answer
    result: list[dict[str, Any]] = answer["data"]["result"]
    return result


def panel_queries(rate_interval: str) -> list[tuple[str, str]]:
    """(dashboard/panel title, expression) of every panel target of every dashboard, with
    ``$instance`` at its "All" value and ``$__rate_interval`` at ``rate_interval``."""
    queries = []
    for path in sorted(DASHBOARDS.glob("*.json")):
        dashboard = json.loads(path.read_text(encoding="utf-8"))
        every = {
            variable["name"]: variable.get("allValue", ".*")
            for variable in dashboard.get("templating", {}).get("list", [])
        }
        for panel in dashboard["panels"]:
            for target in panel.get("targets", []):
                expression = target["expr"].replace("$__rate_interval", rate_interval)
                for name, value in every.items():
                    expression = expression.replace(f"${name}", value)
                assert "$" not in expression, expression
                queries.append((f"{path.stem}/{panel['title']}", expression))
    return queries
