"""The web client in a real browser: Debian's chromium, driven by Playwright (the system
browser; nothing is downloaded), against a real server's web port.

The site must be built first (``make web``; ``make test`` does it). Screenshots go to
``test-artifacts/web/`` for a person to look at.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, async_playwright

from spades import protocol
from spades.bot import BotView, play_match
from spades.client import SpadesClient
from spades.engine import Card, Rules
from spades.v1 import events_pb2, play_pb2, play_pb2_grpc
from spades_bots.random_bot import RandomBot
from spades_server.config import Settings
from spades_server.server import WEB_CLIENT, SpadesServer

CHROMIUM = os.environ.get("SPADES_TEST_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "web"
#: The flags the machine's closed network needs (no background fetches to Google's hosts).
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def require_site() -> None:
    if not (WEB_CLIENT / "index.html").is_file():
        pytest.fail(f"the web client is not built in {WEB_CLIENT}: run `make web` first")
    if not Path(CHROMIUM).exists():
        pytest.fail(f"no chromium at {CHROMIUM}: run `make browser` (Debian's chromium)")


@pytest_asyncio.fixture
async def server(tmp_path: Path) -> AsyncIterator[SpadesServer]:
    require_site()
    served = SpadesServer(
        Settings(
            listen="127.0.0.1:0",
            database=str(tmp_path / "tables.db"),
            metrics="off",
            web="127.0.0.1:0",
            house_bots=8,
        )
    )
    await served.start()
    try:
        yield served
    finally:
        await served.stop()


@pytest_asyncio.fixture
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS
        )
        try:
            yield launched
        finally:
            await launched.close()


async def shoot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


async def public_record(server: SpadesServer, table_id: str) -> list[events_pb2.Event]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        got = await play_pb2_grpc.PlayServiceStub(channel).GetRecord(
            play_pb2.GetRecordRequest(table_id=table_id)
        )
    return list(got.record.events)


def tricks_of(events: list[events_pb2.Event]) -> list[list[tuple[str, str]]]:
    """Every trick's plays as (seat name, card key like the page's data-card) in order."""
    tricks: list[list[tuple[str, str]]] = [[]]
    for event in events:
        kind = event.WhichOneof("kind")
        if kind == "card_played":
            played = event.card_played
            seat = protocol.seat_from_proto(played.seat)
            tricks[-1].append(
                (
                    ("North", "East", "South", "West")[seat],
                    f"{played.card.rank}-{played.card.suit}",
                )
            )
        elif kind == "trick_won":
            tricks.append([])
    return [trick for trick in tricks if trick]


@pytest.mark.asyncio
async def test_a_spectator_opens_a_table_of_house_bots_and_follows_it_to_the_end(
    server: SpadesServer, browser: Browser
) -> None:
    page = await browser.new_page(viewport={"width": 1100, "height": 900})
    failures: list[str] = []
    page.on("pageerror", lambda error: failures.append(str(error)))
    await page.goto(server.web_url)
    await page.get_by_role("heading", name="Tables").wait_for()
    await shoot(page, "lobby-empty")

    await page.fill("input[name=name]", "Browser table")
    await page.fill("input[name=hands]", "1")
    await page.click("button[type=submit]")
    await page.wait_for_url(re.compile(r"#/table/"))
    table_id = page.url.rsplit("/", 1)[1]

    await page.locator(".status.match-over").wait_for(timeout=60_000)
    status = await page.locator(".status").inner_text()
    assert not failures, failures
    events = await public_record(server, table_id)
    assert len(tricks_of(events)) == 13

    # The score table after the hand matches the server's scoring.
    (scored,) = [event.hand_scored for event in events if event.HasField("hand_scored")]
    row = page.locator("tr[data-hand='1'] td.total")
    totals = [int(text) for text in await row.all_inner_texts()]
    assert totals == [side.total_score for side in scored.sides]
    (ended,) = [event.match_ended for event in events if event.HasField("match_ended")]
    assert " \u2013 ".join(str(score) for score in ended.final_scores) in status  # en dash
    await shoot(page, "score-table")

    # The lobby now lists the table as finished.
    await page.click("a.brand")
    listed = page.locator(f"tr[data-table-id='{table_id}'] td.status")
    await listed.wait_for()
    for _ in range(50):
        if await listed.inner_text() == "finished":
            break
        await asyncio.sleep(0.1)
    assert await listed.inner_text() == "finished"
    await shoot(page, "lobby")


class SlowRandom(RandomBot):
    """Random play at a pace a person (and the test's sampling) can follow."""

    async def play(self, view: BotView) -> Card:  # type: ignore[override]
        await asyncio.sleep(0.08)
        return super().play(view)


@pytest.mark.asyncio
async def test_a_spectator_sees_each_card_as_it_is_played_and_no_other(
    server: SpadesServer, browser: Browser
) -> None:
    async with SpadesClient(f"127.0.0.1:{server.port}") as client:
        created = await client.create_table("Slow table", Rules(max_hands=1))
        table_id = created.table.table_id
        tickets = [await client.join_table(table_id, f"slow {seat}") for seat in range(4)]
        page = await browser.new_page(viewport={"width": 1100, "height": 900})
        await page.goto(f"{server.web_url}#/table/{table_id}")
        await page.locator(".status").wait_for()
        playing = asyncio.gather(
            *(
                play_match(client, SlowRandom(seed), ticket.token, table_id=table_id)
                for seed, ticket in enumerate(tickets)
            )
        )
        # Sample what the page shows while the hand is played: a trick's cards appear only as
        # they are played (each sample is a prefix of that trick in the public record), never
        # a card that is still in a hand; and the page keeps up with the match.
        shown_tricks: list[list[tuple[str, str]]] = []
        while not playing.done():
            cards = await page.eval_on_selector_all(
                ".trick .card", "els => els.map(e => [e.title.split(' ')[0], e.dataset.card])"
            )
            if cards:
                shown_tricks.append([(seat, key) for seat, key in cards])
                if len(shown_tricks) == 40:
                    await shoot(page, "table-mid-hand")
            await asyncio.sleep(0.03)
        await playing
        await page.locator(".status.match-over").wait_for(timeout=10_000)
    tricks = tricks_of(await public_record(server, table_id))
    assert len(tricks) == 13
    assert len(shown_tricks) > 40  # the page was sampled all through the hand
    for shown in shown_tricks:
        assert any(trick[: len(shown)] == shown for trick in tricks), shown
    # Every trick was seen on the page at some point, so the sampling did cover the hand.
    seen = {tuple(shown) for shown in shown_tricks}
    assert sum(any(tuple(trick[:n]) in seen for n in (1, 2, 3, 4)) for trick in tricks) >= 10


@pytest.mark.asyncio
async def test_an_unknown_table_says_so(server: SpadesServer, browser: Browser) -> None:
    page = await browser.new_page()
    await page.goto(f"{server.web_url}#/table/no-such-table")
    message = page.locator(".message.error")
    await message.wait_for()
    assert "no-such-table" in await message.inner_text()
