"""The tournament pages in a real browser (Debian's chromium through Playwright), after a
duplicate round robin of three bot accounts played through the public API: the list (status,
entrants, leader), and a tournament's page with the server's standings in its order, the
crosstable, and each round's pairings linked to their tables. Screenshots go to
``test-artifacts/web/``."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page

from spades import protocol
from spades.client import SpadesClient
from spades.engine import Rules
from spades.records.tournament import HOME_SEATS
from spades.v1 import tournament_pb2
from spades_bots.heuristic import HeuristicBot
from spades_bots.random_bot import RandomBot
from tests.support.analyses import analyses_counted
from tests.support.browser import check_accessibility, on_phone, require_site, shoot, texts
from tests.support.players import AccountPlayer
from tests.support.servers import web_server

OPERATOR = "operator-token-for-tournament-tests-0123456789"


async def assert_accuracy_shown(
    page: Page, client: SpadesClient, tournament: tournament_pb2.Tournament
) -> None:
    """Once ended, the page offers to analyse its tables (no analysis is kept yet), then shows
    each entrant's accuracy over its sides' plays at every table, as the analyses count them."""
    section = page.locator(".tournament-accuracy")
    tables = sum(len(p.table_ids) for paired in tournament.pairings for p in paired.pairings)
    await section.get_by_text(f"(0 of {tables})").wait_for()
    await section.locator("button[name=analyse-tournament]").click()
    await section.get_by_text(f"({tables} of {tables})").wait_for(timeout=240_000)
    plays: dict[str, int] = {}
    clean: dict[str, float] = {}
    judged = 0
    for paired in tournament.pairings:
        for pairing in paired.pairings:
            if not pairing.away_account_id:
                continue
            for leg, table_id in enumerate(pairing.table_ids):
                analysis = await client.get_analysis(table_id)
                judged += len(analysis.plays)
                for side in analysis.sides:
                    seats = {protocol.seat_from_proto(seat) for seat in side.seats}
                    home = seats <= set(HOME_SEATS[leg])
                    holder = pairing.home_account_id if home else pairing.away_account_id
                    plays[holder] = plays.get(holder, 0) + side.plays
                    clean[holder] = clean.get(holder, 0) + round(side.accuracy * side.plays)
    for line in tournament.standings.lines:
        row = section.locator(f"tr[data-account-id='{line.account_id}']")
        assert await row.locator(".plays").inner_text() == str(plays[line.account_id])
        share = int(100 * clean[line.account_id] / plays[line.account_id] + 0.5)
        assert await row.locator(".accuracy").inner_text() == f"{share}%"
    assert sum(plays.values()) == judged >= tables * 13 * 4  # every card of every table, once
    await shoot(page, "tournament-accuracy")
    # Opened again: every table is kept, so the totals come at once (AnalyseTournament judges
    # nothing), with no button.
    started = analyses_counted("started")
    await page.reload()
    for line in tournament.standings.lines:
        row = section.locator(f"tr[data-account-id='{line.account_id}']")
        assert await row.locator(".plays").inner_text() == str(plays[line.account_id])
    assert await section.get_by_text(f"({tables} of {tables})").count() == 1
    assert await section.locator("button[name=analyse-tournament]").count() == 0
    assert analyses_counted("started") == started


@pytest.mark.asyncio
async def test_the_tournament_pages_show_the_standings_and_the_rounds(
    tmp_path: Path, browser: Browser
) -> None:
    require_site()
    async with web_server(tmp_path / "cup.db", operator_token=OPERATOR) as server:
        address = f"127.0.0.1:{server.port}"
        async with SpadesClient(address) as client:
            cup = await client.create_tournament(
                "Web Cup", rules=Rules(), boards=1, start_when_entrants=3, operator_token=OPERATOR
            )
            players = []
            for name, make in (("Heuristic A", HeuristicBot), ("Random A", RandomBot)):
                key = (await client.create_account(name)).key
                async with SpadesClient(address, account_key=key) as own:
                    await own.enter_tournament(cup.tournament_id)
                players.append(AccountPlayer(address, key, make))
            runs = [asyncio.create_task(player.run()) for player in players]
            page = await browser.new_page(viewport={"width": 1100, "height": 900})
            failures: list[str] = []
            page.on("pageerror", lambda error: failures.append(str(error)))
            try:
                # Entering: listed with its two entrants.
                await page.goto(server.web_url + "#/tournaments")
                row = page.locator(f"tr.tournament[data-tournament-id='{cup.tournament_id}']")
                await row.wait_for()
                assert "entering" in await row.inner_text()
                assert await row.locator("td.entrants").inner_text() == "2"
                # No match played: nobody leads (a tie of every entrant, or nothing yet).
                leader = await row.locator("td.leader").inner_text()
                assert leader in ("", "tied: Heuristic A, Random A"), leader
                # The tournament's page, opened while it is entering, is left open from here on.
                await row.locator("a").click()
                heading = page.locator(f"h1[data-tournament-id='{cup.tournament_id}']")
                await heading.locator(".badge.status.entering").wait_for()
                key = (await client.create_account("Heuristic B")).key
                async with SpadesClient(address, account_key=key) as own:
                    await own.enter_tournament(cup.tournament_id)  # the third starts it
                players.append(AccountPlayer(address, key, HeuristicBot))
                runs.append(asyncio.create_task(players[-1].run()))
                async with asyncio.timeout(90):
                    async for update in client.watch_tournament(cup.tournament_id):
                        if update.event.WhichOneof("kind") == "ended":
                            break
                final = await client.get_tournament(cup.tournament_id)
            finally:
                for run in runs:
                    run.cancel()
                for player in players:
                    await player.stop()

            # The page followed the tournament live to its end, with no reload.
            await heading.locator(".badge.status.finished").wait_for(timeout=10_000)
            assert "Web Cup" in await heading.inner_text()
            await page.locator(".standings tr.line").nth(2).wait_for()
            lines = final.standings.lines
            assert await texts(page, ".standings tr.line td.name") == [line.name for line in lines]
            assert await texts(page, ".standings tr.line td.match-points") == [
                f"{line.match_points:g}" for line in lines
            ]
            assert await texts(page, ".standings tr.line td.record") == [
                f"{line.won}-{line.tied}-{line.lost}" for line in lines
            ]
            # Three entrants: three rounds, a bye in each, one pairing with two tables.
            assert await page.locator(".rounds .round").count() == 3
            assert await page.locator(".rounds li.pairing", has_text="bye").count() == 3
            links = await page.locator(".rounds a.table-link").evaluate_all(
                "links => links.map(link => link.getAttribute('href'))"
            )
            expected = [
                f"#/table/{table_id}"
                for paired in final.pairings
                for pairing in paired.pairings
                for table_id in pairing.table_ids
            ]
            assert links == expected and len(links) == 6
            assert await page.locator(".crosstable tbody tr").count() == 3
            # Every column of the standings has a heading, the last one too.
            headings = await texts(page, ".standings thead th")
            assert headings[-1] == "House bot" and all(headings), headings
            assert "seed revealed" in await page.locator(".seed").inner_text()
            assert final.status == tournament_pb2.TOURNAMENT_STATUS_FINISHED
            await shoot(page, "tournament")
            await check_accessibility(page)
            await on_phone(browser, page.url, ".standings", "tournament")
            # And the list says it is finished.
            await page.goto(server.web_url + "#/tournaments")
            row = page.locator(f"tr.tournament[data-tournament-id='{cup.tournament_id}']")
            await row.wait_for()
            assert "finished" in await row.inner_text()
            await check_accessibility(page)
            await on_phone(browser, page.url, "tr.tournament", "tournaments")
            first, second = final.standings.lines[:2]
            level = (first.match_points, first.duplicate_points, first.won) == (
                second.match_points,
                second.duplicate_points,
                second.won,
            ) and first.substituted_matches == second.substituted_matches
            leader = await row.locator("td.leader").inner_text()
            assert leader.startswith("tied: ") if level else leader == first.name, leader
            # A tournament's table links back to its tournament.
            await page.goto(server.web_url + expected[0])
            back = page.locator(".tournament-link a")
            await back.wait_for()
            assert await back.get_attribute("href") == f"#/tournament/{cup.tournament_id}"
            assert await back.inner_text() == "Web Cup"
            await shoot(page, "tournament-table")
            assert failures == []


@pytest.mark.asyncio
@pytest.mark.timeout(300)
async def test_a_finished_tournament_shows_each_entrants_accuracy(
    tmp_path: Path, browser: Browser
) -> None:
    require_site()
    # Without Nil: the double-dummy solver's slowest positions are Nil's (docs/solver.md), and
    # this is about the page, not the solver.
    rules = Rules(nil_allowed=False)
    async with web_server(tmp_path / "cup.db", operator_token=OPERATOR) as server:
        address = f"127.0.0.1:{server.port}"
        async with SpadesClient(address) as client:
            cup = await client.create_tournament(
                "Judged Cup", rules=rules, boards=1, start_when_entrants=2, operator_token=OPERATOR
            )
            page = await browser.new_page(viewport={"width": 1100, "height": 900})
            failures: list[str] = []
            page.on("pageerror", lambda error: failures.append(str(error)))
            players = []
            for name, make in (("Heuristic", HeuristicBot), ("Random", RandomBot)):
                key = (await client.create_account(name)).key
                players.append(AccountPlayer(address, key, make))
            runs = [asyncio.create_task(player.run()) for player in players]
            try:
                for number, player in enumerate(players):
                    if number == 1:  # not ended: the page shows no accuracy
                        await page.goto(server.web_url + f"#/tournament/{cup.tournament_id}")
                        await page.locator("h1 .badge.status.entering").wait_for()
                        assert await page.locator(".tournament-accuracy").count() == 0
                    async with SpadesClient(address, account_key=player.key) as own:
                        await own.enter_tournament(cup.tournament_id)
                async with asyncio.timeout(90):
                    async for update in client.watch_tournament(cup.tournament_id):
                        if update.event.WhichOneof("kind") == "ended":
                            break
                final = await client.get_tournament(cup.tournament_id)
            finally:
                for run in runs:
                    run.cancel()
                for player in players:
                    await player.stop()
            await page.locator(".badge.status.finished").wait_for(timeout=10_000)
            await assert_accuracy_shown(page, client, final)
            assert failures == []
