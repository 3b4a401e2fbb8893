"""Challenges across replicas on one PostgreSQL log: acceptances racing through two replicas
are recorded in one order, and the challenge's table is opened once."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from spades.client import SpadesClient, SpadesError
from spades.engine import Rules
from spades_server.store import challenge_store, codecs
from spades_server.store.stream_kinds import is_table_stream
from tests.support.backends import read_to_head
from tests.support.servers import replicas

pytestmark = pytest.mark.asyncio


async def test_two_replicas_accepting_at_once_open_one_table(tmp_path: Path) -> None:
    async with replicas(tmp_path, 2) as (one, two):
        addresses = [f"127.0.0.1:{one.port}", f"127.0.0.1:{two.port}"]
        async with SpadesClient(addresses[0]) as anonymous:
            made = {
                name: await anonymous.create_account(name, kind="bot")
                for name in ("Host", "Left", "Right")
            }
        clients = {
            (name, address): SpadesClient(address, account_key=made[name].key)
            for name in made
            for address in addresses
        }
        try:
            ids = {name: made[name].account.account_id for name in made}
            seating = {0: ids["Host"], 1: ids["Left"], 2: ids["Host"], 3: ids["Right"]}
            for _round in range(3):  # a race may go either way: run it a few times
                challenge = await clients["Host", addresses[0]].create_challenge(
                    [ids["Left"], ids["Right"]], Rules(max_hands=1), seating=seating
                )
                # The two opponents accept at once, each through its own replica.
                answers = await asyncio.gather(
                    clients["Left", addresses[0]].accept_challenge(challenge.challenge_id),
                    clients["Right", addresses[1]].accept_challenge(challenge.challenge_id),
                )
                # Each answer shows the challenge as its replica saw it after the answer.
                assert {answer.state for answer in answers} <= {"pending", "accepted"}, answers
                # In the log, exactly one acceptance was the last: it names the table.
                rows = await two.log.read(challenge_store.stream_of(challenge.challenge_id))
                entries = [codecs.decode_challenge(row) for row in rows]
                kinds = [entry.WhichOneof("kind") for entry in entries]
                assert kinds == ["created", "accepted", "accepted"]
                assert [bool(entry.accepted.table_id) for entry in entries[1:]] == [False, True]
                table_id = entries[2].accepted.table_id
                assert {answer.table_id for answer in answers} - {""} == {table_id}
                for address in addresses:
                    seen = await clients["Host", address].get_challenge(challenge.challenge_id)
                    assert (seen.state, seen.table_id) == ("accepted", table_id)
                table = await clients["Host", addresses[1]].get_table(table_id)
                assert [s.account_id for s in table.message.seats] == [
                    ids["Host"],
                    ids["Left"],
                    ids["Host"],
                    ids["Right"],
                ]
                # One opponent answering twice through both replicas: one answer counts.
                again = await clients["Host", addresses[1]].create_challenge(
                    [ids["Left"]], Rules(max_hands=1)
                )
                raced = await asyncio.gather(
                    clients["Left", addresses[0]].accept_challenge(again.challenge_id),
                    clients["Left", addresses[1]].accept_challenge(again.challenge_id),
                    return_exceptions=True,
                )
                refused = [r for r in raced if isinstance(r, SpadesError)]
                assert len(refused) == 1, raced
                assert refused[0].reason_code == "CHALLENGE_ALREADY_ANSWERED"
            # Every challenge opened one table (a private one each), none twice.
            everything = await read_to_head(one.log)
            tables = {row.stream_id for row in everything if is_table_stream(row.stream_id)}
            assert len(tables) == 6, tables
        finally:
            for client in clients.values():
                await client.close()
