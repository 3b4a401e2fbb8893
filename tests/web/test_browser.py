"""The web client in a real browser: Debian's chromium, driven by Playwright (the system
browser; nothing is downloaded), against a real server's web port.

The site must be built first (``make web``; ``make test`` does it). Screenshots go to
``test-artifacts/web/`` for a person to look at.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
import pytest_asyncio
from google.protobuf import descriptor_pool, json_format, message_factory
from google.protobuf.message import Message
from playwright.async_api import Browser

from spades import protocol
from spades.bot import Bot, BotView, Noted, play_match
from spades.client import SpadesClient
from spades.engine import Card, Clock, Rules
from spades.engine.rules import Direction
from spades.engine.variations import VARIATIONS
from spades.v1 import cards_pb2, events_pb2, play_pb2, play_pb2_grpc
from spades_bots.random_bot import RandomBot
from spades_server.app.server import SpadesServer
from tests.support.backends import Storages
from tests.support.browser import (
    check_accessibility,
    on_phone,
    press,
    require_site,
    seat_a_person,
    shoot,
)
from tests.support.servers import new_server, web_server

#: What the page writes between two sides' scores (an en dash), and before a negative one (a minus).
DASH, MINUS = "\u2013", "\u2212"


def shown_score(text: str) -> int:
    """A score as the page shows it: "134", or a negative one in brackets after a minus sign."""
    return (
        -int(text.removeprefix(f"({MINUS}").removesuffix(")"))
        if text.startswith("(")
        else int(text)
    )


@pytest_asyncio.fixture
async def server(tmp_path: Path) -> AsyncIterator[SpadesServer]:
    """A server with house bots on SQLite, for the tests of the page's own controls."""
    require_site()
    async with web_server(tmp_path / "tables.db", house_bots=8) as served:
        yield served


@pytest_asyncio.fixture
async def server_on_each_backend(storage: Storages) -> AsyncIterator[SpadesServer]:
    """The same server once on SQLite and once on PostgreSQL, for the tests whose page follows
    what the log holds as the server serves it (a table watched to its end, each card as it is
    played, a record): where the backends differ (PostgreSQL's lobby and Watch follow the log's
    final prefix)."""
    require_site()
    async with web_server(storage(), house_bots=8) as served:
        yield served


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
    server_on_each_backend: SpadesServer, browser: Browser
) -> None:
    server = server_on_each_backend
    page = await browser.new_page(viewport={"width": 1100, "height": 900})
    failures: list[str] = []
    page.on("pageerror", lambda error: failures.append(str(error)))
    await page.goto(server.web_url)
    await page.get_by_role("heading", name="Tables").wait_for()
    await shoot(page, "lobby-empty")
    await check_accessibility(page)

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
        totals = [shown_score(text) for text in await row.all_inner_texts()]
        assert totals == [side.total_score for side in hand.sides]
    (ended,) = [event.match_ended for event in events if event.HasField("match_ended")]
    shown = [f"({MINUS}{-score})" if score < 0 else str(score) for score in ended.final_scores]
    assert f" {DASH} ".join(shown) in status
    await shoot(page, "score-table")
    await check_accessibility(page)

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
    await check_accessibility(page)
    await on_phone(browser, server.web_url, f"tr[data-table-id='{table_id}']", "lobby")


class SlowRandom(RandomBot):
    """Random play at a pace a person can follow."""

    async def play(self, view: BotView) -> Card:  # type: ignore[override]
        await asyncio.sleep(0.08)
        return super().play(view)


