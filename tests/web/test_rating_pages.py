"""The leaderboard and player pages in a real browser (Debian's chromium through Playwright),
after rated matches played between accounts through the Python SDK: the board in the server's
order with the provisional mark, a player's page with its ratings and its history (newest first,
paged, each row linked to the table's record), and the accounts and the rated badge on the lobby
and table pages. Screenshots go to ``test-artifacts/web/``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
import pytest_asyncio
from playwright.async_api import Browser

from spades.client import SpadesClient
from spades.engine import Rules
from spades.v1 import rating_pb2, rating_pb2_grpc
from spades_server.app.server import SpadesServer
from tests.support.accounts import play_rated_match
from tests.support.browser import check_accessibility, on_phone, require_site, shoot, texts
from tests.support.servers import web_server

#: One-hand matches: the pool rates a match whatever its length.
ONE_HAND = Rules(max_hands=1)
#: Enough matches between the two bots for both to be past provisional (10 in the pool).
MATCHES_BETWEEN_BOTS = 10
#: The player page's history page size (server/web/src/ratings.ts HISTORY_PAGE).
HISTORY_PAGE = 10


class Played:
    """The accounts, the rated tables in the order they were played, and the server."""

    def __init__(self, server: SpadesServer) -> None:
        self.server = server
        self.accounts: dict[str, str] = {}  # name -> account id
        self.tables: list[str] = []


@pytest_asyncio.fixture
async def played(tmp_path: Path) -> AsyncIterator[Played]:
    """A server where "Strong Bot" (heuristic, both seats of its side) played ten rated matches
    against "Weak Bot" (random) and one against the person "Pat Person" (played by a random bot)."""
    require_site()
    async with web_server(tmp_path / "rated.db", shutdown_grace=0.2) as server:
        result = Played(server)
        address = f"127.0.0.1:{server.port}"
        async with SpadesClient(address) as client:
            keys = {}
            for name, kind in (
                ("Strong Bot", "bot"),
                ("Weak Bot", "bot"),
                ("Pat Person", "person"),
            ):
                created = await client.create_account(name, kind=kind)
                keys[name] = created.key
                result.accounts[name] = created.account.account_id
        opponents = ["Weak Bot"] * MATCHES_BETWEEN_BOTS + ["Pat Person"]
        for number, opponent in enumerate(opponents):
            strong = (keys["Strong Bot"], ("heuristic", "north,south"))
            weak = (keys[opponent], ("random", "east,west"))
            # The sides swap seats each match, as in a fair series.
            if number % 2:
                strong = (strong[0], ("heuristic", "east,west"))
                weak = (weak[0], ("random", "north,south"))
            table_id = await play_rated_match(server, dict([strong, weak]), ONE_HAND)
            result.tables.append(table_id)
        yield result


async def history_of(server: SpadesServer, account_id: str) -> list[rating_pb2.MatchRated]:
    """Every rated match of the account, as the API gives it (newest first)."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        response = await rating_pb2_grpc.RatingServiceStub(channel).GetRatings(
            rating_pb2.GetRatingsRequest(account_id=account_id, page_size=100)
        )
    return list(response.history)


