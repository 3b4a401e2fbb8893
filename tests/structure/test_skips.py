"""Skips under CI: the hook that fails them (tests/support/skips.py) run on a real pytest, and
README.md's list of the skips CI allows kept the same as ALLOWED_SKIPS."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.skips import ALLOWED_SKIPS

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"


def readme_allowed() -> set[str]:
    """The names README.md's "Skipped tests" allows (none when it says "none")."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("### Skipped tests\n", 1)[1].split("\n### ", 1)[0]
    if "Skips allowed under CI: none." in section:
        return set()
    return set(re.findall(r"^- `([\w-]+)`: \S", section, re.MULTILINE))


def test_readme_lists_exactly_the_allowed_skips() -> None:
    assert readme_allowed() == set(ALLOWED_SKIPS)


def test_every_allowed_skip_mark_names_an_allowance_and_each_is_used() -> None:
    used = {
        name
        for path in TESTS.rglob("test_*.py")
        if path != Path(__file__).resolve()  # (its example suite names a wrong one)
        for name in re.findall(r"allowed_skip\(\"([\w-]+)\"\)", path.read_text(encoding="utf-8"))
    }
    assert used == set(ALLOWED_SKIPS)


SKIPPING = """
import pytest

def test_skips_here() -> None:
    pytest.skip("nothing to run against")

@pytest.mark.allowed_skip("no-such-allowance")
def test_skips_with_an_unknown_allowance() -> None:
    pytest.skip("still nothing")

@pytest.mark.xfail(reason="known")
def test_expected_to_fail() -> None:
    raise AssertionError

def test_passes() -> None:
    pass
"""


def run_pytest(folder: Path, ci: str | None) -> subprocess.CompletedProcess[str]:
    """pytest on ``folder`` with the hook as its only plugin, CI set to ``ci`` (or unset)."""
    environment = {key: value for key, value in os.environ.items() if key != "CI"}
    if ci is not None:
        environment["CI"] = ci
    return subprocess.run(
        [
            *(
                sys.executable,
                "-m",
                "pytest",
                "-p",
                "tests.support.skips",
                "-p",
                "no:cacheprovider",
            ),
            *("-c", str(folder / "pytest.ini"), "--rootdir", str(folder), "-rA", str(folder)),
        ],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def suite(folder: Path, *modules: str) -> Path:
    """A folder of test modules (``modules``' texts) with a pytest.ini of its own."""
    (folder / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    for number, text in enumerate(modules):
        (folder / f"test_module_{number}.py").write_text(text)
    return folder


WHOLE_MODULE = 'import pytest\npytest.importorskip("no_such_module_anywhere")\n'


def test_under_ci_every_skip_fails_saying_why(tmp_path: Path) -> None:
    ran = run_pytest(suite(tmp_path, SKIPPING), "true")
    assert ran.returncode == 1, ran.stdout
    summary = ran.stdout.strip().splitlines()[-1]
    assert "2 failed, 1 passed, 1 xfailed" in summary, ran.stdout
    assert "skipped under CI (CI='true')" in ran.stdout
    assert "nothing to run against" in ran.stdout
    assert "allowed_skip('no-such-allowance') names no entry of ALLOWED_SKIPS" in ran.stdout


def test_under_ci_a_module_skipped_as_it_is_collected_fails(tmp_path: Path) -> None:
    ran = run_pytest(suite(tmp_path, WHOLE_MODULE), "1")
    assert ran.returncode == 2, ran.stdout  # an error while collecting
    assert "skipped under CI (CI='1')" in ran.stdout and "no_such_module_anywhere" in ran.stdout


@pytest.mark.parametrize("ci", [None, "", "false", "0"])
def test_elsewhere_a_skip_stays_a_skip(tmp_path: Path, ci: str | None) -> None:
    ran = run_pytest(suite(tmp_path, SKIPPING, WHOLE_MODULE), ci)
    assert ran.returncode == 0, ran.stdout
    assert "3 skipped" in ran.stdout.strip().splitlines()[-1], ran.stdout
