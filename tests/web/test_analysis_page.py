"""The record viewer's analysis in a real browser (Debian's chromium) against a real server's
web port: a finished match analysed on request (progress, then every played card coloured by
its loss), the position behind a card with every legal card's value (BBO's "GIB" view), each
seat's accuracy; the kept analysis shown at once on the next visit."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import Browser

from spades.analysis.wire import analysis_from_proto
from spades.client import SpadesClient
from spades_server.app.server import SpadesServer
from tests.support.admin import OPERATOR_TOKEN
from tests.support.analyses import played_out_table
from tests.support.browser import require_site, shoot, texts
from tests.support.servers import web_server


@pytest_asyncio.fixture
async def server(tmp_path: Path) -> AsyncIterator[SpadesServer]:
    require_site()
    async with web_server(
        tmp_path / "tables.db", operator_token=OPERATOR_TOKEN, analysis_worlds=0
    ) as served:
        yield served


@pytest.mark.asyncio
async def test_the_record_viewer_shows_the_analysis_of_every_card(
    server: SpadesServer, browser: Browser
) -> None:
    table_id = await played_out_table(f"127.0.0.1:{server.port}", OPERATOR_TOKEN)
    page = await browser.new_page(viewport={"width": 1100, "height": 1400})
    await page.goto(f"{server.web_url}#/record/{table_id}")

    # No analysis kept yet: the page offers one, and the server computes it.
    await page.locator("button[name=analyse-double-dummy]").click()
    await page.locator(".analysis-ready").wait_for()
    async with SpadesClient(f"127.0.0.1:{server.port}") as client:
        analysis = analysis_from_proto(await client.get_analysis(table_id))
    for _ in range(13):
        await page.click("button[name=next-trick]")
    cards = page.locator(".record-trick .card.judged")
    assert await cards.count() == 52
    # Every card's colour is its loss: the page's losses are the analysis's, card for card.
    shown = [
        int(loss or "0")
        for loss in await cards.evaluate_all(
            "cards => cards.map(card => card.getAttribute('data-loss'))"
        )
    ]
    assert shown == [play.loss_points for play in analysis.plays]
    classes = await cards.evaluate_all("cards => cards.map(card => card.className)")
    for play, names in zip(analysis.plays, classes, strict=True):
        expected = (
            "loss-none"
            if not play.loss_points
            else ("loss-small" if play.loss_points < 10 else "loss-large")
        )
        assert expected in names.split()
    # Each seat's accuracy, as the analysis counts it.
    for seat, name in enumerate(("North", "East", "South", "West")):
        row = page.locator(f".accuracy-table tr[data-who='{name}'] .accuracy")
        assert await row.inner_text() == f"{round(analysis.seat_summary(seat).accuracy * 100)}%"
    assert "Double-dummy par" in await page.locator(".par").inner_text()

    # The position behind the costliest card: its best cards and every legal card's value.
    worst = max(analysis.plays, key=lambda play: play.loss_points)
    index = analysis.plays.index(worst)
    await cards.nth(index).click()
    position = page.locator(".position")
    await position.wait_for()
    values = await texts(page, ".position .card-values td.value")
    assert sorted((int(v.replace("+", "")) for v in values), reverse=True) == sorted(
        worst.values.values(), reverse=True
    )
    assert len(await texts(page, ".position .best-cards .card")) == len(worst.best)
    assert await page.locator(".position tr.played").count() == 1
    await shoot(page, "record-analysis")

    # Kept: the next visit shows it at once, without asking for it.
    await page.goto(f"{server.web_url}#/")
    await page.goto(f"{server.web_url}#/record/{table_id}")
    await page.locator(".analysis-ready").wait_for()
    assert await page.locator("button[name=analyse-double-dummy]").count() == 0
