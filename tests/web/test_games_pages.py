"""My games, the player page's chart, results, partners and opponents, and a rated table's rating
changes, in a real browser (Debian's chromium through Playwright), after matches a person (its
session as the key) played through the SDK: rated ones against a bot, an unrated one against
another bot, and one at a private table. Screenshots, a phone's (390x844) among them, go to
``test-artifacts/web/``."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import Browser, Page

from spades.client import SpadesClient, rating_change_text
from spades.engine import Rules
from tests.support.browser import check_accessibility, require_site, shoot, texts
from tests.support.games import play_accounts_match
from tests.support.servers import web_server

pytestmark = pytest.mark.asyncio

PASSWORD = "a browser's long passphrase"
ONE_HAND = Rules(max_hands=1)
RATED = 3


async def signed_in(browser: Browser, url: str, token: str, width: int, height: int) -> Page:
    page = await browser.new_page(viewport={"width": width, "height": height})
    await page.goto(url)
    await page.evaluate("token => localStorage.setItem('spades-session-token', token)", token)
    return page


async def test_my_games_the_player_page_and_the_rating_changes(
    browser: Browser, tmp_path: Path
) -> None:
    require_site()
    async with web_server(tmp_path / "games.db", shutdown_grace=0.2) as server:
        address = f"127.0.0.1:{server.port}"
        async with SpadesClient(address) as client:
            pat = await client.sign_up("Pat", PASSWORD)
            alpha = await client.create_account("Alpha", kind="bot")
            beta = await client.create_account("Beta", kind="bot")
        token, pat_id = pat.token, pat.account.account_id
        rated = [
            await play_accounts_match(
                server,
                [(token, "heuristic", "north,south"), (alpha.key, "random", "east,west")],
                rated=True,
                rules=ONE_HAND,
            )
            for _ in range(RATED)
        ]
        unrated = await play_accounts_match(
            server,
            [(token, "heuristic", "north,south"), (beta.key, "random", "east,west")],
            rules=ONE_HAND,
        )
        private = await play_accounts_match(
            server,
            [(token, "random", "north,south"), ("", "random", "east"), ("", "random", "west")],
            private=True,
            rules=ONE_HAND,
        )
        async with SpadesClient(address) as client:
            changes = {
                table: rating_change_text(change)
                for table in rated
                if (change := await client.rating_change(table, pat_id)) is not None
            }
            alpha_change = await client.rating_change(rated[-1], alpha.account.account_id)
        assert len(changes) == RATED and alpha_change is not None

        # My games, signed in: every game, the private one too, newest first, each a record link.
        page = await signed_in(browser, server.web_url, token, 1100, 900)
        await page.goto(f"{server.web_url}#/games")
        await page.locator("tr.game").first.wait_for()
        assert await page.locator("tr.game").count() == RATED + 2
        order = [
            await row.get_attribute("data-table-id") for row in await page.locator("tr.game").all()
        ]
        assert order == [private, unrated, *reversed(rated)]
        assert (
            await page.locator(
                f"tr.game[data-table-id='{private}'] .badge", has_text="private"
            ).count()
            == 1
        )
        for table, said in changes.items():
            assert (
                said
                in await page.locator(f"tr.game[data-table-id='{table}'] td.rated").inner_text()
            )
        href = await page.locator(f"tr.game[data-table-id='{unrated}'] a.record").get_attribute(
            "href"
        )
        assert href == f"#/record/{unrated}"
        await shoot(page, "games-mine")
        await check_accessibility(page)
        # Filters: rated only, then against Beta.
        await page.select_option("select[name=rated]", "1")
        await page.get_by_role("button", name="Show").click()
        await page.wait_for_function(f"document.querySelectorAll('tr.game').length === {RATED}")
        await page.select_option("select[name=rated]", "0")
        await page.fill("input[name=opponent]", "Beta")
        await page.get_by_role("button", name="Show").click()
        await page.wait_for_function("document.querySelectorAll('tr.game').length === 1")
        assert await page.locator("tr.game").get_attribute("data-table-id") == unrated
        await page.locator("a.record").click()
        await page.wait_for_function(f"location.hash === '#/record/{unrated}'")

        # The player's page, as anyone sees it: the chart, recent results (no private table),
        # partners and opponents.
        phone = await browser.new_page(viewport={"width": 390, "height": 844})
        await phone.goto(f"{server.web_url}#/player/{pat_id}")
        chart = phone.locator("figure.rating-chart[data-pool=partnership] svg.line-chart")
        await chart.wait_for()
        assert await chart.locator("circle.point").count() == RATED + 1  # the start, then each
        assert await chart.locator("path.line").count() == 1
        await phone.locator("table.games tr.game").first.wait_for()
        assert await phone.locator("table.games tr.game").count() == RATED + 1
        await phone.locator("table.opponents").wait_for()
        opponents = await texts(phone, "table.opponents tbody tr")
        assert opponents[0].startswith("Alpha") and f"\t{RATED}\t" in opponents[0] + "\t"
        assert any(line.startswith("Beta") for line in opponents)
        assert await phone.locator("table.partners tbody tr").count() == 0
        await shoot(phone, "player-page-phone")
        width = await phone.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"the page is {width} px wide on a 390 px screen"
        await phone.goto(f"{server.web_url}#/games/{pat_id}")
        await phone.locator("tr.game").first.wait_for()
        assert await phone.locator("tr.game").count() == RATED + 1  # not signed in here
        await shoot(phone, "games-phone")

        # The finished rated table's page: each account's change, as the API says it.
        await page.goto(f"{server.web_url}#/table/{rated[-1]}")
        await page.locator(".rating-changes li").nth(1).wait_for()
        lines = await texts(page, ".rating-changes li")
        assert sorted(lines) == sorted(
            [f"Pat: {changes[rated[-1]]}", f"Alpha: {rating_change_text(alpha_change)}"]
        )
        await shoot(page, "table-rating-changes")
        await check_accessibility(page)
