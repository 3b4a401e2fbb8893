"""Dropped connections: the bots reconnect, resume from their last sequence, and no action is
lost or applied twice (checked against the table's record)."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import REGISTRY

from spades import protocol
from spades.bot import Backoff, BotView, play_match
from spades.client import ActionResult, Prompt, SeatConnection, SpadesClient
from spades.engine import Action, PlayCard, Rules
from spades.engine import events as ev
from spades_bots.random_bot import RandomBot
from tests.support.backends import Storages
from tests.support.bot_matches import audit, play_all, seat_bots
from tests.support.servers import new_server
from tests.support.time import ManualClock, wait_for_state


def repeated_actions() -> float:
    """How many actions this process's servers answered with the first result of their id."""
    return sum(
        sample.value
        for metric in REGISTRY.collect()
        if metric.name == "spades_actions"
        for sample in metric.samples
        if sample.name == "spades_actions_total" and sample.labels.get("result") == "repeated"
    )


class Watchful(RandomBot):
    """Signals once the hand in progress has seen ``cards`` cards played."""

    def __init__(self, seed: int, cards: int, reached: asyncio.Event) -> None:
        super().__init__(seed)
        self.cards = cards
        self.reached = reached

    def on_event(self, event: ev.Event, view: BotView) -> None:
        if isinstance(event, ev.CardPlayed) and len(view.played_cards) >= self.cards:
            self.reached.set()


@pytest.mark.asyncio
async def test_bots_survive_a_server_restart_mid_hand(storage: Storages) -> None:
    rules = Rules(max_hands=2)
    where = storage()
    server = new_server(where, shutdown_grace=0.2)
    port = await server.start()
    reached = asyncio.Event()
    async with SpadesClient(f"127.0.0.1:{port}") as client:
        table_id, tokens = await seat_bots(client, rules)
        bots = [Watchful(seed, 7, reached) for seed in range(4)]
        clock = ManualClock()  # the bots' back-off sleeps on it
        backoff = Backoff(sleep=clock.sleep)
        playing = asyncio.ensure_future(
            asyncio.gather(
                *(
                    play_match(client, bot, token, table_id=table_id, backoff=backoff)
                    for bot, token in zip(bots, tokens, strict=True)
                )
            )
        )
        await asyncio.wait_for(reached.wait(), 20)
        await server.stop()
        await clock.sleeping(count=4)  # the bots found the server gone and back off
        server = new_server(where, listen=f"127.0.0.1:{port}", shutdown_grace=0.2)
        await server.start()
        try:
            while not playing.done():  # each back-off ends; a bot may find the channel down again
                await wait_for_state(
                    lambda: playing.done() or clock.sleepers_named(), "the bots play or back off"
                )
                clock.advance(Backoff().maximum)
            outcomes = list(await playing)
            await audit(client, table_id, outcomes)
        finally:
            await server.stop()
    assert all(outcome.reconnects >= 1 for outcome in outcomes)
    assert all(outcome.fallbacks == 0 for outcome in outcomes)


@pytest.mark.asyncio
async def test_an_action_in_flight_when_the_connection_drops_is_resent_once(
    client: SpadesClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The connection drops right after a card is sent, before its result can arrive: the bot
    resends it under the same id after reconnecting, and the table applies it once."""
    original_send = SeatConnection.send
    drops = {"left": 3}
    table: list[str] = []  # the table's id, once it is made

    async def applied_after(sequence: int) -> bool:
        return (await client.get_view(table[0])).sequence > sequence

    async def send_then_drop(
        self: SeatConnection,
        action: Action,
        sequence: int,
        action_id: str | None = None,
        *,
        note: str = "",
    ) -> str:
        sent = await original_send(self, action, sequence, action_id, note=note)
        if isinstance(action, PlayCard) and drops["left"] > 0:
            drops["left"] -= 1
            if drops["left"] % 2 == 0:
                # The server applies it first: the resend repeats an applied action.
                await wait_for_state(
                    lambda: applied_after(sequence), f"the card answering {sequence} applied"
                )
            self.drop()
        return sent

    monkeypatch.setattr(SeatConnection, "send", send_then_drop)
    rules = Rules(max_hands=1)
    table_id, tokens = await seat_bots(client, rules)
    table.append(table_id)
    repeated = repeated_actions()
    outcomes = await play_all(client, [RandomBot(seed) for seed in range(4)], tokens, table_id)
    await audit(client, table_id, outcomes)
    assert sum(outcome.resent for outcome in outcomes) == 3
    assert sum(outcome.reconnects for outcome in outcomes) == 3
    # The two resent after the server applied them came under their first id: the server
    # answered each with its first result (a repeat), not as a new, stale action.
    assert repeated_actions() - repeated >= 2


@pytest.mark.asyncio
async def test_a_repeated_action_id_gets_the_first_result(client: SpadesClient) -> None:
    rules = Rules(max_hands=1)
    table_id, tokens = await seat_bots(client, rules)
    table = await client.get_table(table_id)
    probe = await client.play(tokens[0], latest=True)
    assert probe.snapshot is not None
    bidder = protocol.seat_from_proto(probe.snapshot.view.turn)  # the first to bid
    await probe.close()
    connection = await client.play(tokens[bidder], latest=True)
    prompt = await _next_prompt(connection)
    action = prompt.legal_actions[-1]
    await connection.send(action, prompt.sequence, "bid-once")
    first = await _result(connection)
    connection.drop()
    again = await client.play(tokens[bidder], after_sequence=table.sequence)
    await again.send(action, prompt.sequence, "bid-once")
    second = await _result(again)
    await again.close()
    assert first.accepted and second.accepted
    assert first.sequence == second.sequence
    record = await client.get_record(table_id)
    bids = [event for event in record.events if event.WhichOneof("kind") == "bid_made"]
    assert len(bids) == 1


async def _next_prompt(connection: SeatConnection) -> Prompt:
    async for message in connection:
        if isinstance(message, Prompt):
            return message
    raise AssertionError("no prompt")


async def _result(connection: SeatConnection) -> ActionResult:
    async for message in connection:
        if isinstance(message, ActionResult):
            return message
    raise AssertionError("no result")


@pytest.mark.asyncio
async def test_resuming_with_a_token_from_a_fresh_process_finishes_the_match(
    client: SpadesClient,
) -> None:
    """A bot whose process died mid-match comes back with only its token and finishes."""
    rules = Rules(max_hands=1)
    table_id, tokens = await seat_bots(client, rules)
    reached = asyncio.Event()
    others = [
        asyncio.ensure_future(play_match(client, RandomBot(seed), token, table_id=table_id))
        for seed, token in enumerate(tokens[1:], 1)
    ]
    first = asyncio.ensure_future(
        play_match(client, Watchful(0, 9, reached), tokens[0], table_id=table_id)
    )
    await asyncio.wait_for(reached.wait(), 20)
    first.cancel()
    resumed = await asyncio.wait_for(
        play_match(client, RandomBot(99), tokens[0], table_id=table_id), 30
    )
    outcomes = [resumed, *await asyncio.gather(*others)]
    assert resumed.end is not None
    assert all(outcome.end == resumed.end for outcome in outcomes)
