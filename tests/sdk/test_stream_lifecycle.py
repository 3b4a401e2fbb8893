"""The SDK and the stream lifecycle: streams that end with the match, an explicit start, and
prompts that say what the seat may do (the card pass as a choice, expanded for bots)."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from spades import protocol
from spades.client import Aborted, ActionResult, Prompt, Snapshot, SpadesClient, StreamEvent
from spades.client.messages import prompt_message
from spades.engine import CARDS, PassCards, Rules
from spades.engine import events as ev
from spades.v1 import play_pb2
from spades_bots.random_bot import RandomBot
from tests.support.bot_matches import play_all, seat_bots


def test_a_card_pass_prompt_becomes_every_pass_for_a_bot() -> None:
    hand = [CARDS[number] for number in (0, 5, 13, 27, 40)]
    message = play_pb2.TurnPrompt(sequence=9, may_concede=True, may_claim_extension=False)
    message.card_pass.count = 2
    message.card_pass.cards.extend(protocol.cards_to_proto(hand))
    prompt = prompt_message(message)
    assert prompt.card_pass == (2, tuple(hand))
    assert prompt.legal_actions == tuple(
        PassCards(pair) for pair in itertools.combinations(hand, 2)
    )
    assert len(prompt.legal_actions) == 10
    assert prompt.may_concede and not prompt.may_claim_extension
    assert prompt_message(play_pb2.TurnPrompt(sequence=1)).card_pass is None


@pytest.mark.asyncio
async def test_bots_and_spectators_start_from_the_beginning_and_stop_at_the_end(
    client: SpadesClient,
) -> None:
    rules = Rules(max_hands=1, blind_nil=True, blind_nil_deficit=0, blind_nil_pass_cards=2)
    table_id, tokens = await seat_bots(client, rules)
    outcomes = await play_all(client, [RandomBot(seed) for seed in range(4)], tokens, table_id)
    # The runner folded the table's own events (no TableCreated made up from a snapshot), and
    # the end of the stream ended the match for it: no reconnect.
    assert all(outcome.end is not None and outcome.reconnects == 0 for outcome in outcomes)
    assert all(outcome.view.rules == rules for outcome in outcomes)
    # A spectator from the beginning: an empty snapshot, TableCreated, ..., SeedRevealed; the
    # iteration then ends by itself.
    messages = [message async for message in client.watch(table_id)]
    assert isinstance(messages[0], Snapshot) and messages[0].sequence == 0
    events = [message for message in messages if isinstance(message, StreamEvent)]
    assert isinstance(events[0].event, ev.TableCreated) and events[0].sequence == 1
    assert isinstance(events[-1].event, ev.SeedRevealed)
    assert [event.sequence for event in events] == list(range(1, len(events) + 1))
    latest = [message async for message in client.watch(table_id, latest=True)]
    assert len(latest) == 1 and isinstance(latest[0], Snapshot)
    assert latest[0].sequence == events[-1].sequence


@pytest.mark.asyncio
async def test_batched_and_unbatched_sdk_streams_yield_the_same_messages(
    client: SpadesClient,
) -> None:
    """The SDK asks for batches by default and hands each one out message by message: what a
    caller iterates is what an unbatched stream yields (after a finished match, both replay
    it whole from the beginning, prompts excepted: the match is over)."""
    table_id, tokens = await seat_bots(client, Rules(max_hands=1))
    await play_all(client, [RandomBot(seed) for seed in range(4)], tokens, table_id)
    watched = {
        batched: [message async for message in client.watch(table_id, batched=batched)]
        for batched in (True, False)
    }
    assert watched[True] == watched[False] and len(watched[True]) > 50
    for token in tokens[:2]:
        played = {}
        for batched in (True, False):
            connection = await client.play(token, batched=batched)
            played[batched] = [message async for message in connection]
            await connection.close()
        assert played[True] == played[False]
        events = [m for m in played[True] if isinstance(m, StreamEvent)]
        assert [m.sequence for m in events] == list(range(1, len(events) + 1))
        assert any(m.action_id for m in events)  # the seat's own actions' ids, in both


@pytest.mark.asyncio
async def test_an_action_sent_after_its_stream_was_replaced_raises_why_it_ended(
    client: SpadesClient,
) -> None:
    """A bot answering a prompt its stream delivered just before a newer stream replaced it
    writes to a call the server has ended: the SDK raises that end's status (ABORTED,
    STREAM_REPLACED), not a dropped connection, which ``play_match`` would retry, replacing the
    newer stream in turn."""
    table_id, tokens = await seat_bots(client, Rules(max_hands=1))
    turn = (await client.get_view(table_id)).view.turn
    assert turn is not None
    older = await client.play(tokens[turn])
    prompt = None
    async for message in older:
        if isinstance(message, Prompt):
            prompt = message
            break
    assert prompt is not None
    newer = await client.play(tokens[turn])  # the same token: replaces the older stream
    with pytest.raises(Aborted) as ended:
        for _ in range(100):  # until the older call's end has arrived
            await asyncio.sleep(0.05)
            await older.send(prompt.legal_actions[0], prompt.sequence)
    assert "newer stream" in ended.value.reason
    # Nothing the older stream wrote after its end was applied: the newer one plays the turn.
    result = None
    await newer.send(prompt.legal_actions[0], prompt.sequence, "the newer's")
    async for message in newer:
        if isinstance(message, ActionResult):
            result = message
            break
    assert result is not None and result.accepted and result.action_id == "the newer's"
    await older.close()
    await newer.close()
