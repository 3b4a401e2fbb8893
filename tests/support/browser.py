"""A real browser for the web tests: Debian's chromium through Playwright (no download), the
check that the site is built, screenshots into ``test-artifacts/web/`` (one at a phone's size for
every page), axe-core's accessibility check, and walking a page by the keyboard alone."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Locator, Page, ViewportSize, async_playwright
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

from spades.client import SpadesClient
from spades.engine import Rules
from spades_server.app.server import WEB_CLIENT, SpadesServer

CHROMIUM = os.environ.get("SPADES_TEST_CHROMIUM", "/usr/bin/chromium")


ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "web"

#: axe-core, from npm (server/web's devDependencies, installed by `make web`).
AXE = ROOT / "server" / "web" / "node_modules" / "axe-core" / "axe.min.js"

#: A phone's screen (an iPhone 14's CSS pixels): every page gets one screenshot at this size.
PHONE: ViewportSize = {"width": 390, "height": 844}

#: The violations that fail a test: a person with a disability cannot use the page (axe's
#: "minor" and "moderate" ones are reported by axe but are not blockers).
BLOCKING = frozenset({"serious", "critical"})


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
    if not AXE.is_file():
        pytest.fail(f"no axe-core at {AXE}: run `make web` (server/web's devDependencies)")
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


async def check_accessibility(page: Page) -> None:
    """Run axe-core on the page as it is now; fail on any serious or critical violation, each
    named with its rule, its help and the elements it found."""
    if not await page.evaluate("() => typeof window.axe === 'object'"):
        await page.add_script_tag(path=str(AXE))
    found = await page.evaluate(
        "async () => (await window.axe.run(document, { resultTypes: ['violations'] })).violations"
    )
    blocking = [
        f"{violation['id']} ({violation['impact']}): {violation['help']} at "
        + "; ".join(
            f"{' '.join(node['target'])}: {node.get('failureSummary', '')}"
            for node in violation["nodes"][:5]
        )
        for violation in found
        if violation["impact"] in BLOCKING
    ]
    assert not blocking, f"axe-core found on {page.url}:\n" + "\n".join(blocking)


async def on_phone(browser: Browser, url: str, ready: str, name: str) -> Page:
    """Open ``url`` at a phone's size, wait for ``ready`` (a selector), check it with axe-core
    and take its screenshot ``name``-phone; the page is returned for more checks."""
    page = await browser.new_page(viewport=PHONE)
    await page.goto(url)
    await page.locator(ready).first.wait_for()
    await shoot(page, f"{name}-phone")
    await check_accessibility(page)
    # Nothing wider than the screen: the page scrolls down, never sideways.
    width = await page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= PHONE["width"], f"{url} is {width} px wide on a {PHONE['width']} px phone"
    return page


#: The outline the focused element shows ("" for none): every focusable control draws one.
_FOCUS_RING = """
() => {
  const element = document.activeElement;
  if (!element || element === document.body) return "";
  const style = getComputedStyle(element);
  const drawn = style.outlineStyle !== "none" && parseFloat(style.outlineWidth) > 0;
  return drawn ? `${style.outlineWidth} ${style.outlineStyle} ${style.outlineColor}` : "";
}
"""


async def tab_to(page: Page, selector: str, most: int = 60, back: bool = False) -> None:
    """Press Tab (Shift+Tab when ``back``) until the focus is on an element ``selector``
    matches, checking at each stop that the focus can be seen; fail after ``most`` presses."""
    for _ in range(most):
        await page.keyboard.press("Shift+Tab" if back else "Tab")
        if await page.evaluate("(s) => document.activeElement?.matches(s) ?? false", selector):
            await assert_focus_visible(page)
            return
    raise AssertionError(f"{most} presses of Tab never reached {selector}")


async def assert_focus_visible(page: Page) -> None:
    """The focused element shows that it has the focus (an outline)."""
    ring = await page.evaluate(_FOCUS_RING)
    described = await page.evaluate("() => document.activeElement?.outerHTML.slice(0, 120)")
    assert ring, f"no visible focus on {described}"


async def focused(page: Page, attribute: str) -> str | None:
    """An attribute of the element that has the focus (None if it has none)."""
    value = await page.evaluate(
        "(name) => document.activeElement?.getAttribute(name) ?? null", attribute
    )
    return None if value is None else str(value)


#: A point of the element that shows on top (not covered by another), in the page's pixels.
_VISIBLE_POINT = """
(element) => {
  element.scrollIntoView({ block: "nearest" });
  const box = element.getBoundingClientRect();
  for (let y = 0.5; y < 0.95; y += 0.1) {
    for (let x = 0.1; x < 0.95; x += 0.1) {
      const [px, py] = [box.left + box.width * x, box.top + box.height * y];
      if (element.contains(document.elementFromPoint(px, py))) return [px, py];
    }
  }
  // Covered, or no longer in the page (a box of nothing): say which, for the caller.
  const middle = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
  return `${JSON.stringify(box)}, at its middle ${middle?.outerHTML.slice(0, 200)}`;
}
"""


async def press(page: Page, locator: Locator) -> None:
    """Click the element where it can be seen, as a person taps a card of a fanned hand (the
    next card covers most of it; Playwright's own click aims at the middle). The page may draw
    itself again meanwhile (the element found was replaced): then it is found again."""
    await page.mouse.move(0, 0)  # (a card under the pointer rises over its neighbours)
    point: object = None
    for _ in range(50):
        point = await locator.evaluate(_VISIBLE_POINT)
        if isinstance(point, list):
            await page.mouse.click(point[0], point[1])
            return
    raise AssertionError(f"no part of the element can be seen to press: {point}")


async def seat_a_person(
    server: SpadesServer, page: Page, table: str, rules: Rules, player: str
) -> str:
    """A table named ``table`` with ``player`` (a person) South and three house bots, the page
    opened on the seat: the tab holds the seat's token, as the lobby's "Sit down" leaves it.
    Returns the table's id."""
    async with SpadesClient(f"127.0.0.1:{server.port}") as client:
        table_id = (await client.create_table(table, rules)).table_id
        ticket = await client.join_table(table_id, player, seat="south", bot=False)
        await page.goto(server.web_url)
        await page.evaluate(
            "([key, token]) => sessionStorage.setItem(key, token)",
            [f"spades-seat:{table_id}", ticket.token],
        )
        await page.goto(f"{server.web_url}#/play/{table_id}")
        for _ in range(3):
            await client.add_house_bot(table_id)
    return table_id


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
                await press(page, legal.first)  # the fanned hand: the card's visible edge
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
