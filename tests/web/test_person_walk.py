"""One person's whole way through the platform in a real browser (Debian's chromium), as issue 27
walks it: sign up, make a bot and copy its key, run ``spades bot`` with that key (a real
process), see the bot online, challenge two other bots with it as partner to a rated match,
play the match on the table page, see the rating change there and the match in My games, sign
out, and the session that was signed out refused. Screenshots in test-artifacts/web/."""

from __future__ import annotations

import asyncio
import re
import subprocess
from collections.abc import AsyncGenerator
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page

from spades.bot.account import AccountRunner, accept_all
from spades.client import SpadesClient, SpadesError
from spades_bots.random_bot import RandomBot
from tests.support.browser import check_accessibility, play_until_over, require_site, shoot
from tests.support.processes import clean_environment
from tests.support.servers import web_server
from tests.support.terminal import BIN

pytestmark = pytest.mark.asyncio
PASSWORD = "the walker's long passphrase"
OPPONENTS = ("East Bot", "West Bot")


async def sign_up(page: Page, web_url: str) -> str:
    """Sign up on the account page; the session token the browser keeps."""
    await page.goto(f"{web_url}#/account")
    await page.fill("input[name=sign-up-name]", "Walker")
    await page.fill("input[name=new-password]", PASSWORD)
    await page.fill("input[name=confirm-password]", PASSWORD)
    await page.get_by_role("button", name="Sign up").click()
    await page.locator("tr.session.current").wait_for()
    token = await page.evaluate("localStorage.getItem('spades-session-token')")
    assert isinstance(token, str) and token.startswith("sps.")
    return token


async def make_bot(page: Page) -> str:
    """Create a bot on the account page; its key, as the page shows it once."""
    await page.fill("input[name=bot-name]", "Walker Bot")
    await page.get_by_role("button", name="Create bot").click()
    key = await page.locator("code.key").inner_text()
    assert key.startswith("spk.")
    await shoot(page, "walk-bot-created")
    return key


def spades_bot(key: str, address: str, folder: Path) -> subprocess.Popen[str]:
    """``spades bot --config``, the key from the environment (never on the command line)."""
    config = folder / "walker-bot.toml"
    config.write_text(f'server = "{address}"\nbot = "random"\n\n[manifest]\nplayers = [4]\n')
    return subprocess.Popen(
        [str(BIN / "spades"), "bot", "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=clean_environment(SPADES_ACCOUNT_KEY=key),
    )


async def opponents(address: str) -> AsyncGenerator[None, None]:
    """Two more bot accounts online, each run by the SDK's AccountRunner."""
    clients = []
    async with SpadesClient(address) as anonymous:
        for name in OPPONENTS:
            made = await anonymous.create_account(name, kind="bot")
            clients.append(SpadesClient(address, account_key=made.key))
    runners = [AccountRunner(c, RandomBot, policy=accept_all, max_games=1) for c in clients]
    tasks = [asyncio.create_task(runner.run()) for runner in runners]
    try:
        yield
    finally:
        for runner in runners:
            runner.abandon()
        await asyncio.gather(*tasks, return_exceptions=True)
        for client in clients:
            await client.close()


@pytest.mark.timeout(300)
async def test_a_person_walks_from_sign_up_to_a_rated_match_and_signs_out(
    browser: Browser, tmp_path: Path
) -> None:
    require_site()
    async with web_server(tmp_path / "walk.db") as server:
        address = f"127.0.0.1:{server.port}"
        page = await browser.new_page(viewport={"width": 1100, "height": 900})
        failures: list[str] = []
        page.on("pageerror", lambda error: failures.append(str(error)))
        session = await sign_up(page, server.web_url)
        key = await make_bot(page)
        bot = spades_bot(key, address, tmp_path)
        others = opponents(address)
        await anext(others)
        try:
            # The bot is online, with the two others (the page lists them as it opens).
            async with SpadesClient(address) as anonymous, asyncio.timeout(60):
                while len((await anonymous.online_bots()).bots) < 1 + len(OPPONENTS):
                    await asyncio.sleep(0.1)
            await page.click("header a[href='#/online']")
            row = page.locator("tr.online-bot", has_text="Walker Bot")
            await row.wait_for(timeout=60_000)
            for name in OPPONENTS:
                await page.locator("tr.online-bot", has_text=name).wait_for(timeout=30_000)
            await shoot(page, "walk-online")
            await check_accessibility(page)
            # Challenge: the person with the bot as partner, against the two others, rated.
            await page.select_option("select[name=partner]", label="Walker Bot")
            await page.select_option("select[name=east]", label=OPPONENTS[0])
            await page.select_option("select[name=west]", label=OPPONENTS[1])
            await page.fill("input[name=hands]", "1")
            await page.check("input[name=rated]")
            await page.click("form.challenge-bots button[type=submit]")
            await page.wait_for_url(re.compile(r"#/challenge/"))
            play = page.locator("a.play-match", has_text="Play match (North)")
            await play.wait_for(timeout=60_000)
            await play.click()
            await page.wait_for_url(re.compile(r"#/seat/.+/north$"))
            table_id = page.url.rsplit("/", 2)[-2]
            assert await play_until_over(page) >= 13
            # The rating change, on the table's page once the pool rated the match.
            mine = page.locator(".rating-changes li", has_text="Walker")
            await mine.first.wait_for(timeout=60_000)
            assert re.search(
                r"Rating -?[\d.]+ \u2192 -?[\d.]+ \([+\u2212-][\d.]+\)",
                await mine.first.inner_text(),
            )
            await shoot(page, "walk-rating-change")
            # The match in My games, linked to its record.
            await page.click("header a[href='#/games']")
            link = page.locator(f"table.games a.record[title='{table_id}']")
            await link.wait_for(timeout=30_000)
            await shoot(page, "walk-my-games")
            await check_accessibility(page)
        finally:
            await others.aclose()
            bot.terminate()
            output = bot.communicate(timeout=30)[0]
        # The bot's own log: the challenge accepted, the table played, its rating change.
        assert "accepted challenge" in output and f"playing table {table_id}" in output, output
        assert re.search(rf"table {table_id} rated: Rating .+ \u2192 ", output), output
        # Sign out: the session the browser held is refused from then on.
        await page.click("header a[href='#/account']")
        await page.get_by_role("button", name="Sign out").first.click()
        await page.get_by_role("heading", name="Sign in").wait_for()
        async with SpadesClient(address, account_key=session) as revoked:
            with pytest.raises(SpadesError) as refused:
                await revoked.sessions()
        assert refused.value.reason_code == "SESSION_REVOKED", refused.value
        assert failures == []
