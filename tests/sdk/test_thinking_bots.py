"""A bot that thinks (``Bot.thinks``, as the search bot does) decides in a worker thread, so the
event loop it shares (other seats, a server's streams for a house bot) goes on meanwhile."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from spades.bot import Bot, BotView
from spades.bot.local import play_local_match
from spades.engine import Card, Rules
from spades_bots.search import SearchBot

#: How long the first decision of each seat blocks its thread (a search's computing).
BLOCK = 0.05


class Blocking(Bot):
    """Bids the least it may and plays its first legal card; the first decision of each kind
    blocks its thread ``BLOCK`` seconds. Notes the threads its decisions ran in."""

    def __init__(self, thinks: bool) -> None:
        self.thinks = thinks
        self.threads: set[int] = set()
        self.blocked = False

    def _decide(self) -> None:
        self.threads.add(threading.get_ident())
        if not self.blocked:
            self.blocked = True
            time.sleep(BLOCK)

    def bid(self, view: BotView) -> int:
        self._decide()
        return min(bid for bid in view.legal_bids if bid) if any(view.legal_bids) else 0

    def play(self, view: BotView) -> Card:
        self._decide()
        return view.legal_cards[0]


async def ticks_during_a_match(bots: list[Blocking]) -> int:
    """How many times a task beside the match ran while the bots' blocking decisions did."""
    ticks = 0
    done = False
    ticking = asyncio.Event()

    async def tick() -> None:
        nonlocal ticks
        ticking.set()
        while not done:
            await asyncio.sleep(0.005)
            ticks += 1

    ticker = asyncio.create_task(tick())
    await ticking.wait()  # the ticker runs (and waits on its first sleep)
    started = ticks
    await play_local_match(bots, Rules(max_hands=1), seed=bytes(32))
    during = ticks - started
    done = True
    await ticker
    return during


@pytest.mark.asyncio
async def test_a_thinking_bot_decides_off_the_event_loop() -> None:
    loop_thread = threading.get_ident()
    bots = [Blocking(thinks=True) for _ in range(4)]
    assert await ticks_during_a_match(bots) > 0
    for bot in bots:
        assert bot.threads and loop_thread not in bot.threads


@pytest.mark.asyncio
async def test_a_plain_bot_decides_on_the_event_loop() -> None:
    # The contrast that shows the test above can fail: decisions on the loop block it, so a
    # local match (which never waits otherwise) leaves the ticker no turn at all.
    loop_thread = threading.get_ident()
    bots = [Blocking(thinks=False) for _ in range(4)]
    assert await ticks_during_a_match(bots) == 0
    for bot in bots:
        assert bot.threads == {loop_thread}


def test_the_search_bot_thinks() -> None:
    assert SearchBot.thinks and not Bot.thinks
