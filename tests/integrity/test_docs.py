"""The README and docs/event-log-integrity.md say what the code does: commands, metrics, files."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import REGISTRY

from spades_server.app import integrity
from spades_server.eventlog.sqlite import marker_path
from spades_server.ops import metrics
from tests.integrity import logs

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOC = (ROOT / "docs" / "event-log-integrity.md").read_text(encoding="utf-8")


def test_every_command_is_documented_and_runs() -> None:
    for command in integrity.COMMANDS:
        assert f"spades-server {command} " in README
        helped = logs.run_command(command, "--help")
        assert helped.returncode == 0, helped
    assert "spades-server check --quick" in README
    assert "--quick" in logs.run_command("check", "--help").stdout


def test_the_metrics_named_exist() -> None:
    metrics.LOG_WRITABLE.set(1)  # the gauge's value before any failure
    for name in ("spades_log_writable", "spades_log_write_failures_total"):
        assert name in README and name in DOC
        assert REGISTRY.get_sample_value(name) is not None, name


def test_the_marker_file_is_named_as_the_code_names_it() -> None:
    suffix = marker_path("DATABASE").name.removeprefix("DATABASE")
    assert f"DATABASE{suffix}" in README and f"DATABASE{suffix}" in DOC