@pytest.mark.asyncio
async def test_a_spectator_sees_each_card_as_it_is_played_and_no_other(
    server_on_each_backend: SpadesServer, browser: Browser
) -> None:
    server = server_on_each_backend
    async with SpadesClient(f"127.0.0.1:{server.port}") as client:
        created = await client.create_table("Slow table", Rules(max_hands=1))
        table_id = created.table.table_id
        tickets = [await client.join_table(table_id, f"slow {seat}") for seat in range(4)]
        page = await browser.new_page(viewport={"width": 1100, "height": 900})
        await page.add_init_script(RECORD_RESPONSES)
        await page.add_init_script(RECORD_TABLE)
        await page.goto(f"{server.web_url}#/table/{table_id}")
        await page.locator(".status").wait_for()
        playing = asyncio.gather(
            *(
                play_match(client, SlowRandom(seed), ticket.token, table_id=table_id)
                for seed, ticket in enumerate(tickets)
            )
        )
        await page.wait_for_function("() => window.__tricksShown.length >= 6")
        await shoot(page, "table-mid-hand")
        await playing
        await page.locator(".status.match-over").wait_for(timeout=10_000)
        recorded = await page.evaluate("window.__grpcWeb")
        shown_tricks = [
            [(seat, key) for seat, key in shown]
            for shown in await page.evaluate("window.__tricksShown")
        ]
        off_the_table = set(await page.evaluate("Array.from(window.__offTheTable)"))
    # A spectator's page never held a card that was not on the table, and no response of any
    # call it made (the Watch stream, the listing) carried one.
    assert off_the_table == set()
    every = responses(recorded)
    assert "Watch" in {name for name, _ in every}
    assert sum(1 for _, message in every for path, _, _ in cards_in(message)) >= 52
    assert unplayed_cards(every) == set()
    events = await public_record(server, table_id)
    tricks = tricks_of(events)
    # 13 a hand: one hand, or more when it ended tied (the rules play on to a clear leader).
    assert len(tricks) == 13 * sum(event.HasField("hand_scored") for event in events) > 0
    # Whatever the trick showed, drawn after drawn, was a trick's cards as they were played
    # (a prefix of that trick in the public record), never a card still in a hand; and every
    # trick was shown whole once it was won, so the page followed the hand to its end.
    for shown in shown_tricks:
        assert any(trick[: len(shown)] == shown for trick in tricks), shown
    assert [trick for trick in tricks if trick not in shown_tricks] == []


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


def responses(recorded: list[dict[str, object]]) -> list[tuple[str, Message]]:
    """Every message the page's gRPC-Web calls received, each with its method's name, parsed
    as the method's response type (from the protos) from the recorded bytes."""
    messages: list[tuple[str, Message]] = []
    for entry in recorded:
        method = str(entry["url"]).rsplit("/", 2)
        found = descriptor_pool.Default().FindMethodByName(f"{method[-2]}.{method[-1]}")
        reply = message_factory.GetMessageClass(found.output_type)
        body = bytes(byte for chunk in entry["chunks"] for byte in chunk)  # type: ignore[attr-defined]
        offset = 0
        while offset + 5 <= len(body):
            flag, length = body[offset], int.from_bytes(body[offset + 1 : offset + 5], "big")
            if flag == 0:
                messages.append(
                    (found.name, reply.FromString(body[offset + 5 : offset + 5 + length]))
                )
            offset += 5 + length
    return messages


#: The fields under which a card is one already played (public to every viewer).
PLAYED = frozenset({"card_played", "trick_won", "current_trick", "completed_tricks"})


def cards_in(
    message: Message, path: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], int, int]]:
    """Every Card anywhere in ``message``: (the field names leading to it, suit, rank)."""
    found = []
    for field, value in message.ListFields():
        if field.message_type is None:
            continue
        for item in value if field.is_repeated else [value]:
            if field.message_type.full_name == "spades.v1.Card":
                found.append(((*path, field.name), item.suit, item.rank))
            else:
                found.extend(cards_in(item, (*path, field.name)))
    return found


def unplayed_cards(messages: list[tuple[str, Message]]) -> set[tuple[int, int]]:
    """The cards the messages carry other than as played cards: a spectator gets none, a
    seat only its own."""
    return {
        (suit, rank)
        for _, message in messages
        for path, suit, rank in cards_in(message)
        if not PLAYED & set(path)
    }


#: Every card in the page's DOM that is not on the table (in the trick), as "rank-suit".
CARDS_OFF_THE_TABLE = """
() => Array.from(document.querySelectorAll("[data-card]"))
  .filter((element) => !element.closest(".trick"))
  .map((element) => element.dataset.card)
"""


