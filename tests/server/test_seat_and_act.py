"""Seat and Act: a seat's stream for clients that cannot stream to the server (browsers), and
its actions as unary calls, with Play's semantics: the seat's redacted view, its prompts, one
result per action id (the first), stale sequences refused, tokens checked."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import grpc
import pytest

from spades import protocol
from spades.engine import Rules
from spades.v1 import actions_pb2, cards_pb2, play_pb2
from spades_server.app.server import SpadesServer
from tests.support.clients import READ_TIMEOUT, TOKEN_KEY, Client, cards_in
from tests.support.servers import log_events


class SeatCall:
    """One Seat stream, read in the background."""

    def __init__(self, client: Client, token: str, after_sequence: int = 0) -> None:
        self.token = token
        self.call: Any = client.play.Seat(
            play_pb2.SeatRequest(after_sequence=after_sequence), metadata=((TOKEN_KEY, token),)
        )
        self.received: list[play_pb2.SeatResponse] = []
        self.changed = asyncio.Event()
        self.task = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        async for message in self.call:
            self.received.append(message)
            self.changed.set()

    def prompts(self) -> list[play_pb2.TurnPrompt]:
        return [m.prompt for m in self.received if m.WhichOneof("kind") == "prompt"]

    async def until(self, check: Any, timeout: float = READ_TIMEOUT) -> Any:
        async def wait() -> Any:
            while (found := check()) is None:
                if self.task.done():
                    self.task.result()
                    raise EOFError("the Seat stream ended")
                self.changed.clear()
                await self.changed.wait()
            return found

        return await asyncio.wait_for(wait(), timeout)

    def close(self) -> None:
        self.call.cancel()
        self.task.cancel()


async def act(
    client: Client, token: str, action: actions_pb2.Action, sequence: int, action_id: str
) -> play_pb2.ActionResult:
    response = await client.play.Act(
        play_pb2.ActRequest(
            action=play_pb2.ActionRequest(action_id=action_id, sequence=sequence, action=action)
        ),
        metadata=((TOKEN_KEY, token),),
    )
    return response.result


async def seated(client: Client, rules: Rules) -> tuple[str, list[str]]:
    created = await client.create_table(rules)
    table_id = created.table.table_id
    return table_id, await client.seat_all(table_id)


@pytest.mark.asyncio
async def test_a_hand_played_through_seat_streams_and_act_calls(
    server: SpadesServer, client: Client
) -> None:
    table_id, tokens = await seated(client, Rules(max_hands=1))
    seats = [SeatCall(client, token) for token in tokens]
    rng = random.Random(7)
    answered = 0
    #: How many of each seat's prompts were answered.
    done = [0] * len(seats)

    def newest() -> tuple[int, play_pb2.TurnPrompt] | None:
        pending = [
            (index, prompts[-1])
            for index, seat in enumerate(seats)
            if len(prompts := seat.prompts()) > done[index]
        ]
        return max(pending, key=lambda found: found[1].sequence) if pending else None

    def over() -> bool:
        return any(
            m.event.HasField("seed_revealed")
            for m in seats[0].received
            if m.WhichOneof("kind") == "event"
        )

    try:
        for _ in range(400):  # a hand is 4 bids and 52 cards; bounded all the same
            found = None
            for _ in range(250):
                found = newest()
                if found is not None or over():
                    break
                await asyncio.sleep(0.02)
            if found is None:
                break
            index, prompt = found
            done[index] = len(seats[index].prompts())
            action = rng.choice(list(prompt.legal_actions))
            action_id = f"a{answered}"
            result = await act(client, tokens[index], action, prompt.sequence, action_id)
            assert result.accepted, result
            assert result.action_id == action_id and result.sequence > prompt.sequence
            # The same id again gets the first result and changes nothing.
            again = await act(client, tokens[index], action, prompt.sequence, action_id)
            assert again == result
            answered += 1
        logged = await log_events(server, table_id)
        assert any(event.HasField("match_ended") for event in logged)
        assert answered == len(
            [e for e in logged if e.WhichOneof("kind") in ("bid_made", "card_played")]
        )
        # Each Seat stream is that seat's view: a snapshot first, its own cards and no other's.
        for index, seat in enumerate(seats):
            assert seat.received[0].WhichOneof("kind") == "snapshot"
            own = protocol.seat_to_proto(index)
            for message in seat.received[1:]:
                if message.WhichOneof("kind") != "event":
                    continue
                event = message.event
                if event.HasField("cards_dealt") and event.cards_dealt.seat != own:
                    assert cards_in(event) == [], event
    finally:
        for seat in seats:
            seat.close()


@pytest.mark.asyncio
async def test_act_refuses_as_play_does(client: Client) -> None:
    table_id, tokens = await seated(client, Rules())
    seats = [SeatCall(client, token) for token in tokens]
    try:
        index, prompt = await asyncio.wait_for(_first_prompt(seats), READ_TIMEOUT)
        other = (index + 1) % 4
        bid = next(iter(prompt.legal_actions))
        # Not this seat's turn: a refusal in the result, with a reason; the call succeeds.
        refused = await act(client, tokens[other], bid, prompt.sequence, "early")
        assert not refused.accepted and refused.reason
        assert refused.code == grpc.StatusCode.FAILED_PRECONDITION.value[0]
        # A stale sequence.
        stale = await act(client, tokens[index], bid, prompt.sequence - 1, "stale")
        assert not stale.accepted and stale.code == grpc.StatusCode.ABORTED.value[0]
        # A card during bidding, of a card the seat may not hold.
        card = actions_pb2.Action(
            play_card=cards_pb2.Card(suit=cards_pb2.SUIT_SPADES, rank=cards_pb2.RANK_ACE)
        )
        wrong = await act(client, tokens[index], card, prompt.sequence, "card")
        assert not wrong.accepted and wrong.reason
        # No credential, or a bad one: the call itself is refused.
        with pytest.raises(grpc.aio.AioRpcError) as no_token:
            await client.play.Act(play_pb2.ActRequest())
        assert no_token.value.code() is grpc.StatusCode.UNAUTHENTICATED
        with pytest.raises(grpc.aio.AioRpcError) as bad_stream:
            stream: Any = client.play.Seat(
                play_pb2.SeatRequest(), metadata=((TOKEN_KEY, "not-a-token"),)
            )
            await stream.read()
        assert bad_stream.value.code() is grpc.StatusCode.UNAUTHENTICATED
        # Nothing of that was applied: the seat still has its turn at the same sequence.
        accepted = await act(client, tokens[index], bid, prompt.sequence, "right")
        assert accepted.accepted
        assert table_id
    finally:
        for seat in seats:
            seat.close()


async def _first_prompt(seats: list[SeatCall]) -> tuple[int, play_pb2.TurnPrompt]:
    while True:
        for index, seat in enumerate(seats):
            if seat.prompts():
                return index, seat.prompts()[-1]
        await asyncio.sleep(0.02)


@pytest.mark.asyncio
async def test_a_newer_seat_stream_replaces_the_older(client: Client) -> None:
    _, tokens = await seated(client, Rules())
    first = SeatCall(client, tokens[0])
    await first.until(lambda: first.received or None)
    second = SeatCall(client, tokens[0])
    await second.until(lambda: second.received or None)
    with pytest.raises(grpc.aio.AioRpcError) as replaced:
        await asyncio.wait_for(first.task, READ_TIMEOUT)
    assert replaced.value.code() is grpc.StatusCode.ABORTED
    second.close()
