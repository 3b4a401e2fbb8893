"""``spades account games`` as a person runs it, a real process against a real server process:
the signed-in person's finished matches (the default), anyone's by name, the filters, ``--json``,
and each refusal's reason code; the rated match's line says the rating change as the server has
it."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from spades.bot import play_match
from spades.client import SpadesClient, rating_change_text
from spades.engine import Rules
from spades_bots.registry import bot_class
from tests.support.processes import ServerProcess, clean_environment
from tests.support.terminal import command_server

BIN = Path(sys.executable).parent
PASSWORD = "a long and secret passphrase"
ONE_HAND = Rules(max_hands=1)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with command_server(tmp_path_factory.mktemp("server")) as served:
        yield served


async def play(address: str, sides: list[tuple[str, str]], *, rated: bool) -> str:
    """One one-hand match: each (key, seats) plays its seats with the random bot."""
    async with SpadesClient(address) as lobby:
        table_id = (await lobby.create_table("cli games", ONE_HAND, rated=rated)).table_id
    clients = [SpadesClient(address, account_key=key) for key, _ in sides]
    try:
        plays = []
        for client, (_, seats) in zip(clients, sides, strict=True):
            for seat in seats.split(","):
                ticket = await client.join_table(table_id, "x", seat=seat)
                plays.append(play_match(client, bot_class("random")(), ticket.token))
        async with asyncio.timeout(120):
            await asyncio.gather(*plays)
    finally:
        for client in clients:
            await client.close()
    return table_id


async def matches(address: str) -> dict[str, str]:
    """Pat (a person, its session as the key) plays a rated and an unrated match against the
    bot Alpha; returns the tables and Pat's rated change, once both are listed and rated."""
    async with SpadesClient(address) as client:
        pat = await client.sign_up("Pat", PASSWORD)
        alpha = await client.create_account("Alpha", kind="bot")
    sides = [(pat.token, "north,south"), (alpha.key, "east,west")]
    rated = await play(address, sides, rated=True)
    unrated = await play(address, sides, rated=False)
    async with SpadesClient(address) as client:
        change = await client.rating_change(rated, pat.account.account_id)
        assert change is not None
        async with asyncio.timeout(30):  # the lobby lists a match a moment after it ends
            while len((await client.games("Pat")).games) < 2:
                await asyncio.sleep(0.05)
    return {"rated": rated, "unrated": unrated, "change": rating_change_text(change)}


def spades(
    config: Path, address: str, *args: str, password: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "spades"), "account", *args],
        input="" if password is None else password + "\n",
        capture_output=True,
        text=True,
        env=clean_environment(SPADES_CONFIG=str(config), SPADES_SERVER=address),
        timeout=90,
    )


def test_spades_account_games(server: ServerProcess, tmp_path: Path) -> None:
    made = asyncio.run(matches(server.address))
    config = tmp_path / "config.toml"
    # Not signed in, no account named: a usage error.
    nobody = spades(config, server.address, "games")
    assert nobody.returncode == 2 and "sign in" in nobody.stderr
    assert spades(config, server.address, "sign-in", "Pat", password=PASSWORD).returncode == 0
    mine = spades(config, server.address, "games")
    assert mine.returncode == 0, mine.stderr
    lines = mine.stdout.splitlines()
    assert len(lines) == 2  # newest first: the unrated match, then the rated one
    assert made["unrated"] in lines[0] and "unrated" in lines[0] and "vs Alpha (bot)" in lines[0]
    assert made["rated"] in lines[1] and "rated partnership" in lines[1]
    assert made["change"] in lines[1]
    assert lines[1].split()[2] in ("won", "lost")
    # The filters, anyone's games by name, and --json.
    rated = spades(config, server.address, "games", "--rated")
    assert rated.stdout.splitlines() == [lines[1]]
    against = spades(config, server.address, "games", "alpha", "--opponent", "Pat", "--json")
    document = json.loads(against.stdout)
    assert [game["table_id"] for game in document["games"]] == [made["unrated"], made["rated"]]
    assert document["games"][1]["rating_change"]["account_id"] == document["account_id"]
    none = spades(config, server.address, "games", "--opponents", "people")
    assert none.stdout.strip() == "No finished games."
    paged = spades(config, server.address, "games", "--page-size", "1")
    assert paged.stdout.splitlines()[0] == lines[0] and "--page-token" in paged.stdout
    # Refusals, each with its reason code (exit 1).
    for args, code in (
        (("--opponent", "Nobody"), "ACCOUNT_NOT_FOUND"),
        (("--page-token", "bogus"), "INVALID_PAGE_TOKEN"),
        (("--opponent", "Pat"), "INVALID_GAMES_FILTER"),
        (("--page-size", "500"), "INVALID_PAGE_SIZE"),
    ):
        refused = spades(config, server.address, "games", *args)
        assert refused.returncode == 1 and f" {code}: " in refused.stderr, refused.stderr
    token = paged.stdout.split("--page-token ")[1].strip()
    mismatch = spades(config, server.address, "games", "--rated", "--page-token", token)
    assert mismatch.returncode == 1 and " PAGE_TOKEN_MISMATCH: " in mismatch.stderr
