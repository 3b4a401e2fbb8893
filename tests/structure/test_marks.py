"""The marks a developer selects a quick run by: each is registered, each folder or module the
table of marks names exists, and README.md shows the quick run and every mark."""

from __future__ import annotations

import tomllib
from pathlib import Path

from tests.support.marks import MARKS, MARKS_BY_PATH, TESTS, marks_for

REPO = TESTS.parent


def registered_marks() -> set[str]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    lines = config["tool"]["pytest"]["ini_options"]["markers"]
    return {line.split(":")[0].split("(")[0] for line in lines}


def test_every_mark_is_registered() -> None:
    assert set(MARKS) <= registered_marks()
    assert {mark for marks in MARKS_BY_PATH.values() for mark in marks} <= set(MARKS)


def test_every_marked_path_exists() -> None:
    assert [where for where in MARKS_BY_PATH if not (TESTS / where).exists()] == []


def test_a_test_gets_the_marks_of_its_folder_and_module() -> None:
    assert marks_for(TESTS / "cluster" / "test_play.py") == {"cluster", "slow"}
    assert marks_for(TESTS / "web" / "test_browser.py") == {"browser"}
    assert marks_for(TESTS / "web" / "test_grpc_web.py") == set()
    assert marks_for(TESTS / "server" / "test_lobby.py") == set()
    # A folder's name must match whole: tests/faults is not tests/faultsy.
    assert marks_for(Path(TESTS / "faultsy" / "test_x.py")) == set()


def test_readme_shows_the_quick_run_and_every_mark() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert 'pytest -m "not slow and not cluster and not browser"' in readme
    assert [mark for mark in MARKS if f"| `{mark}`" not in readme] == []
