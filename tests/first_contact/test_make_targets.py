"""``make run`` installs only the runtime; ``make test`` adds the toolchain and shows skip reasons.

Read from ``make --dry-run --always-make``: the commands each target would run from scratch.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: The SDK with its terminal extra: `spades-play` works beside `make run` with nothing more.
LOCAL_DISTRIBUTIONS = ("'./client_sdk[terminal]'", "./server", "./bots")


def planned(target: str) -> list[str]:
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    ran = subprocess.run(
        # --no-print-directory: under `make test` this make is a sub-make, which would print
        # "Entering/Leaving directory" lines around the plan.
        [make, "--dry-run", "--always-make", "--no-print-directory", target],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return ran.stdout.splitlines()


def installs(lines: list[str]) -> list[str]:
    return [line for line in lines if "pip install" in line and "--upgrade pip" not in line]


def test_make_run_installs_the_runtime_only() -> None:
    lines = planned("run")
    (install,) = installs(lines)
    assert "requirements-dev.txt" not in install
    assert "--constraint deploy/constraints.txt" in install
    # The local distributions by path: never a same-named package from an index.
    for distribution in LOCAL_DISTRIBUTIONS:
        assert f"-e {distribution}" in install
    assert lines[-1].startswith(".venv/bin/spades-server ")


def test_make_test_adds_the_toolchain_and_prints_skip_reasons() -> None:
    lines = planned("test")
    runtime, toolchain = installs(lines)
    assert "requirements-dev.txt" not in runtime
    assert "-r requirements-dev.txt" in toolchain and "--constraint" in toolchain
    # The whole suite in two processes side by side, split by marks so that no test is left
    # out (the slow, fault and cluster suites in the background, into a log printed after), then the
    # engine's tests again on the pure-Python engine (the reference, beside the compiled
    # build): each says why a test was skipped, and each one's failure fails the target.
    beside, rest, pure = [line for line in lines if "-m pytest" in line]
    # In the background, with SIGINT back (a shell ignores it there): tests send it to processes.
    assert beside.startswith("env --default-signal=INT .venv/bin/python -m pytest")
    assert '-rs -m "slow or faults or cluster" >var/test-slow.log 2>&1 &' in beside
    assert '-rs -m "not (slow or faults or cluster)" || status=1' in rest
    assert pure.strip().startswith("SPADES_ENGINE=python ") and "tests/engine" in pure.split()
    assert "-rs" in pure.split()
    plan = "\n".join(lines)
    assert "wait $beside || status=1;" in plan and "cat var/test-slow.log;" in plan
    assert lines[-1] == "exit $status"
