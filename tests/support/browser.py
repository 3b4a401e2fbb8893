"""A real browser for the web tests: Debian's chromium through Playwright (no download), the
check that the site is built, and screenshots into ``test-artifacts/web/``."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, async_playwright
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

from spades_server.app.server import WEB_CLIENT

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


async def texts(page: Page, selector: str) -> list[str]:
    return [text.strip() for text in await page.locator(selector).all_inner_texts()]


async def play_until_over(page: Page, rounds: int = 3000) -> int:
    """Play the person's seat on a table page by clicking, to the match's end: the first bid
    offered, the first legal card; how many cards it played. A control the page redrew (a new
    prompt, the clock acting) before the click landed is looked for again."""
    played = 0
    for _ in range(rounds):
        if await page.locator(".status.match-over").count():
            return played
        bids = page.locator(".choices button.choice")
        legal = page.locator(".hand .card.legal")
        try:
            if await bids.count():
                await bids.first.click(timeout=2_000)
            elif await legal.count():
                before = await page.locator(".hand .card").count()
                await legal.first.click(timeout=2_000)
                await page.wait_for_function(
                    f"document.querySelectorAll('.hand .card').length < {before}"
                    " || document.querySelector('.status.match-over') !== null",
                    timeout=10_000,
                )
                played += 1
            else:
                await page.wait_for_timeout(30)
        except PlaywrightTimeoutError:
            continue
    raise AssertionError("the match did not end")
