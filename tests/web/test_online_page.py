"""Online now in a real browser (Debian's chromium), on a phone-sized screen: bots run by the
SDK are listed with their manifests and ratings; a signed-in person challenges three of them
(a partner and two opponents) to a series of two matches, plays both on the table page by
clicking, and sees the series' result; a match of four bots, arranged from the same page, is
watched. Screenshots in test-artifacts/web/."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, ViewportSize

from spades.bot.account import AccountRunner, accept_all
from spades.client import SpadesClient
from spades.manifest import manifest_of
from spades_bots.random_bot import RandomBot
from spades_server.app.server import SpadesServer
from tests.support.browser import check_accessibility, play_until_over, require_site, shoot, texts
from tests.support.servers import web_server

pytestmark = pytest.mark.asyncio

PHONE: ViewportSize = {"width": 390, "height": 844}
BOTS = ("Night Owl", "Lark", "Jay", "Wren")
PASSWORD = "a long enough password"


@pytest_asyncio.fixture
async def server(tmp_path: Path) -> AsyncIterator[SpadesServer]:
    require_site()
    async with web_server(tmp_path / "tables.db") as running:
        yield running


@pytest_asyncio.fixture
async def online_bots(server: SpadesServer) -> AsyncIterator[dict[str, str]]:
    """Four bot accounts (series of up to 2) online: each run by the SDK's AccountRunner."""
    address = f"127.0.0.1:{server.port}"
    ids: dict[str, str] = {}
    clients = []
    async with SpadesClient(address) as anonymous:
        for name in BOTS:
            made = await anonymous.create_account(name, kind="bot")
            ids[name] = made.account.account_id
            clients.append(SpadesClient(address, account_key=made.key))
    for client in clients:
        await client.set_manifest(manifest_of(max_series=2))
    runners = [AccountRunner(c, RandomBot, policy=accept_all, max_games=2) for c in clients]
    tasks = [asyncio.create_task(runner.run()) for runner in runners]
    try:
        async with SpadesClient(address) as anonymous:
            async with asyncio.timeout(30):
                while len((await anonymous.online_bots()).bots) < len(BOTS):
                    await asyncio.sleep(0.05)
        yield ids
    finally:
        for runner in runners:
            runner.abandon()
        await asyncio.gather(*tasks, return_exceptions=True)
        for client in clients:
            await client.close()


async def signed_in(page: Page, server: SpadesServer) -> None:
    """Sign up through the account page (a person, with a password)."""
    await page.goto(server.web_url + "#/account")
    form = page.locator("form.sign-up")
    await form.locator("input[name=sign-up-name]").fill("Pat")
    for field in await form.locator("input[type=password]").all():
        await field.fill(PASSWORD)
    await form.locator("button[type=submit]").click()
    await page.locator(".account.signed-in").wait_for()


async def test_a_person_challenges_online_bots_to_a_series_and_plays_it(
    server: SpadesServer, online_bots: dict[str, str], browser: Browser
) -> None:
    page = await browser.new_page(viewport=PHONE)
    failures: list[str] = []
    page.on("pageerror", lambda error: failures.append(str(error)))
    await signed_in(page, server)
    await page.click("header a[href='#/online']")
    await page.locator("tr.online-bot").nth(len(BOTS) - 1).wait_for()
    assert sorted(await texts(page, "tr.online-bot td.name")) == sorted(BOTS)
    assert set(await texts(page, "tr.online-bot td.plays")) == {
        "4 players, to 100\u20131000, series of up to 2"
    }
    assert set(await texts(page, "tr.online-bot td.ratings")) == {"unrated"}
    await shoot(page, "online-now-phone")
    await check_accessibility(page)

    # A partner (South) and two opponents, two matches of one hand.
    await page.select_option("select[name=partner]", label="Night Owl")
    await page.select_option("select[name=east]", label="Lark")
    await page.select_option("select[name=west]", label="Jay")
    await page.fill("input[name=series]", "2")
    await page.fill("input[name=hands]", "1")
    await page.click("form.challenge-bots button[type=submit]")
    await page.wait_for_url(re.compile(r"#/challenge/"))
    challenge_url = page.url
    for match in (1, 2):
        play = page.locator("a.play-match", has_text=f"Play match {match} (North)")
        await play.wait_for(timeout=30_000)
        if match == 1:
            await shoot(page, "online-challenge-phone")
            await check_accessibility(page)
        await play.click()
        await page.wait_for_url(re.compile(r"#/seat/.+/north$"))
        assert await play_until_over(page) >= 13
        if match == 2:
            await shoot(page, "online-series-match-phone")
        await page.goto(challenge_url)
    result = page.locator(".series-result.over")
    await result.wait_for(timeout=30_000)
    assert re.fullmatch(r"Series over \(2 matches\): \d \u2013 \d", await result.inner_text())
    assert len(await page.locator(".series-matches tbody tr").all()) == 2
    await shoot(page, "online-series-over-phone")
    await check_accessibility(page)

    # The challenge as the server keeps it: Pat at North with Night Owl, two matches played.
    challenge_id = challenge_url.rsplit("/", 1)[1]
    async with SpadesClient(f"127.0.0.1:{server.port}") as anonymous:
        shown = await anonymous.get_challenge(challenge_id)
    assert shown.seating[2] == online_bots["Night Owl"] and shown.series_over
    assert shown.seating[0] == shown.challenger_id
    assert not failures, failures


async def test_a_person_arranges_four_bots_and_watches(
    server: SpadesServer, online_bots: dict[str, str], browser: Browser
) -> None:
    page = await browser.new_page(viewport=PHONE)
    await signed_in(page, server)
    await page.goto(server.web_url + "#/online")
    await page.locator("tr.online-bot").nth(len(BOTS) - 1).wait_for()
    await page.check("input[name=mode][value=bots]")
    for seat, name in zip(("north", "east", "south", "west"), BOTS, strict=True):
        await page.select_option(f"select[name=bot-{seat}]", label=name)
    await page.fill("input[name=hands]", "1")
    await page.click("form.challenge-bots button[type=submit]")
    await page.wait_for_url(re.compile(r"#/challenge/"))
    watch = page.locator("a.watch-match")
    await watch.wait_for(timeout=30_000)
    assert await page.locator("a.play-match").count() == 0  # the person holds no seat
    await watch.click()
    await page.locator(".status.match-over").wait_for(timeout=60_000)
    await shoot(page, "online-four-bots-watched-phone")
