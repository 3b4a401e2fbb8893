"""``spades-play``, the terminal player, driven headless through textual's test pilot: a
person takes a seat beside three house bots and plays a whole hand by pressing buttons."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from textual.widgets import Button, DataTable, Static

from spades.client import SpadesClient
from spades.commands.play import parser, take_seat
from spades.commands.play_screen import PlayScreen
from spades.engine import Bid, Rules
from spades_server.app.server import SpadesServer
from spades_server.ops.settings import Settings

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "terminal"


@pytest_asyncio.fixture
async def address(tmp_path: Path) -> AsyncIterator[str]:
    server = SpadesServer(
        Settings(
            listen="127.0.0.1:0",
            database=str(tmp_path / "tables.db"),
            metrics="off",
            web="off",
            house_bots=4,
        )
    )
    port = await server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        await server.stop()


def enabled(app: PlayScreen, selector: str) -> list[Button]:
    return [
        button
        for button in app.query(selector).results(Button)
        if button.display and not button.disabled
    ]


def shown_clock(app: PlayScreen) -> int:
    """The seconds the screen's turn clock shows ("23 s left")."""
    return int(str(app.query_one("#clock", Static).content).removesuffix(" s left"))


@pytest.mark.asyncio
async def test_a_person_plays_a_whole_hand_by_pressing_buttons(address: str) -> None:
    async with SpadesClient(address) as client:
        table_id = (await client.create_table("Terminal", Rules(max_hands=1))).table_id
        arguments = parser().parse_args(
            ["--table", table_id, "--seat", "south", "--house-bots", "3", "--name", "Pat"]
        )
        ticket = await take_seat(client, arguments)
        assert ticket.seat == 2
        app = PlayScreen(client, ticket)
        played = bids = 0
        clocks: list[int] = []
        async with app.run_test(size=(120, 50)) as pilot:
            for _ in range(3000):
                if app.outcome_text:
                    break
                if app.view is not None and app.asking == "play":
                    legal = set(app.view.legal_cards)
                    cards = [b for b in app.query("#hand Button").results(Button) if b.display]
                    shown = {
                        str(app.slot_cards[button.id or ""]): not button.disabled
                        for button in cards
                    }
                    # The cards the rules allow are enabled, the others dimmed.
                    assert shown == {str(card): card in legal for card in app.view.hand}
                    await pilot.click(f"#{enabled(app, '#hand Button')[0].id}")
                    played += 1
                elif app.asking == "bid":
                    assert app.query_one("#bid-3", Button).display
                    # The turn's clock (30 s a turn by default) counts down on the screen.
                    if not clocks:
                        clocks.append(shown_clock(app))
                        for _ in range(40):  # it ticks twice a second: within 4 s, surely
                            await pilot.pause(0.1)
                            if shown_clock(app) < clocks[0]:
                                break
                        clocks.append(shown_clock(app))
                    await pilot.click("#bid-3")
                    bids += 1
                elif app.asking == "blind":
                    await pilot.click("#blind-no")
                await pilot.pause(0.02)
            assert app.outcome_text.startswith("Match over"), app.outcome_text
            assert played >= 13 and bids >= 1  # clicks; what reached the table is below
            assert 25 <= clocks[0] <= 30 and clocks[0] - 2 <= clocks[1] < clocks[0], clocks
            assert str(app.query_one("#clock", Static).content) == ""  # no turn: no clock
            scores = app.query_one("#scores", DataTable)
            assert scores.row_count == 1
            story = "\n".join(app.query_one("#story").lines)  # type: ignore[attr-defined]
            assert "Trick 13:" in story and "Pat" in story
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            app.save_screenshot("spades-play-score-table.svg", path=str(ARTIFACTS))
    async with SpadesClient(address) as client:
        record = await client.get_record(table_id)
    south = 3  # SEAT_SOUTH
    plays = [event for event in record.events if event.HasField("card_played")]
    assert sum(1 for event in plays if event.card_played.seat == south) == 13
    (bid,) = [
        e.bid_made for e in record.events if e.HasField("bid_made") and e.bid_made.seat == south
    ]
    assert bid.bid.tricks == 3  # the button pressed, not a fallback
    assert not [e for e in record.events if e.HasField("turn_timed_out")]  # nothing by the clock


