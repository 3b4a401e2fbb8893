"""An author's own class, named ``package.module:Class``, loaded and run by ``spades-bot``."""

from __future__ import annotations

import asyncio
import logging

import pytest

from spades.bot import load_bot_class
from spades.client import SpadesClient
from spades.commands import bot as cli
from spades.engine import Rules
from spades_bots.heuristic import HeuristicBot
from spades_bots.random_bot import RandomBot
from spades_bots.registry import bot_class
from spades_server.app.server import SpadesServer
from tests.sdk.author_bot import Lowest


def test_bot_classes_load_by_name() -> None:
    assert load_bot_class("tests.sdk.author_bot:Lowest") is Lowest
    assert load_bot_class("tests.sdk.author_bot.Lowest") is Lowest
    assert bot_class("random") is RandomBot
    assert bot_class("heuristic") is HeuristicBot
    with pytest.raises(ValueError, match="not a subclass"):
        load_bot_class("tests.sdk.author_bot:NotABot")
    with pytest.raises(ValueError, match="cannot import"):
        load_bot_class("tests.sdk.nowhere:Bot")


@pytest.mark.asyncio
async def test_the_runner_plays_an_author_class(
    client: SpadesClient, server: SpadesServer, caplog: pytest.LogCaptureFixture
) -> None:
    created = await client.create_table("cli", Rules(max_hands=1))
    address = f"127.0.0.1:{server.port}"
    runs = [
        asyncio.to_thread(
            cli.main,
            [
                "--server",
                address,
                "--bot",
                "tests.sdk.author_bot:Lowest",
                "--table",
                created.table_id,
                "--seat",
                seat,
                "--name",
                f"author {seat}",
            ],
        )
        for seat in ("north", "east", "south", "west")
    ]
    with caplog.at_level(logging.INFO, logger="spades.bot"):
        codes = await asyncio.wait_for(asyncio.gather(*runs), 60)
    assert codes == [0, 0, 0, 0]
    table = await client.get_table(created.table_id)
    assert table.status == "finished"
    assert [seat.player_name for seat in table.seats] == [
        "author north",
        "author east",
        "author south",
        "author west",
    ]
    lines = [record.getMessage() for record in caplog.records]
    assert sum(line.startswith("hand 1: bids") for line in lines) == 4
    assert sum(line.startswith("match over") for line in lines) == 4


def test_the_runner_reports_a_bot_it_cannot_load() -> None:
    assert cli.main(["--bot", "tests.sdk.author_bot:NotABot", "--quick-match"]) == 2