#: Recorded in the page: each time the page draws the table anew (a MutationObserver's
#: callback, which runs after each drawing, before the page takes the next event), the
#: trick's cards as (seat, card) when they differ from the last drawing's, and every card drawn
#: anywhere but the trick. The page draws on every event, so this is all it ever showed, however
#: slowly the test's own calls into the page come on a loaded machine.
RECORD_TABLE = """
(() => {
  window.__tricksShown = [];
  window.__offTheTable = new Set();
  let previous = "";
  new MutationObserver(() => {
    const cards = Array.from(document.querySelectorAll(".trick .card"))
      .map((card) => [card.title.split(" ")[0], card.dataset.card]);
    const drawn = JSON.stringify(cards);
    if (drawn !== previous && cards.length) window.__tricksShown.push(cards);
    previous = drawn;
    for (const card of document.querySelectorAll("[data-card]")) {
      if (!card.closest(".trick")) window.__offTheTable.add(card.dataset.card);
    }
  }).observe(document, { childList: true, subtree: true });
})();
"""


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
    clock_seen = False
    played = 0
    shown_hand: set[str] = set()
    for _ in range(2000):
        # Every card the page holds anywhere but on the table (the hand, and any other place).
        shown_hand.update(await page.evaluate(CARDS_OFF_THE_TABLE))
        if await page.locator(".status.match-over").count():
            break
        bids = page.locator(".choices button.choice")
        legal = page.locator(".hand .card.legal")
        # Counted once a round: bid buttons that appeared between two counts were clicked with
        # the clock never looked at (the one bid of the hand then went by unchecked).
        bidding = await bids.count()
        if not clock_seen and bidding:
            # The turn's clock (30 s a turn by default) counts down while the person thinks.
            clock = page.locator(".seat-controls .clock")
            first = int((await clock.inner_text()).split()[0])
            assert 25 <= first <= 30, first
            for _ in range(40):  # it ticks every second: within 4 s, surely
                await page.wait_for_timeout(100)
                later = int((await clock.inner_text()).split()[0])
                if later < first:
                    break
            assert first - 2 <= later < first, (first, later)
            await shoot(page, "player-clock")
            clock_seen = True
        if bidding:
            choice = page.locator(".choices button[data-choice='3']")
            await (choice if await choice.count() else bids.first).click()
        elif await legal.count():
            dimmed = page.locator(".hand .card.dimmed")
            if not refused_once and await dimmed.count():
                # A card the rules do not allow now cannot be pressed; were a page to send it
                # anyway (one behind the table, say), the server refuses and the page says why.
                assert await dimmed.first.is_disabled()
                await dimmed.first.evaluate("card => card.removeAttribute('disabled')")
                await press(page, dimmed.first)
                refusal = page.locator(".refusal")
                await refusal.wait_for(timeout=10_000)
                reason = (await refusal.inner_text()).lower()
                assert "follow" in reason or "spades are not broken" in reason, reason
                await shoot(page, "player-refused")
                refused_once = True
                continue
            before = await page.locator(".hand .card").count()
            await press(page, legal.first)
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
    assert clock_seen
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
    # Nor did any response of any call the page made (the seat's stream, its actions, the
    # listing) carry a card other than South's own or one already played.
    every = responses(recorded)
    assert {name for name, _ in every} >= {"Seat", "Act"}
    assert unplayed_cards(every) == own_cards


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
    server_on_each_backend: SpadesServer, browser: Browser, tmp_path: Path
) -> None:
    server = server_on_each_backend
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
    await check_accessibility(page)
    await on_phone(browser, f"{server.web_url}#/record/{table_id}", ".verification", "record")

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


class Noting(Bot):
    """Random play, each bid and every other card explained in a sealed note (with markup that
    must show as text)."""

    def __init__(self, seed: int) -> None:
        self.random = RandomBot(seed)

    def bid(self, view: BotView) -> Noted[int]:
        tricks = self.random.bid(view)
        return Noted(tricks, f"<b>bid</b> {tricks} from seat {view.seat}")

    def play(self, view: BotView) -> Card | Noted[Card]:
        card = self.random.play(view)
        return Noted(card, f"{card} because") if len(view.hand) % 2 else card