def test_the_command_line_says_what_it_needs() -> None:
    with pytest.raises(SystemExit):
        parser().parse_args([])
    arguments = parser().parse_args(["--quick-match", "--name", "Sam"])
    assert arguments.quick_match and arguments.name == "Sam"


@pytest.mark.asyncio
async def test_a_refused_seat_is_a_message(address: str) -> None:
    async with SpadesClient(address) as client:
        arguments = parser().parse_args(["--table", "no-such-table"])
        with pytest.raises(Exception, match="no-such-table"):
            await take_seat(client, arguments)


def test_the_spades_command_starts_without_textual() -> None:
    """textual is imported by `spades play` when it runs, not by every subcommand's start."""
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, spades.commands.spades, spades.commands.play; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'textual'))",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert loaded.stdout.strip() == "[]", loaded.stdout


def test_without_textual_the_hint_names_this_installations_pip(tmp_path: Path) -> None:
    # None in sys.modules makes `import textual` fail, as when the extra is not installed.
    ran = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; sys.modules['textual'] = None; "
            "from spades.commands.spades import main; sys.exit(main(['play', '--new-table']))",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert ran.returncode == 2, ran.stderr
    pip = Path(sys.executable).parent / "pip"
    assert f"needs textual, the SDK's terminal extra: {pip} install" in ran.stderr, ran.stderr
    assert "Traceback" not in ran.stderr


async def wait_until(pilot: Any, condition: Callable[[], bool], what: str) -> None:
    """Pause the pilot until ``condition()`` holds (bounded: a stuck screen fails the test)."""
    for _ in range(1200):
        if condition():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"never: {what}")


@pytest.mark.asyncio
async def test_a_person_is_seated_south_unless_south_is_taken(address: str) -> None:
    async with SpadesClient(address) as client:
        table_id = (await client.create_table("South", Rules())).table_id
        arguments = parser().parse_args(["--table", table_id, "--name", "Pat"])
        assert (await take_seat(client, arguments)).seat == 2  # South, as the web seats a person
        arguments = parser().parse_args(["--table", table_id, "--name", "Sam"])
        assert (await take_seat(client, arguments)).seat in (0, 1, 3)  # South is Pat's


@pytest.mark.asyncio
async def test_digits_bid_a_help_line_shows_the_keys_and_leaving_asks_first(address: str) -> None:
    async with SpadesClient(address) as client:
        table_id = (await client.create_table("Keys", Rules(max_hands=1))).table_id
        arguments = parser().parse_args(["--table", table_id, "--house-bots", "3"])
        ticket = await take_seat(client, arguments)
        app = PlayScreen(client, ticket)
        async with app.run_test(size=(120, 50)) as pilot:
            await wait_until(pilot, lambda: app.asking == "bid", "asked to bid")
            assert "Type your bid: 0 is Nil" in str(app.query_one("#help", Static).content)
            await pilot.press("1")  # 1, 10, 11, 12 or 13: it waits for Enter or a digit
            assert app.asking == "bid"
            assert "Your bid: 1_" in str(app.query_one("#prompt", Static).content)
            await pilot.press("enter")
            await wait_until(
                pilot, lambda: app.view is not None and app.view.bids[2] == Bid(1), "the bid of 1"
            )
            await pilot.press("q")
            question = str(app.query_one("#prompt", Static).content)
            assert "Leave the table? A house bot will take your seat" in question
            await pilot.press("n")  # stays
            assert not app.confirming and app.is_running
            await pilot.press("q", "y")
            await wait_until(pilot, lambda: not app.is_running, "the screen closed")
        assert "a house bot takes your seat" in app.left


@pytest.mark.asyncio
async def test_a_quick_match_seat_shows_what_the_table_waits_for(address: str) -> None:
    async with SpadesClient(address) as client:
        ticket = await take_seat(client, parser().parse_args(["--quick-match", "--name", "Q"]))
        app = PlayScreen(client, ticket)
        async with app.run_test(size=(120, 50)) as pilot:
            await pilot.pause()
            prompt = str(app.query_one("#prompt", Static).content)
            assert prompt.startswith("Waiting for the match to start: waiting for 3 players; ")
            assert "house bots fill in " in prompt
            app.exit()
