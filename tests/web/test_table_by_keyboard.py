"""The table page as people use it: a person signs up and plays a whole hand by the keyboard
alone (Tab, the arrow keys and Enter; the focus visible at every stop, and kept in the hand as
the page redraws itself), the cards drawn as cards and named for a screen reader, a finished
trick's winner marked as the server named it; and the page at a phone's size, checked by
axe-core. Screenshots go to ``test-artifacts/web/``."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page

from spades.client import SpadesClient
from spades.engine import Rules
from spades.v1 import cards_pb2
from tests.support.browser import (
    assert_focus_visible,
    check_accessibility,
    focused,
    on_phone,
    press,
    require_site,
    seat_a_person,
    shoot,
    tab_to,
)
from tests.support.servers import web_server

pytestmark = pytest.mark.asyncio

PASSWORD = "keys only, no mouse"

#: A card's name as the page says it ("Queen of hearts", "Big joker").
CARD_NAME = re.compile(
    r"(Two|Three|Four|Five|Six|Seven|Eight|Nine|Ten|Jack|Queen|King|Ace) of "
    r"(clubs|diamonds|hearts|spades)|(Big|Little) joker"
)

#: The name a screen reader says for the focused card.
FOCUSED_CARD_NAME = "() => document.activeElement?.querySelector('.card-name')?.textContent"

#: Every choice or playable card the seat has now (the prompt's), as the page offers them.
ACTIONABLE = ".choices button.choice, .hand button.card:not([disabled])"


async def type_into(page: Page, selector: str, text: str) -> None:
    """Tab to a field and type into it (replacing what it held), keys only."""
    await tab_to(page, selector)
    await page.keyboard.press("Control+A")
    await page.keyboard.type(text)


async def sign_up_by_keyboard(page: Page, name: str) -> None:
    await tab_to(page, "a[href='#/account']")
    await page.keyboard.press("Enter")
    await page.get_by_role("heading", name="Sign up").wait_for()
    await type_into(page, "input[name=sign-up-name]", name)
    await type_into(page, "input[name=new-password]", PASSWORD)
    await type_into(page, "input[name=confirm-password]", PASSWORD)
    await page.keyboard.press("Enter")  # submits the form the field is in
    await page.locator("tr.session.current").wait_for()


async def sign_out_and_in_by_keyboard(page: Page, name: str) -> None:
    await tab_to(page, "button[name=sign-out]")
    await page.keyboard.press("Enter")
    await page.get_by_role("heading", name="Sign in").wait_for()
    await type_into(page, "input[name=sign-in-name]", name)
    await type_into(page, "input[name=current-password]", PASSWORD)
    await page.keyboard.press("Enter")
    await page.locator("tr.session.current").wait_for()


async def take_turn(page: Page) -> str:
    """Act once on the prompt the page shows, by keys: Tab into the choices or the hand (unless
    the focus is there already), the arrow keys to move, Enter to act. Returns "bid" or the
    card played (its data-card)."""
    if not await page.evaluate("(s) => document.activeElement?.matches(s) ?? false", ACTIONABLE):
        await tab_to(page, ACTIONABLE)
    await assert_focus_visible(page)
    if await focused(page, "data-choice") is not None:
        # Walk the bids to 3 with the arrow keys (Home first: the lowest).
        await page.keyboard.press("Home")
        for _ in range(20):
            if await focused(page, "data-choice") == "3":
                break
            await page.keyboard.press("ArrowRight")
        await page.keyboard.press("Enter")
        return "bid"
    # A card: the arrow keys move between the playable ones only, and Enter plays one.
    first = await focused(page, "data-card")
    legal = await page.locator(".hand button.card:not([disabled])").count()
    await page.keyboard.press("End")
    last = await focused(page, "data-card")
    assert (first != last) == (legal > 1), (first, last, legal)
    label = await page.evaluate(FOCUSED_CARD_NAME)
    assert label and CARD_NAME.fullmatch(label), label
    await assert_focus_visible(page)
    await page.keyboard.press("Enter")
    return last or ""


async def test_a_person_signs_up_and_plays_a_whole_hand_by_keyboard_alone(
    tmp_path: Path, browser: Browser
) -> None:
    require_site()
    async with web_server(tmp_path / "keys.db", house_bots=8) as server:
        page = await browser.new_page(viewport={"width": 1100, "height": 1000})
        failures: list[str] = []
        page.on("pageerror", lambda error: failures.append(str(error)))
        await page.goto(server.web_url)
        await page.get_by_role("heading", name="Tables").wait_for()
        await sign_up_by_keyboard(page, "Keyboard Kim")
        await sign_out_and_in_by_keyboard(page, "Keyboard Kim")

        # Back to the lobby (its link in the header, behind the focus), and sit down.
        await tab_to(page, "a.brand", back=True)
        await page.keyboard.press("Enter")
        await page.get_by_role("heading", name="Tables").wait_for()
        await type_into(page, "input[name=name]", "Keys only")
        await type_into(page, "input[name=hands]", "1")
        await type_into(page, "input[name=player]", "Kim")
        await tab_to(page, "button[name=sit]")
        await page.keyboard.press("Enter")
        await page.wait_for_url(re.compile(r"#/play/"))
        table_id = page.url.rsplit("/", 1)[1]

        played: list[str] = []
        bids = 0
        won_seen = False
        for _ in range(3000):
            if await page.locator(".status.match-over").count():
                break
            won = page.locator(".trick.won .played.winning .card")
            if not won_seen and await won.count():
                # A won trick: its winning card ringed, its winner named and marked at the seat.
                caption = await page.locator(".trick .caption").inner_text()
                winner = caption.removesuffix(" won the trick")
                marked = page.locator(f".seat-panel.trick-winner[data-seat='{winner}']")
                won_seen = await marked.count() == 1
                if won_seen:
                    await shoot(page, "player-trick-won")
            if not await page.locator(ACTIONABLE).count():
                await asyncio.sleep(0.02)
                continue
            if bids == 0 and not played:
                await shoot(page, "player-bidding")
                await check_accessibility(page)  # the bidding prompt, as a person sees it
            before = await page.locator(".hand .card").count()
            action = await take_turn(page)
            if action == "bid":
                bids += 1
                await page.wait_for_function("() => !document.querySelector('.choices')")
                continue
            played.append(action)
            for _ in range(200):
                if await page.locator(".hand .card").count() < before:
                    break
                await asyncio.sleep(0.02)
            assert await page.locator(f".hand [data-card='{action}']").count() == 0
            # The page redrew itself, and the focus stayed with the seat's controls.
            assert await page.evaluate(
                "() => !!document.activeElement?.closest('.seat-controls')"
            ), await page.evaluate("() => document.activeElement?.outerHTML")
            if len(played) == 6:
                await shoot(page, "player-keyboard-mid-hand")
                await check_accessibility(page)
        assert await page.locator(".status.match-over").count(), await page.content()
        assert not failures, failures
        async with SpadesClient(f"127.0.0.1:{server.port}") as client:
            record = await client.get_record(table_id)
        south = cards_pb2.SEAT_SOUTH
        hands = sum(event.HasField("hand_scored") for event in record.events)
        mine = [
            f"{event.card_played.card.rank}-{event.card_played.card.suit}"
            for event in record.events
            if event.HasField("card_played") and event.card_played.seat == south
        ]
        # Every card South played was one pressed by Enter, in order; and South bid each hand.
        assert mine == played and len(played) == 13 * hands and bids == hands
        assert won_seen, "no finished trick was ever shown with its winning card marked"
        await shoot(page, "player-keyboard-match-over")


async def test_the_table_on_a_phone_draws_cards_as_cards_and_passes_axe(
    tmp_path: Path, browser: Browser
) -> None:
    require_site()
    async with web_server(tmp_path / "phone.db", house_bots=8) as server:
        page = await browser.new_page(viewport={"width": 390, "height": 844})
        failures: list[str] = []
        page.on("pageerror", lambda error: failures.append(str(error)))
        table_id = await seat_a_person(server, page, "On a phone", Rules(max_hands=1), "Pat")
        bid = page.locator(".choices button.choice")
        await bid.first.wait_for(timeout=20_000)
        # Thirteen cards, each a button named for a screen reader, drawn as an SVG card; none
        # may be played while the seat bids.
        cards = page.locator(".hand button.card")
        assert await cards.count() == 13
        names = await cards.evaluate_all(
            "cards => cards.map(card => card.querySelector('.card-name').textContent)"
        )
        assert all(CARD_NAME.fullmatch(name) for name in names), names
        # ... which is each button's accessible name, as a screen reader says it.
        await page.get_by_role("button", name=names[0], exact=True).wait_for()
        assert await page.locator(".hand button.card svg.card-face").count() == 13
        assert await page.locator(".hand button.card:not([disabled])").count() == 0
        # Suits in colour: hearts and diamonds red, spades and clubs black.
        colours = await cards.evaluate_all(
            "cards => cards.map(card => [card.querySelector('.card-name').textContent,"
            " getComputedStyle(card.querySelector('svg')).color])"
        )
        for name, colour in colours:
            red = name.endswith(("hearts", "diamonds"))
            assert (colour == "rgb(192, 38, 45)") == red, (name, colour)
        await shoot(page, "table-play-phone")
        await check_accessibility(page)
        width = await page.evaluate("() => document.documentElement.scrollWidth")
        assert width <= 390, width
        await page.locator(".choices button[data-choice='2']").click()
        # Each turn: the playable cards enabled, the rest disabled; play one by touch.
        for _ in range(2000):
            if await page.locator(".status.match-over").count():
                break
            playable = page.locator(".hand button.card:not([disabled])")
            if await playable.count():
                await press(page, playable.first)
                if await page.locator(".hand button.card").count() == 7:
                    await shoot(page, "table-play-mid-hand-phone")
                    await check_accessibility(page)
            await asyncio.sleep(0.03)
        await page.locator(".status.match-over").wait_for()
        await page.locator(".score-table").wait_for()
        width = await page.evaluate("() => document.documentElement.scrollWidth")
        assert width <= 390, width
        await shoot(page, "table-match-over-phone")
        await check_accessibility(page)
        # The spectator's view of the same table, at a phone's size.
        watcher = await on_phone(
            browser, f"{server.web_url}#/table/{table_id}", ".score-table", "table"
        )
        assert await watcher.locator(".hand").count() == 0
        assert not failures, failures