@pytest.mark.asyncio
async def test_the_record_viewer_shows_each_sealed_note_beside_its_bid_or_card(
    server: SpadesServer, browser: Browser, tmp_path: Path
) -> None:
    async with SpadesClient(f"127.0.0.1:{server.port}") as client:
        created = await client.create_table("Noted", Rules(max_hands=1))
        table_id = created.table.table_id
        tickets = [await client.join_table(table_id, f"noting {seat}") for seat in range(4)]
        await asyncio.wait_for(
            asyncio.gather(
                *(
                    play_match(client, Noting(seed), ticket.token, table_id=table_id)
                    for seed, ticket in enumerate(tickets)
                )
            ),
            60,
        )
        record = await client.get_record(table_id)
    played = {n.sequence for n in record.notes if " because" in n.text}
    assert len(record.notes) == 4 + len(played) and 0 < len(played) < 52
    page = await browser.new_page(viewport={"width": 1100, "height": 1000})
    failures: list[str] = []
    page.on("pageerror", lambda error: failures.append(str(error)))
    await page.goto(f"{server.web_url}#/record/{table_id}")
    verification = page.locator(".verification")
    await verification.wait_for()
    assert (await verification.get_attribute("class") or "").endswith("ok")
    revealed = f"Every action's commitment matches its sealed note ({len(record.notes)} revealed)"
    assert revealed in await verification.inner_text()
    bid_notes = page.locator(".record-hand > .sealed-notes .sealed-note")
    assert await bid_notes.count() == 4
    first = await bid_notes.first.inner_text()
    assert re.fullmatch(r"\w+ \(bid [^)]+\): <b>bid</b> \d+ from seat \d", first), first
    assert await page.locator(".sealed-note b").count() == 0, "a note's markup was rendered"
    for _ in range(13):
        await page.click("button[name=next-trick]")
    card_notes = page.locator(".record-trick .sealed-note")
    assert await card_notes.count() == len(played)
    assert "because" in await card_notes.first.inner_text()
    await shoot(page, "record-viewer-notes")

    # A record file whose note was changed after the match is caught in the browser.
    tampered = play_pb2.GetRecordResponse(record=record).record
    tampered.notes[0].text = "I meant to bid one more"
    path = tmp_path / "tampered-note.json"
    path.write_text(json_format.MessageToJson(tampered))
    await page.goto(server.web_url)
    await page.set_input_files("input[name=record-file]", str(path))
    await verification.wait_for()
    assert (await verification.get_attribute("class") or "").endswith("failed")
    changed = f"Event {tampered.notes[0].sequence}: the commitment to its sealed note does NOT"
    assert changed in await verification.inner_text()
    assert not failures


@pytest.mark.asyncio
async def test_a_table_opened_with_rule_variations_shows_their_badges_and_a_bad_mix_is_refused(
    server: SpadesServer, browser: Browser
) -> None:
    page = await browser.new_page(viewport={"width": 1100, "height": 1300})
    failures: list[str] = []
    page.on("pageerror", lambda error: failures.append(str(error)))
    await page.goto(server.web_url)
    await page.fill("input[name=name]", "Variations")
    await page.fill("input[name=target]", "300")
    await page.fill("input[name=house-bots]", "0")
    for variation in ("blind-nil", "two-of-clubs-leads", "spades-lead-any-time"):
        await page.check(f"input[name={variation}]")
    await page.fill("input[name=minimum-team-bid]", "4")
    await page.fill("input[name=turn-seconds]", "45")
    await shoot(page, "lobby-variations")
    await page.click("button[type=submit]")
    await page.wait_for_url(re.compile(r"#/table/"))
    table_id = page.url.rsplit("/", 1)[1]

    # The server made the table with exactly the rules chosen (the rest at their defaults) ...
    async with SpadesClient(f"127.0.0.1:{server.port}") as client:
        table = await client.get_table(table_id)
    expected = Rules(
        target_score=300,
        blind_nil=True,
        two_of_clubs_leads=True,
        spades_must_be_broken=False,
        minimum_team_bid=4,
        clock=Clock(turn_millis=45_000, extension_millis=30_000),
    )
    assert table.rules == expected
    # ... and the lobby shows the server's badges for them.
    await page.click("a.brand")
    row = page.locator(f"tr[data-table-id='{table_id}']")
    await row.wait_for()
    shown = await row.locator(".badge").all_inner_texts()
    assert shown == expected.badges()
    assert "blind nil" in shown and "2♣ leads" in shown and "board 4" in shown

    # Jokers take the two of clubs out of the deck: the server refuses the mix, and says why.
    await page.fill("input[name=name]", "Impossible")
    await page.fill("input[name=house-bots]", "0")
    await page.check("input[name=jokers]")
    await page.check("input[name=two-of-clubs-leads]")
    await page.click("button[type=submit]")
    message = page.locator(".message", has_text="not opened")
    await message.wait_for()
    assert "two of clubs" in (await message.inner_text()).lower()
    assert re.search(r"#/table/", page.url) is None
    async with SpadesClient(f"127.0.0.1:{server.port}") as client:
        names = [listed.name for listed in (await client.list_tables()).tables]
    assert "Impossible" not in names
    assert not failures, failures


