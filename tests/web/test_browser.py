"""The web client in a real browser: Debian's chromium, driven by Playwright (the system
browser; nothing is downloaded), against a real server's web port.

The site must be built first (``make web``; ``make test`` does it). Screenshots go to
``test-artifacts/web/`` for a person to look at.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
import pytest_asyncio
from google.protobuf import json_format
from playwright.async_api import Browser, Page, async_playwright

from spades import protocol
from spades.bot import BotView, play_match
from spades.client import SpadesClient
from spades.engine import Card, Rules
from spades.v1 import cards_pb2, events_pb2, play_pb2, play_pb2_grpc
from spades_bots.random_bot import RandomBot
from spades_server.server import WEB_CLIENT, SpadesServer
from tests.web.conftest import web_server

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
async def server(tmp_path: Path) -> AsyncIterator[SpadesServer]:
    require_site()
    async with web_server(tmp_path / "tables.db", house_bots=8) as served:
        yield served


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


async def public_record(server: SpadesServer, table_id: str) -> list[events_pb2.Event]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        got = await play_pb2_grpc.PlayServiceStub(channel).GetRecord(
            play_pb2.GetRecordRequest(table_id=table_id)
        )
    return list(got.record.events)


def tricks_of(events: list[events_pb2.Event]) -> list[list[tuple[str, str]]]:
    """Every trick's plays as (seat name, card key like the page's data-card) in order."""
    tricks: list[list[tuple[str, str]]] = [[]]
    for event in events:
        kind = event.WhichOneof("kind")
        if kind == "card_played":
            played = event.card_played
            seat = protocol.seat_from_proto(played.seat)
            tricks[-1].append(
                (
                    ("North", "East", "South", "West")[seat],
                    f"{played.card.rank}-{played.card.suit}",
                )
            )
        elif kind == "trick_won":
            tricks.append([])
    return [trick for trick in tricks if trick]


@pytest.mark.asyncio
async def test_a_spectator_opens_a_table_of_house_bots_and_follows_it_to_the_end(
    server: SpadesServer, browser: Browser
) -> None:
    page = await browser.new_page(viewport={"width": 1100, "height": 900})
    failures: list[str] = []
    page.on("pageerror", lambda error: failures.append(str(error)))
    await page.goto(server.web_url)
    await page.get_by_role("heading", name="Tables").wait_for()
    await shoot(page, "lobby-empty")

    await page.fill("input[name=name]", "Browser table")
    await page.fill("input[name=hands]", "1")
    await page.click("button[type=submit]")
    await page.wait_for_url(re.compile(r"#/table/"))
    table_id = page.url.rsplit("/", 1)[1]

    await page.locator(".status.match-over").wait_for(timeout=60_000)
    status = await page.locator(".status").inner_text()
    assert not failures, failures
    events = await public_record(server, table_id)
    # One hand, or more when it ended tied (the rules play on to a clear leader).
    scored = [event.hand_scored for event in events if event.HasField("hand_scored")]
    assert scored and len(tricks_of(events)) == 13 * len(scored)

    # The score table after each hand matches the server's scoring.
    for hand in scored:
        row = page.locator(f"tr[data-hand='{hand.hand_number}'] td.total")
        totals = [int(text) for text in await row.all_inner_texts()]
        assert totals == [side.total_score for side in hand.sides]
    (ended,) = [event.match_ended for event in events if event.HasField("match_ended")]
    assert " \u2013 ".join(str(score) for score in ended.final_scores) in status  # en dash
    await shoot(page, "score-table")

    # The lobby now lists the table as finished.
    await page.click("a.brand")
    listed = page.locator(f"tr[data-table-id='{table_id}'] td.status")
    await listed.wait_for()
    for _ in range(50):
        if await listed.inner_text() == "finished":
            break
        await asyncio.sleep(0.1)
    assert await listed.inner_text() == "finished"
    await shoot(page, "lobby")


class SlowRandom(RandomBot):
    """Random play at a pace a person (and the test's sampling) can follow."""

    async def play(self, view: BotView) -> Card:  # type: ignore[override]
        await asyncio.sleep(0.08)
        return super().play(view)


@pytest.mark.asyncio
async def test_a_spectator_sees_each_card_as_it_is_played_and_no_other(
    server: SpadesServer, browser: Browser
) -> None:
    async with SpadesClient(f"127.0.0.1:{server.port}") as client:
        created = await client.create_table("Slow table", Rules(max_hands=1))
        table_id = created.table.table_id
        tickets = [await client.join_table(table_id, f"slow {seat}") for seat in range(4)]
        page = await browser.new_page(viewport={"width": 1100, "height": 900})
        await page.goto(f"{server.web_url}#/table/{table_id}")
        await page.locator(".status").wait_for()
        playing = asyncio.gather(
            *(
                play_match(client, SlowRandom(seed), ticket.token, table_id=table_id)
                for seed, ticket in enumerate(tickets)
            )
        )
        # Sample what the page shows while the hand is played: a trick's cards appear only as
        # they are played (each sample is a prefix of that trick in the public record), never
        # a card that is still in a hand; and the page keeps up with the match.
        shown_tricks: list[list[tuple[str, str]]] = []
        while not playing.done():
            cards = await page.eval_on_selector_all(
                ".trick .card", "els => els.map(e => [e.title.split(' ')[0], e.dataset.card])"
            )
            if cards:
                shown_tricks.append([(seat, key) for seat, key in cards])
                if len(shown_tricks) == 40:
                    await shoot(page, "table-mid-hand")
            await asyncio.sleep(0.03)
        await playing
        await page.locator(".status.match-over").wait_for(timeout=10_000)
    events = await public_record(server, table_id)
    tricks = tricks_of(events)
    # 13 a hand: one hand, or more when it ended tied (the rules play on to a clear leader).
    assert len(tricks) == 13 * sum(event.HasField("hand_scored") for event in events) > 0
    assert len(shown_tricks) > 40  # the page was sampled all through the hand
    for shown in shown_tricks:
        assert any(trick[: len(shown)] == shown for trick in tricks), shown
    # Every trick was seen on the page at some point, so the sampling did cover the hand.
    seen = {tuple(shown) for shown in shown_tricks}
    assert sum(any(tuple(trick[:n]) in seen for n in (1, 2, 3, 4)) for trick in tricks) >= 10


@pytest.mark.asyncio
async def test_an_unknown_table_says_so(server: SpadesServer, browser: Browser) -> None:
    page = await browser.new_page()
    await page.goto(f"{server.web_url}#/table/no-such-table")
    message = page.locator(".message.error")
    await message.wait_for()
    assert "no-such-table" in await message.inner_text()


#: Recorded in the page: every gRPC-Web response body, chunk by chunk, as the page's fetch got
#: it (a copy of each stream, read beside the app).
RECORD_RESPONSES = """
(() => {
  window.__grpcWeb = [];
  const original = window.fetch;
  window.fetch = async (...args) => {
    const response = await original(...args);
    const url = String(args[0] && args[0].url ? args[0].url : args[0]);
    if (response.body && url.includes("spades.v1.")) {
      const [mine, theirs] = response.body.tee();
      const entry = { url, chunks: [] };
      window.__grpcWeb.push(entry);
      (async () => {
        const reader = mine.getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          entry.chunks.push(Array.from(value));
        }
      })().catch(() => {});  // the app cancels a finished stream: the copy ends there too
      return new Response(theirs, { status: response.status, headers: response.headers });
    }
    return response;
  };
})();
"""


def seat_responses(recorded: list[dict[str, object]]) -> list[play_pb2.SeatResponse]:
    """Every message the page's Seat streams received, parsed from the recorded bytes."""
    messages = []
    for entry in recorded:
        if not str(entry["url"]).endswith("/spades.v1.PlayService/Seat"):
            continue
        body = bytes(byte for chunk in entry["chunks"] for byte in chunk)  # type: ignore[attr-defined]
        offset = 0
        while offset + 5 <= len(body):
            flag, length = body[offset], int.from_bytes(body[offset + 1 : offset + 5], "big")
            payload = body[offset + 5 : offset + 5 + length]
            offset += 5 + length
            if flag == 0:
                messages.append(play_pb2.SeatResponse.FromString(payload))
    return messages


@pytest.mark.asyncio
async def test_a_person_plays_a_hand_by_clicking_and_sees_a_refusal(
    server: SpadesServer, browser: Browser
) -> None:
    page = await browser.new_page(viewport={"width": 1100, "height": 1000})
    await page.add_init_script(RECORD_RESPONSES)
    failures: list[str] = []
    page.on("pageerror", lambda error: failures.append(str(error)))
    await page.goto(server.web_url)
    await page.fill("input[name=name]", "A person's table")
    await page.fill("input[name=hands]", "1")
    await page.fill("input[name=player]", "Robin")
    await page.click("button[name=sit]")
    await page.wait_for_url(re.compile(r"#/play/"))
    table_id = page.url.rsplit("/", 1)[1]

    refused_once = False
    played = 0
    shown_hand: set[str] = set()
    for _ in range(2000):
        shown_hand.update(
            await page.eval_on_selector_all(".hand .card", "els => els.map(e => e.dataset.card)")
        )
        if await page.locator(".status.match-over").count():
            break
        bids = page.locator(".choices button.choice")
        legal = page.locator(".hand .card.legal")
        if await bids.count():
            choice = page.locator(".choices button[data-choice='3']")
            await (choice if await choice.count() else bids.first).click()
        elif await legal.count():
            dimmed = page.locator(".hand .card.dimmed")
            if not refused_once and await dimmed.count():
                # A card the rules do not allow now: the server refuses, and the page says why.
                await dimmed.first.click()
                refusal = page.locator(".refusal")
                await refusal.wait_for(timeout=10_000)
                reason = (await refusal.inner_text()).lower()
                assert "follow" in reason or "spades are not broken" in reason, reason
                await shoot(page, "player-refused")
                refused_once = True
                continue
            before = await page.locator(".hand .card").count()
            await legal.first.click()
            for _ in range(100):
                if await page.locator(".hand .card").count() < before:
                    break
                await asyncio.sleep(0.02)
            played += 1
            if played == 5:
                await shoot(page, "player-mid-hand")
        await asyncio.sleep(0.03)
    assert await page.locator(".status.match-over").count(), await page.content()
    assert refused_once, "no turn had a card the rules forbade"
    # 13 cards a hand: one hand, or more when it ended tied (the rules play on to a leader).
    events = await public_record(server, table_id)
    hands = sum(event.HasField("hand_scored") for event in events)
    assert hands >= 1 and played == 13 * hands
    assert not failures, failures
    await page.locator(".score-table tr[data-hand='1']").wait_for()
    await shoot(page, "player-score-table")

    # What reached the page: South's view only. Never another seat's dealt cards, never a card
    # in a hand but the person's own.
    recorded = await page.evaluate("window.__grpcWeb")
    received = seat_responses(recorded)
    assert received and received[0].WhichOneof("kind") == "snapshot"
    south = cards_pb2.SEAT_SOUTH
    first_view = received[0].snapshot.view
    assert first_view.viewer == south
    # Each hand as the seat was shown it: the first in the snapshot (the deal may be older
    # than the stream) or in the seat's own CardsDealt, each later one in its CardsDealt.
    deals = [{(card.suit, card.rank) for card in first_view.hand}] if first_view.hand else []
    for message in received:
        if message.WhichOneof("kind") == "event" and message.event.HasField("cards_dealt"):
            dealt = message.event.cards_dealt
            if dealt.seat == south:
                deals.append({(card.suit, card.rank) for card in dealt.cards})
            else:
                assert not dealt.cards, dealt
    # Each deal once, 13 cards each.
    assert len(deals) == hands and all(len(deal) == 13 for deal in deals), deals
    own_cards = set().union(*deals)
    # Every card the page ever showed in the hand was South's own.
    assert shown_hand and all(
        (int(key.split("-")[1]), int(key.split("-")[0])) in own_cards for key in shown_hand
    )
    assert sum(1 for event in events if event.HasField("card_played")) == 52 * hands


@pytest.mark.asyncio
async def test_quick_match_seats_the_person_and_a_private_table_shows_its_code(
    tmp_path: Path, browser: Browser
) -> None:
    require_site()
    async with web_server(
        tmp_path / "tables.db", house_bots=8, quick_match_fill_after=0.2
    ) as served:
        page = await browser.new_page()
        await page.goto(served.web_url)
        await page.fill("input[name=player]", "Quinn")
        await page.click("button[name=quick-match]")
        await page.wait_for_url(re.compile(r"#/play/"))
        # House bots fill the table; the person is dealt a hand at a 25-hand quick-match table.
        await page.locator(".hand .card").first.wait_for(timeout=20_000)
        assert await page.locator(".seat-name", has_text="Quinn").count() == 1
        assert await page.locator(".hand .card").count() == 13

        await page.goto(served.web_url)
        await page.fill("input[name=name]", "Secret room")
        await page.check("input[name=private]")
        await page.fill("input[name=house-bots]", "0")
        await page.click("button[type=submit]")
        code = page.locator(".join-code")
        await code.wait_for()
        text = await code.inner_text()
        assert "join code" in text
        # Private tables are not listed in the lobby.
        await page.wait_for_timeout(2500)
        assert await page.locator("tr", has_text="Secret room").count() == 0


@pytest.mark.asyncio
async def test_the_record_viewer_steps_through_a_match_and_verifies_its_deals(
    server: SpadesServer, browser: Browser, tmp_path: Path
) -> None:
    async with SpadesClient(f"127.0.0.1:{server.port}") as client:
        created = await client.create_table("Recorded", Rules(max_hands=2))
        table_id = created.table.table_id
        for _ in range(4):
            await client.add_house_bot(table_id)
        for _ in range(300):
            if (await client.get_table(table_id)).status == "finished":
                break
            await asyncio.sleep(0.1)
        record = await client.get_record(table_id)
    assert record.seed, "the match ended and revealed its seed"
    # Two hands, or more when the scores tie (a tie plays another hand).
    hands = sum(1 for event in record.events if event.HasField("hand_started"))
    assert hands >= 2
    page = await browser.new_page(viewport={"width": 1100, "height": 1000})
    await page.goto(f"{server.web_url}#/record/{table_id}")
    verification = page.locator(".verification")
    await verification.wait_for()
    assert (await verification.get_attribute("class") or "").endswith("ok")
    assert f"Every one of the {hands} shuffled hands" in await verification.inner_text()
    # Hand 1: every seat's 13 cards, then the tricks one step at a time.
    assert await page.locator(".record-hand[data-hand='1'] .deal").count() == 4
    assert await page.locator(".record-hand .deal .card").count() == 52
    for step in range(1, 14):
        await page.click("button[name=next-trick]")
        assert await page.locator(".record-trick").count() == step
    assert await page.locator(".hand-score").count() == 1
    await page.click(".hand-picker button[data-hand='2']")
    assert await page.locator(".record-hand[data-hand='2']").count() == 1
    await shoot(page, "record-viewer")

    # A record file whose deal was changed after the fact is caught.
    tampered = play_pb2.GetRecordResponse(record=record).record
    dealt = next(event.cards_dealt for event in tampered.events if event.HasField("cards_dealt"))
    other = next(
        event.cards_dealt
        for event in tampered.events
        if event.HasField("cards_dealt") and event.cards_dealt.seat != dealt.seat
    )
    first, second = dealt.cards[0], other.cards[0]
    swapped = (
        cards_pb2.Card(suit=second.suit, rank=second.rank),
        cards_pb2.Card(suit=first.suit, rank=first.rank),
    )
    dealt.cards[0].CopyFrom(swapped[0])
    other.cards[0].CopyFrom(swapped[1])
    path = tmp_path / "tampered.json"
    path.write_text(json_format.MessageToJson(tampered))
    await page.goto(server.web_url)
    await page.set_input_files("input[name=record-file]", str(path))
    verification = page.locator(".verification")
    await verification.wait_for()
    assert (await verification.get_attribute("class") or "").endswith("failed")
    assert "Hand 1: the cards dealt are NOT the seed's deal" in await verification.inner_text()
