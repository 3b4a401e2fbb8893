"""promtool on deploy/prometheus/: the rules load, and their unit tests pass.

Never skipped: `make test` installs promtool (make cluster-tools, Debian's prometheus); without
it these fail, saying how to install it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

PROMETHEUS = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"


def promtool(*arguments: str) -> subprocess.CompletedProcess[str]:
    found = shutil.which("promtool")
    if found is None:
        pytest.fail("promtool is not installed: make cluster-tools installs it (as root)")
    return subprocess.run(
        [found, *arguments], cwd=PROMETHEUS, capture_output=True, text=True, timeout=60
    )


def test_promtool_checks_the_rules() -> None:
    result = promtool("check", "rules", "alerts.yml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 5 rules found" in result.stdout, result.stdout


def test_promtool_runs_the_rules_unit_tests() -> None:
    result = promtool("test", "rules", "alerts_test.yml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout, result.stdout
