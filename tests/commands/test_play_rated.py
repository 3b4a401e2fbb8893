"""A person plays rated in the terminal: ``spades play`` takes the seat with the session that
``spades account sign-in`` saved (so the seat is the person's account, at a rated table), and
after the match the screen and the command's last line say the rating change; the opponents,
two real ``spades bot`` processes with one bot account's key, log theirs."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from textual.widgets import Button, Static

from spades.bot import play_match
from spades.client import SpadesClient, rating_change_text
from spades.commands.play import credential, parser, run, take_seat
from spades.commands.play_screen import PlayScreen
from spades.engine import Rules
from spades_bots.registry import bot_class
from tests.support.processes import clean_environment
from tests.support.servers import running_server

BIN = Path(sys.executable).parent
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "terminal"
PASSWORD = "a long and secret passphrase"


@pytest_asyncio.fixture
async def address(tmp_path: Path) -> AsyncIterator[str]:
    async with running_server(tmp_path / "tables.db") as server:
        yield f"127.0.0.1:{server.port}"


async def click_through(app: PlayScreen, pilot: object) -> None:
    """Play the person's seat by buttons until the match is over and its rating is read."""
    for _ in range(3000):
        if app.outcome_text and app.rating_text:
            return
        if app.view is not None and app.asking == "play":
            button = next(
                b for b in app.query("#hand Button").results(Button) if b.display and not b.disabled
            )
            await pilot.click(f"#{button.id}")  # type: ignore[attr-defined]
        elif app.asking == "bid":
            await pilot.click("#bid-3")  # type: ignore[attr-defined]
        elif app.asking == "blind":
            await pilot.click("#blind-no")  # type: ignore[attr-defined]
        await pilot.pause(0.02)  # type: ignore[attr-defined]
    raise AssertionError(f"the match did not end: {app.outcome_text!r}")


@pytest.mark.asyncio
async def test_a_signed_in_person_plays_rated_and_sees_the_rating_change(
    address: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with SpadesClient(address) as client:
        person = await client.sign_up("Pat", PASSWORD)
        partner = await client.create_account("Partner Bot", kind="bot")
        rivals = await client.create_account("Rival Bot", kind="bot")
        table_id = (await client.create_table("Rated", Rules(max_hands=1), rated=True)).table_id
    # What `spades account sign-in` leaves: the session in the config (here the environment).
    monkeypatch.setenv("SPADES_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv("SPADES_SESSION_TOKEN", person.token)
    arguments = parser().parse_args(["--table", table_id])
    assert credential(arguments) == person.token
    assert credential(parser().parse_args(["--table", table_id, "--anonymous"])) == ""
    # The opponents: two real `spades bot` processes, one bot account on both seats.
    env = clean_environment(SPADES_ACCOUNT_KEY=rivals.key, SPADES_SERVER=address)
    bots = [
        subprocess.Popen(
            [str(BIN / "spades"), "bot", "--table", table_id, "--seat", seat, "--bot", "random"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for seat in ("east", "west")
    ]
    async with (
        SpadesClient(address, account_key=credential(arguments)) as client,
        SpadesClient(address, account_key=partner.key) as partner_client,
    ):
        ticket = await take_seat(client, arguments)
        assert ticket.seat == 2  # south
        north = await partner_client.join_table(table_id, "x", seat="north")
        partnering = asyncio.create_task(
            play_match(partner_client, bot_class("heuristic")(), north.token)
        )
        app = PlayScreen(client, ticket)
        async with app.run_test(size=(120, 50)) as pilot:
            await click_through(app, pilot)
            prompt = str(app.query_one("#prompt", Static).content)
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            app.save_screenshot("spades-play-rated.svg", path=str(ARTIFACTS))
        await partnering
        table = await client.get_table(table_id)
        change = await client.rating_change(table_id, person.account.account_id)
    # The seat was the person's account, and the screen says its change as the server has it.
    south = table.message.seats[2]
    assert south.account_id == person.account.account_id and south.player_name == "Pat"
    assert change is not None and change.after.matches == 1
    assert app.rating_text == rating_change_text(change)
    assert app.rating_text.startswith("Rating ") and app.rating_text in prompt
    for process in bots:
        output, _ = process.communicate(timeout=60)
        assert process.returncode == 0, output
        assert f"table {table_id} rated: Rating " in output, output


def test_rated_play_needs_an_account(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SPADES_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.delenv("SPADES_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("SPADES_ACCOUNT_KEY", raising=False)
    assert run(parser().parse_args(["--quick-match", "--rated", "--server", "127.0.0.1:1"])) == 2
