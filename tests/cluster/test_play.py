"""Bots play through the cluster's load balancer, and the dashboard shows it.

A whole match of four random bots (the SDK's runner) through haproxy; then, while more bots
play, every panel query of deploy/grafana/dashboards/*.json asked of the real Prometheus
returns at least one series.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

import pytest
import spades_cluster

from spades.bot import BotView, MatchOutcome, play_match
from spades.client import SpadesClient, SpadesError
from spades.engine import Card, Rules
from spades_bots.random_bot import RandomBot
from tests.cluster.conftest import RATE_INTERVAL
from tests.cluster.prometheus import panel_queries, query
from tests.support.faults import seat_four

#: The slowest a loaded machine took to show every panel: about 25 s (bound, not a figure).
PANELS_TIMEOUT = 90.0


class Slow(RandomBot):
    """A random bot that thinks 50 ms a decision, so a match lasts through a few scrapes."""

    async def bid(self, view: BotView) -> int:  # type: ignore[override]
        await asyncio.sleep(0.05)
        return super().bid(view)

    async def play(self, view: BotView) -> Card:  # type: ignore[override]
        await asyncio.sleep(0.05)
        return super().play(view)


async def a_match(
    client: SpadesClient, name: str, rules: Rules, bot: type[RandomBot]
) -> list[MatchOutcome]:
    table_id, tokens = await seat_four(client, rules, name)
    return list(
        await asyncio.gather(
            *(
                play_match(client, bot(seed), token, table_id=table_id)
                for seed, token in enumerate(tokens)
            )
        )
    )


@pytest.mark.asyncio
@pytest.mark.timeout(300)
async def test_four_bots_play_a_whole_match_through_the_balancer(
    running_cluster: spades_cluster.Cluster,
) -> None:
    address = running_cluster.addresses()["grpc"]
    async with SpadesClient(address) as client:
        outcomes = await asyncio.wait_for(
            a_match(client, "through haproxy", Rules(max_hands=1), RandomBot), 120
        )
        table = await client.get_table(outcomes[0].table_id)
    assert all(outcome.end is not None for outcome in outcomes), "every seat saw the match end"
    assert {outcome.seat for outcome in outcomes} == {0, 1, 2, 3}
    assert len({outcome.end for outcome in outcomes}) == 1, "one ending, seen by all four"
    assert table.status == "finished"


@pytest.mark.asyncio
@pytest.mark.timeout(300)
async def test_every_dashboard_panel_has_a_series_while_bots_play(
    running_cluster: spades_cluster.Cluster,
) -> None:
    addresses = running_cluster.addresses()
    queries = panel_queries(RATE_INTERVAL)
    assert len(queries) >= 10
    async with SpadesClient(addresses["grpc"]) as client:
        playing = [
            asyncio.ensure_future(a_match(client, f"dashboard {n}", Rules(max_hands=3), Slow))
            for n in range(2)
        ]
        empty: list[str] = []
        try:
            deadline = time.monotonic() + PANELS_TIMEOUT
            while True:
                # A refusal now and then, so that "errors by status code" has something to show.
                with contextlib.suppress(SpadesError):
                    await client.get_table("no-such-table")
                empty = [
                    where
                    for where, expression in queries
                    if not await asyncio.to_thread(query, addresses["prometheus"], expression)
                ]
                if not empty or time.monotonic() > deadline:
                    break
                assert not all(task.done() for task in playing), (
                    f"the bots finished; empty: {empty}"
                )
                await asyncio.sleep(1.0)
        finally:
            for task in playing:
                task.cancel()
            for task in playing:
                with contextlib.suppress(BaseException):
                    await task
    assert not empty, f"panels with no series while bots play: {empty}"
