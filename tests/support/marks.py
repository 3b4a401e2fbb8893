"""The marks that let a developer run a fast subset: ``slow``, ``faults``, ``browser`` and
``cluster`` (registered in pyproject.toml), given here by where a test lives, so a new test in a
marked folder is marked without a word. A test elsewhere that is slow says so itself
(``@pytest.mark.slow`` or a module's ``pytestmark``).

``make test`` runs everything; ``pytest -m "not slow and not cluster and not browser"`` is the
quick run (README.md, "Running a part of the tests").
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]

#: The marks of every test under a folder or in a module (paths relative to tests/).
MARKS_BY_PATH: Mapping[str, tuple[str, ...]] = {
    # The deployment's own daemons, started and broken (make cluster-tools): minutes.
    "cluster": ("cluster", "slow"),
    # Server processes killed, disks filled, writes failed; several minutes together.
    "faults": ("faults", "slow"),
    "integrity": ("faults",),
    "tournaments/test_tournament_sigkill.py": ("faults", "slow"),
    # Debian's chromium through Playwright (make browser, make web).
    "web/test_browser.py": ("browser",),
    "web/test_rating_pages.py": ("browser", "slow"),
    "web/test_tournament_pages.py": ("browser",),
    # Replicas on one PostgreSQL log, one of them killed (README: a fault suite).
    "replicas": ("faults", "slow"),
    # Real processes, make targets and whole matches played by bots or commands.
    "first_contact": ("slow",),
    "demo": ("slow",),
    "arena": ("slow",),
    "node_client": ("slow",),
    # The commands as a person runs them: a process for every call, most against a server
    # process (test_spades_cli.py starts one for each of its 54 levels' --help).
    "commands": ("slow",),
}

MARKS = ("slow", "faults", "browser", "cluster")


def marks_for(path: Path) -> set[str]:
    """The marks a test in ``path`` gets from where it lives."""
    relative = path.resolve().relative_to(TESTS).as_posix()
    return {
        mark
        for where, marks in MARKS_BY_PATH.items()
        if relative == where or relative.startswith(f"{where}/")
        for mark in marks
    }


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for mark in sorted(marks_for(item.path)):
            item.add_marker(mark)
