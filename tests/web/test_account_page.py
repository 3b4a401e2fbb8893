"""Your account page in a real browser (Debian's chromium through Playwright): sign up, see your
session, make a bot and copy its key (which then works), sign out, a wrong password refused with
its reason code, sign in again, and a session revoked from elsewhere refused. Screenshots go to
``test-artifacts/web/``."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import Browser

from spades.client import SpadesClient
from tests.support.browser import check_accessibility, on_phone, require_site, shoot
from tests.support.servers import web_server

pytestmark = pytest.mark.asyncio

PASSWORD = "a browser's long passphrase"


async def test_a_person_signs_up_makes_a_bot_signs_out_and_in(
    browser: Browser, tmp_path: Path
) -> None:
    require_site()
    async with web_server(tmp_path / "people.db", shutdown_grace=0.2) as server:
        page = await browser.new_page(viewport={"width": 1100, "height": 900})
        await page.goto(f"{server.web_url}#/account")
        await page.get_by_role("heading", name="Sign up").wait_for()
        await page.fill("input[name=sign-up-name]", "Web Person")
        await page.fill("input[name=new-password]", PASSWORD)
        await page.fill("input[name=confirm-password]", PASSWORD)
        await page.get_by_role("button", name="Sign up").click()
        await page.locator("tr.session.current").wait_for()
        assert await page.locator("tr.session").count() == 1
        # When and from where the session was last used (this page's own listing used it).
        last_used = await page.locator("tr.session.current td.last-used").inner_text()
        assert last_used.endswith(" UTC") and last_used[:4].isdigit()
        await shoot(page, "account-signed-in")
        await check_accessibility(page)
        # The token is in this browser's storage, never on the page.
        token = await page.evaluate("localStorage.getItem('spades-session-token')")
        assert token.startswith("sps.") and token not in await page.content()

        await page.fill("input[name=bot-name]", "Web Bot")
        await page.get_by_role("button", name="Create bot").click()
        key = await page.locator("code.key").inner_text()
        assert key.startswith("spk.")
        await page.locator("tr.bot", has_text="Web Bot").wait_for()
        await shoot(page, "account-bot-created")
        await check_accessibility(page)
        async with SpadesClient(f"127.0.0.1:{server.port}", account_key=key) as bot:
            assert await bot.sessions() == ()  # the key works (a bot has no sessions)
        await page.reload()
        assert await page.locator("code.key").count() == 0  # shown once

        await page.get_by_role("button", name="Sign out").first.click()
        await page.get_by_role("heading", name="Sign in").wait_for()
        assert await page.evaluate("localStorage.getItem('spades-session-token')") is None
        await page.fill("input[name=sign-in-name]", "web person")
        await page.fill("input[name=current-password]", "not the password")
        await page.get_by_role("button", name="Sign in").click()
        error = page.locator(".message.error")
        await error.wait_for()
        assert "WRONG_PASSWORD" in await error.inner_text()
        await shoot(page, "account-wrong-password")

        await page.fill("input[name=current-password]", PASSWORD)
        await page.get_by_role("button", name="Sign in").click()
        await page.locator("tr.session.current").wait_for()
        browser_session = await page.locator("tr.session.current button").get_attribute(
            "data-session-id"
        )
        # From elsewhere (the terminal, say), the person revokes the browser's session.
        async with SpadesClient(f"127.0.0.1:{server.port}") as client:
            signed = await client.sign_in("Web Person", PASSWORD)
            client.account_key = signed.token
            assert browser_session
            await client.revoke_session(browser_session)
        await page.reload()
        error = page.locator(".message.error")
        await error.wait_for()
        assert "SESSION_REVOKED" in await error.inner_text()
        await page.get_by_role("heading", name="Sign in").wait_for()
        await shoot(page, "account-session-revoked")
        await check_accessibility(page)
        await on_phone(browser, f"{server.web_url}#/account", "h2", "account")