@pytest.mark.asyncio
async def test_the_leaderboard_and_a_players_page_show_the_rated_matches(
    played: Played, browser: Browser
) -> None:
    server = played.server
    page = await browser.new_page(viewport={"width": 1100, "height": 900})
    failures: list[str] = []
    page.on("pageerror", lambda error: failures.append(str(error)))

    # From the lobby to the partnership leaderboard.
    await page.goto(server.web_url)
    await page.get_by_role("heading", name="Tables").wait_for()
    await page.locator("nav.pools a", has_text="partnership").click()
    await page.get_by_role("heading", name="Leaderboard: partnership").wait_for()
    await page.locator(".board tr.entry").nth(2).wait_for()

    async with SpadesClient(f"127.0.0.1:{server.port}") as client:
        board = await client.leaderboard("partnership")
    # The page shows the server's board: its order, which is by rating, best first.
    assert await texts(page, ".board tr.entry td.name") == [line.name for line in board.lines]
    assert sorted(line.name for line in board.lines) == ["Pat Person", "Strong Bot", "Weak Bot"]
    assert await texts(page, ".board tr.entry td.rank") == ["1", "2", "3"]
    scores = [float(text) for text in await texts(page, ".board tr.entry td.score .value")]
    assert scores == sorted(scores, reverse=True)
    assert scores == [round(line.rating.score, 1) for line in board.lines]
    mus = [float(text) for text in await texts(page, ".board tr.entry td.mu")]
    assert mus == [round(line.rating.mu, 1) for line in board.lines]
    matches = {
        line.name: text
        for line, text in zip(board.lines, await texts(page, ".board td.matches"), strict=True)
    }
    assert matches == {"Strong Bot": "11", "Weak Bot": "10", "Pat Person": "1"}
    # Only the person, with one match, is provisional; the kinds are shown.
    provisional = page.locator(".board tr.entry.provisional td.name")
    assert await provisional.all_inner_texts() == ["Pat Person"]
    assert await page.locator(".board tr.entry.provisional .badge.provisional").count() == 1
    kinds = {
        line.name: text
        for line, text in zip(board.lines, await texts(page, ".board td.kind"), strict=True)
    }
    assert kinds == {"Strong Bot": "bot", "Weak Bot": "bot", "Pat Person": "person"}
    await shoot(page, "leaderboard")
    await check_accessibility(page)
    await on_phone(browser, page.url, ".board tr.entry", "leaderboard")

    # A page at a time, with the API's page tokens.
    await page.goto(f"{server.web_url}#/leaderboard/partnership?page-size=2")
    await page.locator("button[name=next-page]:not([disabled])").wait_for()  # a first page
    names = [line.name for line in board.lines]
    assert await texts(page, ".board tr.entry td.name") == names[:2]
    previous, following = (
        page.locator("button[name=previous-page]"),
        page.locator("button[name=next-page]"),
    )
    assert not await previous.is_enabled()
    await following.click()
    await page.locator(".board tr.entry td.rank", has_text="3").wait_for()
    assert await texts(page, ".board tr.entry td.name") == names[2:]
    assert not await following.is_enabled()
    await previous.click()
    await page.locator(".board tr.entry td.rank", has_text="1").wait_for()
    assert await texts(page, ".board tr.entry td.name") == names[:2]

    # The cutthroat board is empty and says so.
    await page.locator("nav.pools a", has_text="cutthroat").click()
    await page.get_by_role("heading", name="Leaderboard: cutthroat").wait_for()
    await page.get_by_text("No rated matches in this pool yet.").wait_for()

    # A leaderboard row opens the player's page.
    await page.locator("nav.pools a", has_text="partnership").click()
    await page.locator(".board a.player", has_text="Strong Bot").click()
    strong_id = played.accounts["Strong Bot"]
    heading = page.locator(f"h1[data-account-id='{strong_id}']")
    await heading.wait_for()
    assert "Strong Bot" in await heading.inner_text()
    assert await heading.locator(".badge.bot").count() == 1
    rating_row = page.locator(".ratings tr[data-pool='partnership']")
    await rating_row.wait_for()
    assert "11" in await rating_row.inner_text()
    assert await page.locator(".ratings tr[data-pool]").count() == 1  # no cutthroat rating

    # Its history: newest first, a page at a time, each row linked to the table's record.
    history = await history_of(server, strong_id)
    assert [match.table_id for match in history] == list(reversed(played.tables))
    await page.locator(".history tr.rated-match").nth(HISTORY_PAGE - 1).wait_for()
    rows = page.locator(".history tr.rated-match")
    shown = [await rows.nth(n).get_attribute("data-table-id") for n in range(await rows.count())]
    assert shown == [match.table_id for match in history[:HISTORY_PAGE]]
    assert await texts(page, ".history tr.rated-match a.record") == shown
    first = history[0].changes[0]
    assert first.account_id == strong_id
    first_outcome = "won" if first.outcome == rating_pb2.MATCH_OUTCOME_WON else "lost"
    assert await rows.nth(0).locator("td.outcome").inner_text() == first_outcome
    before, after = round(first.before.score, 1), round(first.after.score, 1)
    assert await rows.nth(0).locator("td.rating").inner_text() == f"{before:.1f} → {after:.1f}"
    await shoot(page, "player")
    await check_accessibility(page)
    await on_phone(browser, page.url, ".history tr.rated-match", "player")
    older = page.locator("button[name=next-page]")
    assert await older.is_enabled()
    await older.click()
    oldest = history[-1].table_id
    await page.locator(f".history tr.rated-match[data-table-id='{oldest}']").wait_for()
    assert await rows.count() == len(history) - HISTORY_PAGE == 1
    assert not await older.is_enabled()
    await page.locator("button[name=previous-page]").click()
    newest = history[0].table_id
    await page.locator(f".history tr.rated-match[data-table-id='{newest}']").wait_for()
    assert await rows.count() == HISTORY_PAGE

    # A history row opens the record viewer of its table, whose deals verify.
    await rows.nth(0).locator("a.record").click()
    await page.wait_for_url(f"**#/record/{history[0].table_id}")
    verification = page.locator(".verification")
    await verification.wait_for()
    assert "ok" in (await verification.get_attribute("class") or "")

    # By name (any case), from the leaderboard's form.
    await page.goto(f"{server.web_url}#/leaderboard/partnership")
    await page.fill("input[name=player-name]", "pat PERSON")
    await page.click("form.find-player button[type=submit]")
    person = page.locator(f"h1[data-account-id='{played.accounts['Pat Person']}']")
    await person.wait_for()
    assert await person.locator(".badge.person").count() == 1
    # The ratings come after the heading (their own call): wait for the row, then look.
    await page.locator(".ratings tr[data-pool='partnership']").wait_for()
    assert await page.locator(".ratings .badge.provisional").count() == 1
    await page.goto(f"{server.web_url}#/player/by-name/No%20One")
    await page.locator(".message.error").wait_for()
    assert not failures, failures


