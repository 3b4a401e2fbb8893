"""Readers for the files under deploy/, shared by the tests in this folder.

Nothing here needs Docker, Kubernetes or Prometheus: the files are parsed and cross-checked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from prometheus_client import REGISTRY, generate_latest
from prometheus_client.metrics import MetricWrapperBase

import spades_server.ops.metrics

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
KUBERNETES = DEPLOY / "kubernetes"

# Environment variables the deploy files set before the server reads them: the PostgreSQL DSN
# (issue 6, being added) and the operator token (planned). Once config.ENVIRONMENT has them,
# they are checked like every other variable.
PENDING_VARIABLES = {"SPADES_POSTGRES_DSN", "SPADES_OPERATOR_TOKEN"}


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def load_yaml_documents(path: Path) -> list[Any]:
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc]


def load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def compose() -> dict[str, Any]:
    document: dict[str, Any] = load_yaml(DEPLOY / "compose.yaml")
    return document


def kubernetes_objects(folder: Path = KUBERNETES) -> list[dict[str, Any]]:
    """Every object in the folder's manifests (kustomization.yaml excluded)."""
    return [
        doc
        for path in sorted(folder.glob("*.yaml"))
        if path.name != "kustomization.yaml"
        for doc in load_yaml_documents(path)
    ]


def port_of(address: str) -> int:
    """The port of ``host:port``."""
    return int(address.rpartition(":")[2])


# --- Dockerfile -------------------------------------------------------------------------------


@dataclass
class Instruction:
    keyword: str  # upper case: FROM, RUN, COPY, ...
    arguments: str


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[str]:
        return [i.arguments for i in self.instructions if i.keyword == keyword]


def dockerfile_instructions(path: Path) -> list[Instruction]:
    """The instructions, continuation lines joined, comments and blank lines dropped."""
    instructions: list[Instruction] = []
    pending = ""
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if pending and line.startswith("#"):
            continue  # comment lines inside a continued instruction are dropped by Docker too
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        full = pending + line
        pending = ""
        keyword, _, arguments = full.partition(" ")
        instructions.append(Instruction(keyword.upper(), arguments.strip()))
    assert not pending, f"{path}: the last instruction ends with a line continuation"
    return instructions


def dockerfile_stages(path: Path) -> tuple[dict[str, str], list[Stage]]:
    """Global ARG defaults (before the first FROM) and the build stages in order."""
    arguments: dict[str, str] = {}
    stages: list[Stage] = []
    for instruction in dockerfile_instructions(path):
        if instruction.keyword == "FROM":
            words = instruction.arguments.split()
            words = [w for w in words if not w.startswith("--")]
            name = words[2] if len(words) >= 3 and words[1].upper() == "AS" else None
            stages.append(Stage(base=words[0], name=name))
        elif not stages:
            assert instruction.keyword == "ARG", f"{instruction.keyword} before the first FROM"
            key, _, default = instruction.arguments.partition("=")
            arguments[key] = default
        else:
            stages[-1].instructions.append(instruction)
    return arguments, stages


def dockerfile_env(stage: Stage) -> dict[str, str]:
    """The stage's ENV settings (``ENV K=V K2=V2`` form)."""
    env: dict[str, str] = {}
    for arguments in stage.all("ENV"):
        for pair in re.findall(r'(\w+)=("[^"]*"|\S+)', arguments):
            env[pair[0]] = pair[1].strip('"')
    return env


def dockerignore_patterns(path: Path) -> list[tuple[bool, re.Pattern[str]]]:
    """(negated, regex) per line of a .dockerignore, in order."""
    rules = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        pattern = line.removeprefix("!").strip().strip("/")
        regex = ""
        i = 0
        while i < len(pattern):
            if pattern.startswith("**/", i):
                regex, i = regex + "(?:.*/)?", i + 3
            elif pattern.startswith("**", i):
                regex, i = regex + ".*", i + 2
            elif pattern[i] == "*":
                regex, i = regex + "[^/]*", i + 1
            elif pattern[i] == "?":
                regex, i = regex + "[^/]", i + 1
            elif pattern[i] == "[":
                end = pattern.index("]", i)
                regex, i = regex + pattern[i : end + 1], end + 1
            else:
                regex, i = regex + re.escape(pattern[i]), i + 1
        rules.append((negated, re.compile(regex + r"\Z")))
    return rules


def dockerignored(path: str, rules: list[tuple[bool, re.Pattern[str]]]) -> bool:
    """Whether Docker leaves ``path`` (relative to the context) out of the build context.

    As Docker does: the last matching rule wins, and a rule matches a path when it matches the
    path or one of its parent folders.
    """
    parts = path.strip("/").split("/")
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    excluded = False
    for negated, regex in rules:
        if any(regex.match(prefix) for prefix in prefixes):
            excluded = not negated
    return excluded