@pytest.mark.asyncio
async def test_every_control_of_the_table_of_variations_sets_its_rule(
    server: SpadesServer, browser: Browser
) -> None:
    """The form built from the generated controls offers every variation the table gives a
    control, and each one sets the rule it names (the rules expected are written here, not
    read from the table)."""
    page = await browser.new_page(viewport={"width": 1100, "height": 1300})
    failures: list[str] = []
    page.on("pageerror", lambda error: failures.append(str(error)))
    await page.goto(server.web_url)
    offered = {
        name
        for name in await page.locator("form.create input").evaluate_all(
            "inputs => inputs.map(input => input.name)"
        )
    }
    assert {variation.control.id for variation in VARIATIONS if variation.control} <= offered
    choices: list[tuple[list[str], dict[str, str], Rules]] = [
        (
            ["cutthroat", "no-nil", "jokers", "spades-lead-any-time", "counter-clockwise"],
            {"target": "250", "hands": "3", "loss-threshold": "-200"},
            Rules(
                players=3,
                target_score=250,
                nil_allowed=False,
                jokers=True,
                spades_must_be_broken=False,
                loss_threshold=-200,
                max_hands=3,
                direction=Direction.COUNTER_CLOCKWISE,
            ),
        ),
        (
            ["nil-tricks-count", "blind-nil", "blind-nil-pass"],
            {},
            Rules(nil_tricks_count_for_partner=True, blind_nil=True, blind_nil_pass_cards=2),
        ),
    ]
    for index, (ticked, filled, expected) in enumerate(choices):
        await page.goto(server.web_url)
        await page.fill("input[name=name]", f"Controls {index}")
        await page.fill("input[name=house-bots]", "0")
        for name in ticked:
            await page.check(f"input[name={name}]")
        for name, value in filled.items():
            await page.fill(f"input[name={name}]", value)
        await page.click("button[type=submit]")
        await page.wait_for_url(re.compile(r"#/table/"))
        table_id = page.url.rsplit("/", 1)[1]
        async with SpadesClient(f"127.0.0.1:{server.port}") as client:
            assert (await client.get_table(table_id)).rules == expected
    assert not failures, failures