@pytest.mark.asyncio
async def test_the_lobby_and_table_pages_link_accounts_and_mark_rated_tables(
    played: Played, browser: Browser
) -> None:
    server = played.server
    table_id = played.tables[-1]  # Strong Bot against Pat Person
    page = await browser.new_page(viewport={"width": 1100, "height": 900})
    failures: list[str] = []
    page.on("pageerror", lambda error: failures.append(str(error)))
    await page.goto(server.web_url)
    row = page.locator(f"tr[data-table-id='{table_id}']")
    await row.wait_for()
    assert await row.locator(".badge.rated").count() == 1
    # Each seat names its account, linked to the player's page, with the account's kind.
    links = row.locator(".seats a.player")
    assert await links.count() == 4
    holders = {
        await links.nth(n).get_attribute("data-account-id"): await links.nth(n).inner_text()
        for n in range(4)
    }
    assert holders == {
        played.accounts["Strong Bot"]: "Strong Bot",
        played.accounts["Pat Person"]: "Pat Person",
    }
    assert await row.locator(".seats .badge.person").count() == 2
    assert await row.locator(".seats .badge.bot").count() == 2
    await shoot(page, "lobby-rated")

    # The table page: the rated badge, and the seats' accounts linked.
    await row.locator("a.watch").click()
    await page.locator(".status.match-over .badge.rated").wait_for()
    seat_links = page.locator(".seat-panel a.player")
    await seat_links.nth(3).wait_for()
    linked = {await seat_links.nth(n).get_attribute("data-account-id") for n in range(4)}
    assert linked == {played.accounts["Strong Bot"], played.accounts["Pat Person"]}
    assert await page.locator(".seat-panel .badge.person").count() == 2
    await shoot(page, "table-rated")
    await page.locator(".seat-panel a.player", has_text="Pat Person").first.click()
    await page.locator(f"h1[data-account-id='{played.accounts['Pat Person']}']").wait_for()

    # An unrated table of anonymous players has neither.
    async with SpadesClient(f"127.0.0.1:{server.port}") as client:
        unrated = (await client.create_table("Casual", ONE_HAND)).table_id
        await client.join_table(unrated, "Anonymous")
    await page.goto(server.web_url)
    casual = page.locator(f"tr[data-table-id='{unrated}']")
    await casual.wait_for()
    assert await casual.locator(".badge.rated").count() == 0
    assert await casual.locator(".seats a.player").count() == 0
    assert "Anonymous" in await casual.locator(".seats").inner_text()
    assert not failures, failures