# --- metrics and PromQL -------------------------------------------------------------------------

# Series every Prometheus adds itself for each target.
PROMETHEUS_SYNTHETIC = {"up"}

_SUFFIXES = {
    "counter": ("_total", "_created"),
    "gauge": ("",),
    "histogram": ("_bucket", "_count", "_sum", "_created"),
    "summary": ("_count", "_sum", "_created"),
}


def server_metrics() -> dict[str, MetricWrapperBase]:
    """The collectors spades_server.ops.metrics defines, by family name."""
    found: dict[str, MetricWrapperBase] = {}
    for value in vars(spades_server.ops.metrics).values():
        if isinstance(value, MetricWrapperBase):
            for family in value.describe():
                found[family.name] = value
    return found


def registry_output() -> dict[str, set[str]]:
    """The series the default registry prints now (what /metrics serves), with their labels."""
    series: dict[str, set[str]] = {}
    for line in generate_latest(REGISTRY).decode().splitlines():
        if line and not line.startswith("#"):
            match = re.match(r"([A-Za-z_:][\w:]*)(?:\{(.*)\})?\s", line)
            assert match, line
            labels = re.findall(r'([A-Za-z_]\w*)="', match.group(2) or "")
            series.setdefault(match.group(1), set()).update(labels)
    return series


def exported_series() -> dict[str, set[str]]:
    """Every series name the server exposes at /metrics, with the label names it carries.

    The spades_* names are derived from the collectors in spades_server.ops.metrics with the
    suffixes prometheus_client gives each type (so labelled metrics that have no child yet are
    included); the rest of the default registry (process_*, python_*) is read from its output.
    """
    series = registry_output()
    for collector in server_metrics().values():
        for family in collector.describe():
            name, kind = family.name, family.type
            assert kind in _SUFFIXES, f"{name}: metric type {kind!r} not handled by this test"
            labels = set(collector._labelnames)
            for suffix in _SUFFIXES[kind]:
                extra = {"le"} if suffix == "_bucket" else set()
                series.setdefault(name + suffix, set()).update(labels | extra)
    return series


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")
_KEYWORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring"}
_KEYWORDS |= {"group_left", "group_right", "inf", "nan", "atan2"}
_LABEL_MATCH = re.compile(r"([A-Za-z_]\w*)\s*(?:=~|!~|!=|=)")


def _without_strings(expr: str) -> str:
    return _STRING.sub('""', expr)


def promql_metric_names(expr: str) -> set[str]:
    """The metric (series) names an expression selects.

    Strings, label matchers, ranges, grouping clauses and Grafana variables are removed first;
    then every identifier not followed by ``(`` (a function or aggregation) and not a keyword is
    a metric name.
    """
    text = _without_strings(expr)
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = _GROUPING.sub(" ", text)
    text = re.sub(r"\$\{[^}]*\}|\$\w+", " ", text)
    names = set()
    for match in re.finditer(r"(?<![\w.:])([A-Za-z_:][\w:]*)(\s*\()?", text):
        word, call = match.groups()
        if call is None and word.lower() not in _KEYWORDS:
            names.add(word)
    return names


def promql_selector_labels(expr: str) -> Iterator[tuple[str, set[str]]]:
    """(metric name, label names matched in its braces) for each ``name{...}`` selector."""
    text = _without_strings(expr)
    for match in re.finditer(r"(?<![\w.:])([A-Za-z_:][\w:]*)\s*\{([^}]*)\}", text):
        yield match.group(1), set(_LABEL_MATCH.findall(match.group(2)))


def promql_grouping_labels(expr: str) -> set[str]:
    """Label names in by/without/on/ignoring/group_* clauses."""
    labels: set[str] = set()
    for inner in _GROUPING.findall(_without_strings(expr)):
        labels.update(word.strip() for word in inner.split(",") if word.strip())
    return labels


def dashboard_expressions(dashboard: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(where, PromQL) for every panel target (rows' nested panels too) and templating query."""

    def panels(items: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for panel in items:
            yield panel
            yield from panels(panel.get("panels", []))

    for panel in panels(dashboard.get("panels", [])):
        for target in panel.get("targets", []):
            if "expr" in target:
                yield f"panel {panel.get('title')!r} {target.get('refId')}", target["expr"]
    for variable in dashboard.get("templating", {}).get("list", []):
        query = variable.get("query")
        text = query.get("query") if isinstance(query, dict) else query
        if variable.get("type") == "query" and text:
            inner = re.fullmatch(r"\s*label_values\((.*),\s*\w+\)\s*", text)
            yield f"variable {variable.get('name')!r}", inner.group(1) if inner else text


def alert_rules() -> list[dict[str, Any]]:
    groups = load_yaml(DEPLOY / "prometheus" / "alerts.yml")["groups"]
    return [rule for group in groups for rule in group["rules"]]
