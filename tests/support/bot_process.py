"""Real ``spades-bot`` processes, with their output in files the tests read."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from tests.support.processes import clean_environment

SPADES_BOT = Path(sys.executable).with_name("spades-bot")
#: A seat token: ``<table id (20 hex)>.<secret (32 url-safe characters)>`` (tokens.py).
SEAT_TOKEN_PATTERN = r"[0-9a-f]{20}\.[A-Za-z0-9_-]{32}"


def start_bot(output: Path, *args: str) -> subprocess.Popen[bytes]:
    with output.open("w") as file:
        return subprocess.Popen(
            [str(SPADES_BOT), *args],
            stdout=file,
            stderr=subprocess.STDOUT,
            env=clean_environment(),
        )


def wait_for_text(path: Path, text: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while text not in path.read_text():
        if time.monotonic() > deadline:
            raise AssertionError(f"no {text!r} in {timeout} s: {path.read_text()}")
        time.sleep(0.05)
