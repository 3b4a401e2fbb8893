"""``spades-bot`` started before its server waits for it, and a quick match ends.

The first connection is retried with bounded back-off and a message, as reconnects are; a
quick-match table plays the default rules capped at 25 hands (RULES.md section 1), so a random
bot's match ends even though random play rarely reaches 500.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.support.bot_process import SPADES_BOT, start_bot, wait_for_text
from tests.support.processes import (
    clean_environment,
    free_port,
    spades_server,
    unanswered_address,
)

MATCH_TIMEOUT = 90


def test_an_unreachable_server_is_retried_then_given_up() -> None:
    ran = subprocess.run(
        [str(SPADES_BOT), "--server", "127.0.0.1:1", "--quick-match", "--retry-for", "1"],
        capture_output=True,
        text=True,
        env=clean_environment(),
        timeout=30,
    )
    assert ran.returncode == 1
    retries = [line for line in ran.stderr.splitlines() if "cannot reach 127.0.0.1:1" in line]
    assert len(retries) >= 2, ran.stderr
    assert "retrying in" in retries[0] and "for up to 1 s" in retries[0]
    assert "gave up after 1 s" in ran.stderr.splitlines()[-1]
    assert "Traceback" not in ran.stderr


def test_a_bot_started_first_waits_and_its_quick_match_ends(tmp_path: Path) -> None:
    address = f"127.0.0.1:{free_port()}"
    output = tmp_path / "bot.out"
    bot = start_bot(output, "--server", address, "--quick-match", "--bot", "random")
    try:
        wait_for_text(output, f"cannot reach {address}", 20)
        env = clean_environment(
            SPADES_LISTEN=address,
            SPADES_METRICS="off",
            SPADES_DATABASE=str(tmp_path / "spades.db"),
            # House bots complete the table at once: one random bot plays three heuristics.
            SPADES_QUICK_MATCH_FILL_AFTER="0.1",
        )
        with spades_server(tmp_path / "server.log", env=env):
            assert bot.wait(MATCH_TIMEOUT) == 0, output.read_text()
    finally:
        if bot.poll() is None:
            bot.kill()
            bot.wait(10)
    text = output.read_text()
    assert "seated at table" in text
    # The queue said what the table waited for (the house bots' wait is 0.1 s here).
    assert re.search(
        r"seated at table \S+ as \w+; waiting for 3 players; house bots fill in 0 s", text
    )
    hands = [int(number) for number in re.findall(r"INFO table \S+: hand (\d+): bids", text)]
    assert hands and max(hands) <= 25, hands
    assert "match over" in text


def test_a_server_that_is_not_there_is_said_on_the_first_line(tmp_path: Path) -> None:
    """Before the retries (whose call alone takes seconds to fail), the first line says no
    server answers and what to do."""
    output = tmp_path / "bot.out"
    with unanswered_address() as address:
        bot = start_bot(output, "--server", address, "--quick-match")
        try:
            wait_for_text(output, "\n", 30)
        finally:
            bot.kill()
            bot.wait(10)
    first = output.read_text().splitlines()[0]
    assert f"ERROR nothing answers at {address}" in first, first
    assert "is spades-server running there?" in first and "up to 120 s (--retry-for)" in first


def test_retry_for_zero_gives_up_on_a_server_that_is_not_there() -> None:
    with unanswered_address() as address:
        ran = subprocess.run(
            [str(SPADES_BOT), "--server", address, "--quick-match", "--retry-for", "0"],
            capture_output=True,
            text=True,
            env=clean_environment(),
            timeout=60,
        )
    assert ran.returncode == 1
    (line,) = ran.stderr.splitlines()
    assert f"UNAVAILABLE: nothing answers at {address}" in line and line.endswith("gave up")
    assert "cannot reach" not in ran.stderr  # no retry was made
