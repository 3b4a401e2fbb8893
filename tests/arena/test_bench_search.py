"""``make bench-search``: the issue's benchmark command, with arguments one can replace.

Read from ``make --dry-run``: the command the target would run (nothing is played here)."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TEAMS = ["--team-a", "search", "--team-b", "heuristic"]


def last_command(*arguments: str) -> list[str]:
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    ran = subprocess.run(
        [make, "--dry-run", "--no-print-directory", "bench-search", *arguments],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return shlex.split(ran.stdout.splitlines()[-1])


def test_bench_search_plays_the_search_bot_against_the_heuristic_a_thousand_times() -> None:
    words = last_command()
    assert words[0] == ".venv/bin/spades-arena"
    assert words[1:] == [*TEAMS, "--matches", "1000", "--jobs", "2"]


def test_search_args_replace_the_default_arguments() -> None:
    words = last_command("SEARCH_ARGS=--matches 20 --seed s1")
    assert words[1:] == [*TEAMS, "--matches", "20", "--seed", "s1"]