@pytest.mark.asyncio
async def test_a_spectator_page_resumes_where_it_stopped_after_the_server_restarts(
    storage: Storages, browser: Browser
) -> None:
    """The TypeScript client's Watch resumes after the last sequence it saw: a restart of the
    server mid-hand loses no event on the page and shows none twice."""
    require_site()
    where = storage()

    def on(listen: str, web: str) -> SpadesServer:
        return new_server(where, listen=listen, web=web, house_bots=0)

    first = on("127.0.0.1:0", "127.0.0.1:0")
    await first.start()
    address, web = f"127.0.0.1:{first.port}", f"127.0.0.1:{first.web_port}"
    second: SpadesServer | None = None
    try:
        async with SpadesClient(address) as client:
            table_id = (await client.create_table("Restarted", Rules(max_hands=1))).table_id
            tickets = [await client.join_table(table_id, f"slow {seat}") for seat in range(4)]
        page = await browser.new_page(viewport={"width": 1100, "height": 900})
        failures: list[str] = []
        page.on("pageerror", lambda error: failures.append(str(error)))
        await page.goto(f"{first.web_url}#/table/{table_id}")
        await page.locator(".status").wait_for()
        # The players are SDK bots in this process: they reconnect to the restarted server too.
        players = SpadesClient(address)
        await players.__aenter__()
        playing = asyncio.gather(
            *(
                play_match(players, SlowRandom(seed), ticket.token, table_id=table_id)
                for seed, ticket in enumerate(tickets)
            )
        )
        # Some tricks into the hand, the server goes away ...
        tricks = page.locator(".seat-panel .tricks")
        for _ in range(300):
            won = sum(int(text.split()[0]) for text in await tricks.all_inner_texts())
            if won >= 3:
                break
            await asyncio.sleep(0.05)
        assert won >= 3
        await first.stop()
        connection = page.locator(".connection")
        for _ in range(200):
            if "reconnecting" in await connection.inner_text():
                break
            await asyncio.sleep(0.05)
        assert "reconnecting" in await connection.inner_text()
        await shoot(page, "spectator-reconnecting")
        # ... and comes back on the same ports and log; the page and the players resume.
        second = on(address, web)
        await second.start()
        await asyncio.wait_for(playing, 120)
        await players.__aexit__(None, None, None)
        await page.locator(".status.match-over").wait_for(timeout=30_000)
        assert await connection.inner_text() == "match over"
        events = await public_record(second, table_id)
        (scored,) = [event.hand_scored for event in events if event.HasField("hand_scored")]
        # Every trick once: a missed or a repeated TrickWon would change the counts.
        won_by_seat = [0, 0, 0, 0]
        for event in events:
            if event.HasField("trick_won"):
                won_by_seat[protocol.seat_from_proto(event.trick_won.winner)] += 1
        shown = [int(text.split()[0]) for text in await tricks.all_inner_texts()]
        assert shown == won_by_seat and sum(shown) == 13
        assert await page.locator(".score-table tbody tr").count() == 1
        row = page.locator("tr[data-hand='1'] td.total")
        assert [shown_score(text) for text in await row.all_inner_texts()] == [
            side.total_score for side in scored.sides
        ]
        assert not failures, failures
    finally:
        if second is not None:
            await second.stop()
        else:
            await first.stop()


@pytest.mark.asyncio
async def test_a_spectator_sees_the_clock_of_the_seat_to_act(
    server: SpadesServer, browser: Browser
) -> None:
    # Four players who never act: the server's clock plays for them, 5 s a turn.
    rules = Rules(max_hands=1, clock=Clock(turn_millis=5000, extension_millis=0))
    async with SpadesClient(f"127.0.0.1:{server.port}") as client:
        table_id = (await client.create_table("Clocked", rules)).table_id
        for seat in range(4):
            await client.join_table(table_id, f"idle {seat}")
    page = await browser.new_page(viewport={"width": 1100, "height": 900})
    failures: list[str] = []
    page.on("pageerror", lambda error: failures.append(str(error)))
    await page.goto(f"{server.web_url}#/table/{table_id}")
    on_turn = page.locator(".seat-panel.on-turn")
    await on_turn.wait_for()  # from the snapshot: the match is already on its first turn
    first = await on_turn.get_attribute("data-seat")
    left = int((await on_turn.locator(".clock").inner_text()).split()[0])
    assert 1 <= left <= 5, left
    await shoot(page, "spectator-clock")
    # Its time runs out, the server bids for it, and the clock moves on to the next seat.
    for _ in range(300):
        if await on_turn.count() == 1 and await on_turn.get_attribute("data-seat") != first:
            break
        await asyncio.sleep(0.05)
    second = await on_turn.get_attribute("data-seat")
    assert second != first
    assert int((await on_turn.locator(".clock").inner_text()).split()[0]) >= 3
    assert await on_turn.count() == 1
    events = await public_record(server, table_id)
    timed_out = [
        ("North", "East", "South", "West")[protocol.seat_from_proto(event.turn_timed_out.seat)]
        for event in events
        if event.HasField("turn_timed_out")
    ]
    # The page's seats to act are the server's: the first timed out, the second is next.
    assert timed_out[0] == first
    assert timed_out[1:2] in ([], [second])
    assert not failures, failures


