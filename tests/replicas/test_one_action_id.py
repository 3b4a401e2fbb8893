"""One action id sent through both PostgreSQL replicas at once: one result, the same on both.

The seat on turn has a Play stream on each of two replicas and sends the same action with the
same action id on both at the same moment, turn after turn; every third turn it first claims its
extension the same way. Both replicas must answer the same ActionResult (accepted, at the same
sequence), and the log must hold each action id's events once (one ExtensionClaimed per claim).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from spades.engine import Rules
from spades.v1 import actions_pb2, play_pb2
from tests.support.clients import SeatStream, clients
from tests.support.faults import action_ids_by_seat
from tests.support.seats import turn_prompt
from tests.support.servers import replicas

pytestmark = pytest.mark.asyncio

TURNS = 12
CLAIM = actions_pb2.Action(extension_claim=actions_pb2.ExtensionClaim())


def same_result(results: list[play_pb2.ActionResult]) -> play_pb2.ActionResult:
    first, second = results
    assert first.accepted, first
    assert (second.accepted, second.sequence, second.action_id) == (
        first.accepted,
        first.sequence,
        first.action_id,
    ), (first, second)
    return first


async def test_one_action_id_through_both_replicas_has_one_result(tmp_path: Path) -> None:
    async with replicas(tmp_path, 2) as servers, clients(servers) as (a, b):
        table_id = (await a.create_table(Rules(max_hands=1))).table.table_id
        tokens = await a.seat_all(table_id)
        on_a = {seat: a.seat_stream(token) for seat, token in enumerate(tokens)}
        on_b = {seat: b.seat_stream(token) for seat, token in enumerate(tokens)}
        streams: list[SeatStream] = [*on_a.values(), *on_b.values()]
        for stream in streams:
            await stream.start()
        claims = 0
        try:
            for turn in range(TURNS):
                seat, prompt = await turn_prompt(a, table_id, on_a)
                sequence = prompt.sequence
                if turn % 3 == 0:
                    claim_id = f"claim-{turn}"
                    claimed = same_result(
                        list(
                            await asyncio.gather(
                                on_a[seat].act(CLAIM, sequence, claim_id),
                                on_b[seat].act(CLAIM, sequence, claim_id),
                            )
                        )
                    )
                    sequence = claimed.sequence
                    claims += 1
                action = prompt.legal_actions[0]
                action_id = f"action-{turn}"
                same_result(
                    list(
                        await asyncio.gather(
                            on_a[seat].act(action, sequence, action_id),
                            on_b[seat].act(action, sequence, action_id),
                        )
                    )
                )
        finally:
            for stream in streams:
                await stream.close()
        stored = await servers[1].log.read(table_id)
        by_seat = action_ids_by_seat(stored)
        counts = [count for ids in by_seat.values() for count in ids.values()]
        assert len(counts) == TURNS + claims and set(counts) == {1}, by_seat
        record = (await b.play.GetRecord(play_pb2.GetRecordRequest(table_id=table_id))).record
        kinds = [event.WhichOneof("kind") for event in record.events]
        assert kinds.count("extension_claimed") == claims
