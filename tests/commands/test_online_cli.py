"""``spades bots online`` and series of matches from the command line: ``spades bot --config``
(a real process) shows its bot online with the manifest its config declares, declines a series
longer than its ``[challenges] max_series`` (reason ``series``), and plays a series to the end,
whose result ``spades challenge show`` prints."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.processes import ServerProcess
from tests.support.terminal import User, bot_process, command_server, registered

#: Seconds a bot process has to connect, answer or finish a short series.
WAIT = 180


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with command_server(tmp_path_factory.mktemp("server")) as served:
        yield served


def until(check: Callable[[], Any], what: str) -> Any:
    """Ask again until ``check`` answers something true (a bounded wait on a state)."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"still not {what} after {WAIT} s")


def online(user: User) -> dict[str, dict[str, Any]]:
    return {bot["name"]: bot for bot in user.json("bots", "online")}


def test_a_bot_online_declines_a_long_series_and_plays_a_short_one(
    server: ServerProcess, tmp_path: Path
) -> None:
    owl = registered(server, tmp_path, "Night Owl")
    lark = registered(server, tmp_path, "Lark")
    # The account declares series of up to 5; its runner's config takes at most 2.
    declared = owl.json("account", "manifest", "--max-series", "5")
    assert declared["manifest"]["max_series"] == 5
    assert owl.json("bots", "online") == []
    assert owl.ok("bots", "online").strip() == "No bot is online."
    bots: list[subprocess.Popen[str]] = []
    try:
        bots.append(bot_process(owl, tmp_path, "[challenges]\nmax_series = 2\n"))
        # Lark's config declares its manifest (series of up to 3) at start.
        bots.append(
            bot_process(lark, tmp_path, "[challenges]\nmax_series = 3\n[manifest]\nplayers = [4]\n")
        )
        listed = until(
            lambda: (
                (found := online(owl)).keys() == {"Night Owl", "Lark"}
                and found["Lark"]["manifest"]["max_series"] == 3
                and found
            ),
            "both online",
        )
        assert listed["Night Owl"]["manifest"]["max_series"] == 5
        assert listed["Night Owl"]["ratings"] == []
        assert "Night Owl  (4 players, to 100-1000, series up to 5)  unrated" in owl.ok(
            "bots", "online"
        )

        # Longer than the manifest: refused by the server; than the config: declined.
        lark.refused("SERIES_NOT_DECLARED", "challenge", "create", "Night Owl", "--series", "6")
        lark.refused(
            "SERIES_LENGTH_OUT_OF_RANGE", "challenge", "create", "Night Owl", "--series", "100"
        )
        long = lark.json("challenge", "create", "Night Owl", "--series", "3", "--max-hands", "1")
        assert (long["state"], long["series_length"]) == ("pending", 3)
        declined = until(
            lambda: (
                (shown := lark.json("challenge", "show", long["challenge_id"]))["state"]
                == "declined"
                and shown
            ),
            "declined",
        )
        assert declined["decline_reason"] == "series"

        short = lark.json("challenge", "create", "Night Owl", "--series", "2", "--max-hands", "1")
        over = until(
            lambda: (
                len((shown := lark.json("challenge", "show", short["challenge_id"]))["series"]) == 2
                and shown
            ),
            "a series played",
        )
    finally:
        for bot in bots:
            bot.terminate()
            bot.communicate(timeout=60)
    tables = [match["table_id"] for match in over["series"]]
    assert len(set(tables)) == 2 and over["table_id"] == tables[-1]
    assert all(len(match["scores"]) == 2 for match in over["series"])
    wins = over["series_wins"]
    assert sum(wins) == sum(1 for match in over["series"] if match["winning_side"])
    line = lark.ok("challenge", "show", short["challenge_id"])
    assert f"series of 2 over, {wins[0]}-{wins[1]}" in line
    # Both bots stopped: no one online.
    until(lambda: lark.json("bots", "online") == [], "offline")