@pytest.mark.asyncio
async def test_a_person_offered_blind_nil_chooses_by_button_before_seeing_the_cards(
    server: SpadesServer, browser: Browser
) -> None:
    # Blind Nil offered every hand (no deficit needed), so the first hand already asks.
    rules = Rules(max_hands=1, blind_nil=True, blind_nil_deficit=0)
    page = await browser.new_page(viewport={"width": 1100, "height": 900})
    failures: list[str] = []
    page.on("pageerror", lambda error: failures.append(str(error)))
    table_id = await seat_a_person(server, page, "Blind", rules, "Robin")
    look = page.locator(".choices button[data-choice='Look at my cards']")
    blind = page.locator(".choices button[data-choice='Bid Blind Nil']")
    await look.wait_for(timeout=20_000)
    assert await blind.count() == 1
    # Until the choice is made the person's own cards are not shown: none in the page.
    assert await page.evaluate(CARDS_OFF_THE_TABLE) == []
    await shoot(page, "player-blind-nil")
    await look.click()
    await page.locator(".hand .card").nth(12).wait_for()
    assert await page.locator(".hand .card").count() == 13
    assert await blind.count() == 0
    async with SpadesClient(f"127.0.0.1:{server.port}") as client:
        record = await client.get_record(table_id)
    (choice,) = [
        event.blind_nil_chosen
        for event in record.events
        if event.HasField("blind_nil_chosen")
        and event.blind_nil_chosen.seat == cards_pb2.SEAT_SOUTH
    ]
    assert not choice.blind  # the button pressed: look
    assert not failures, failures


class OneEach(RandomBot):
    """Bids 1 whatever it holds (four such bids leave nine tricks over: bags)."""

    def bid(self, view: BotView) -> int:
        return 1


@pytest.mark.asyncio
async def test_the_table_page_heads_with_its_name_and_score_and_marks_penalties(
    server: SpadesServer, browser: Browser
) -> None:
    """A bag limit of 1: nine overtricks among the sides, so a side pays the penalty and its
    score goes below zero; the page shows both as the command line does."""
    address = f"127.0.0.1:{server.port}"
    async with SpadesClient(address) as client:
        rules = Rules(max_hands=1, bag_limit=1)
        table_id = (await client.create_table("Penalty corner", rules)).table_id
        tickets = [await client.join_table(table_id, f"One {seat}", seat=seat) for seat in range(4)]
        await asyncio.gather(*(play_match(client, OneEach(), t.token) for t in tickets))
    page = await browser.new_page(viewport={"width": 1100, "height": 900})
    await page.goto(f"{server.web_url}#/table/{table_id}")
    await page.locator(".status.match-over").wait_for()
    assert await page.locator(".table-name").inner_text() == "Penalty corner"
    running = await page.locator(".running-score").inner_text()
    assert re.fullmatch(f"North{DASH}South \\S+ {DASH} East{DASH}West \\S+", running), running
    assert f"({MINUS}" in running  # a side below zero, in brackets with a minus sign
    assert f"({MINUS}" in await page.locator(".status.match-over").inner_text()
    bags = await page.locator(".score-table td.bags").all_inner_texts()
    assert any(re.fullmatch(r"\d+ \(-\d+00\)", text) for text in bags), bags
    totals = await page.locator(".score-table td.total").all_inner_texts()
    assert any(text.startswith(f"({MINUS}") for text in totals), totals
    await shoot(page, "table-penalties")


@pytest.mark.asyncio
async def test_a_quick_match_table_says_what_it_waits_for(tmp_path: Path, browser: Browser) -> None:
    require_site()
    async with web_server(
        tmp_path / "tables.db", house_bots=8, quick_match_fill_after=120
    ) as served:
        page = await browser.new_page()
        await page.goto(served.web_url)
        await page.fill("input[name=player]", "Wren")
        await page.click("button[name=quick-match]")
        await page.wait_for_url(re.compile(r"#/play/"))
        status = page.locator(".status", has_text="Waiting for 3 more players")
        await status.wait_for()
        text = await status.inner_text()
        assert re.fullmatch(r"Waiting for 3 more players; house bots fill in \d+ s\.", text), text
        await shoot(page, "quick-match-waiting")
