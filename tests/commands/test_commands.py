"""The SDK's terminal commands as a person runs them: real processes against a real server."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from spades.client import SpadesClient
from spades.engine import CARDS, Rules
from tests.support.processes import ServerProcess, clean_environment
from tests.support.terminal import BIN, command_server

TOKEN = "an-operator-token-for-the-tests-0123456789"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    with command_server(tmp_path, env=clean_environment(SPADES_OPERATOR_TOKEN=TOKEN)) as served:
        yield served


def run(command: str, *args: str, token: str | None = None) -> subprocess.CompletedProcess[str]:
    env = clean_environment() if token is None else clean_environment(SPADES_OPERATOR_TOKEN=token)
    return subprocess.run(
        [str(BIN / command), *args], capture_output=True, text=True, env=env, timeout=90
    )


async def open_table(address: str, name: str, house_bots: int, **rules: int) -> str:
    async with SpadesClient(address) as client:
        created = await client.create_table(name, Rules(**rules))  # type: ignore[arg-type]
        for _ in range(house_bots):
            await client.add_house_bot(created.table_id)
        return created.table_id


@pytest.mark.parametrize("command", ["spades-watch", "spades-tables", "spades-admin"])
def test_every_command_has_help(command: str) -> None:
    ran = run(command, "--help")
    assert ran.returncode == 0, ran.stderr
    assert "--server" in ran.stdout


def test_spades_tables_lists_the_lobby(server: ServerProcess) -> None:
    empty = run("spades-tables", "--server", server.address)
    assert empty.returncode == 0 and empty.stdout.strip() == "No tables."
    waiting = asyncio.run(open_table(server.address, "Quiet corner", 0))
    ran = run("spades-tables", "--server", server.address)
    assert ran.returncode == 0, ran.stderr
    (line,) = ran.stdout.splitlines()
    assert line.startswith(waiting) and "waiting" in line and "Quiet corner" in line
    assert "North free" in line
    finished = run("spades-tables", "--server", server.address, "--status", "finished")
    assert finished.stdout.strip() == "No tables."


def test_spades_tables_marks_rated_tables(server: ServerProcess) -> None:
    async def open_rated() -> str:
        async with SpadesClient(server.address) as client:
            return (await client.create_table("Ladder", Rules(), rated=True)).table_id

    rated = asyncio.run(open_rated())
    plain = asyncio.run(open_table(server.address, "Friendly", 0))
    lines = run("spades-tables", "--server", server.address).stdout.splitlines()
    (rated_line,) = [line for line in lines if line.startswith(rated)]
    (plain_line,) = [line for line in lines if line.startswith(plain)]
    assert "Ladder (rated)" in rated_line and "(rated)" not in plain_line
    listed = json.loads(run("spades-tables", "--server", server.address, "--json").stdout)
    assert {table["table_id"]: table["rated"] for table in listed} == {rated: True, plain: False}


def test_spades_watch_tells_a_match_to_its_end(server: ServerProcess) -> None:
    table_id = asyncio.run(open_table(server.address, "Watched", 4, max_hands=1))
    ran = run("spades-watch", table_id, "--server", server.address)
    assert ran.returncode == 0, ran.stderr
    out = ran.stdout
    assert out.startswith(f"Table {table_id} 'Watched'")
    assert "Hand 1, dealt by" in out
    assert "Trick 13:" in out and "Score:" in out
    assert "Seed revealed:" in out
    assert "(hidden)" not in out  # a spectator is shown no hand
    missing = run("spades-watch", "no-such-table", "--server", server.address)
    assert missing.returncode == 1 and "no-such-table" in missing.stderr


def test_spades_admin_lists_closes_and_creates_with_deals(
    server: ServerProcess, tmp_path: Path
) -> None:
    assert run("spades-admin", "--server", server.address, "list").returncode == 2
    wrong = run("spades-admin", "--server", server.address, "list", token="x" * 32)
    assert wrong.returncode == 1

    # Three house bots: the table waits for a fourth player, so it cannot end on its own before
    # the close (with four, a loaded machine saw the match end first: "already over").
    table_id = asyncio.run(open_table(server.address, "To close", 3))
    closed = run("spades-admin", "--server", server.address, "close", table_id, token=TOKEN)
    assert closed.returncode == 0, closed.stderr
    assert closed.stdout.startswith(f"Closed {table_id}: finished")

    cards = [str(card) for card in CARDS[:52]]
    deals = tmp_path / "deals.json"
    deals.write_text(json.dumps({"deals": [[" ".join(cards[i::4]) for i in range(4)]]}))
    created = run(
        "spades-admin", "--server", server.address, "create-with-deals", str(deals), token=TOKEN
    )
    assert created.returncode == 0, created.stderr
    new_id = created.stdout.split()[1]
    listed = run("spades-admin", "--server", server.address, "list", token=TOKEN)
    lines = {line.split()[0]: line for line in listed.stdout.splitlines()}
    assert "preset deals 1" in lines[new_id]
    assert "ended: closed" in lines[table_id]

    deals.write_text(json.dumps({"deals": [["AS AS"]]}))
    bad = run(
        "spades-admin", "--server", server.address, "create-with-deals", str(deals), token=TOKEN
    )
    assert bad.returncode == 1 and "deal" in bad.stderr.lower()
    deals.write_text("not json")
    unreadable = run(
        "spades-admin", "--server", server.address, "create-with-deals", str(deals), token=TOKEN
    )
    assert unreadable.returncode == 2 and "cannot read" in unreadable.stderr
