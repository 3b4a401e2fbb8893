"""Idempotency and races: a repeated action id changes nothing; of two actions racing for one
turn exactly one is applied; readers racing with writers never corrupt a table."""

from __future__ import annotations

import asyncio
import random

import grpc
import pytest

from spades import protocol
from spades.engine import MatchState, Rules
from spades.v1 import actions_pb2, events_pb2, lobby_pb2, play_pb2, view_pb2
from spades_server.app.server import SpadesServer
from tests.support.backends import Storages
from tests.support.clients import (
    TOKEN_KEY,
    Client,
    close_streams,
    current_view,
    rpc_error,
    watch,
)
from tests.support.seats import bid, play_until_over, turn_prompt
from tests.support.servers import log_events, running_server

ABORTED = grpc.StatusCode.ABORTED.value[0]
FAILED_PRECONDITION = grpc.StatusCode.FAILED_PRECONDITION.value[0]


CONCEDE = actions_pb2.Action(concession=actions_pb2.Concession())


def actions_logged(events: list[events_pb2.Event], kind: str) -> list[events_pb2.Event]:
    return [event for event in events if event.WhichOneof("kind") == kind]


@pytest.mark.asyncio
async def test_a_repeated_action_id_gets_the_first_result_and_writes_nothing(
    client: Client, server: SpadesServer
) -> None:
    table_id, tokens, streams = await client.seated()
    seat, prompt = await turn_prompt(client, table_id, streams)
    stream = streams[seat]
    first = await stream.act(bid(3), prompt.sequence, action_id="bid-once")
    assert first.accepted and first.sequence == prompt.sequence + 1, first
    version = await server.log.stream_version(table_id)

    # The same id again: the same answer, even with another sequence or another action.
    again = await stream.act(bid(3), prompt.sequence, action_id="bid-once")
    other = await stream.act(bid(5), version, action_id="bid-once")
    for repeated in (again, other):
        assert repeated.accepted and repeated.sequence == first.sequence, repeated
        assert not repeated.code and not repeated.reason, repeated
    # ...and from a new stream of the same seat (a reconnection, which takes over).
    second_stream = client.seat_stream(tokens[seat])
    await second_stream.start()
    from_elsewhere = await second_stream.act(bid(3), prompt.sequence, action_id="bid-once")
    assert from_elsewhere.accepted and from_elsewhere.sequence == first.sequence
    await second_stream.close()
    streams[seat] = second_stream

    assert await server.log.stream_version(table_id) == version, "a repeat wrote nothing"
    bids = actions_logged(await log_events(server, table_id), "bid_made")
    assert len(bids) == 1 and bids[0].action_id == "bid-once" and bids[0].sequence == first.sequence

    # The id belongs to its seat: another seat may use the same id for its own action.
    next_seat, next_prompt = await turn_prompt(client, table_id, streams)
    assert next_seat != seat
    theirs = await streams[next_seat].act(bid(2), next_prompt.sequence, action_id="bid-once")
    assert theirs.accepted and theirs.sequence == next_prompt.sequence + 1, theirs
    await close_streams(streams)


@pytest.mark.asyncio
async def test_a_reconnecting_seat_racing_its_old_stream(
    client: Client, server: SpadesServer
) -> None:
    """Each bid of the first round is sent on the seat's stream and, at once, with another
    action id on a new stream of the same seat (which takes over): exactly one of the two is
    applied, one event is logged, and the new stream learns which."""
    table_id, tokens, streams = await client.seated()
    for _ in range(4):
        seat, prompt = await turn_prompt(client, table_id, streams)
        version = await server.log.stream_version(table_id)
        old_id = await streams[seat].send(bid(2), prompt.sequence)
        rival = client.seat_stream(tokens[seat])
        await rival.start(after_sequence=prompt.sequence)
        new_id = await rival.send(bid(4), prompt.sequence)
        result = await rival.act_result(new_id)
        new = (await log_events(server, table_id))[version:]
        made = actions_logged(new, "bid_made")
        assert len(made) == 1, new
        if result.accepted:
            assert made[0].action_id == new_id and made[0].bid_made.bid.tricks == 4
            assert result.sequence == version + 1
        else:
            assert result.code == ABORTED and "stale" in result.reason, result
            assert made[0].action_id == old_id and made[0].bid_made.bid.tricks == 2
        assert protocol.seat_from_proto(made[0].bid_made.seat) == seat
        # The old stream was closed in favour of the new one.
        with pytest.raises(grpc.aio.AioRpcError) as closed:
            while True:
                await streams[seat].next()
        assert closed.value.code() == grpc.StatusCode.ABORTED
        streams[seat] = rival
    await close_streams(streams)


@pytest.mark.asyncio
async def test_a_turn_raced_by_a_concession(client: Client, server: SpadesServer) -> None:
    """The seat to act bids while another seat concedes, both answering the same sequence:
    exactly one is applied, the other is refused, and the log shows only the first."""
    table_id, _, streams = await client.seated()
    seat, prompt = await turn_prompt(client, table_id, streams)
    other = (seat + 1) % 4
    version = await server.log.stream_version(table_id)
    ids = await asyncio.gather(
        streams[seat].send(bid(3), prompt.sequence),
        streams[other].send(CONCEDE, prompt.sequence),
    )
    results = [await streams[seat].act_result(ids[0]), await streams[other].act_result(ids[1])]
    assert sum(result.accepted for result in results) == 1, results
    refused = next(result for result in results if not result.accepted)
    assert refused.code in (ABORTED, FAILED_PRECONDITION), refused
    new = (await log_events(server, table_id))[version:]
    if results[0].accepted:
        assert new[0].action_id == ids[0] and not actions_logged(new, "conceded")
    else:
        assert new[0].action_id == ids[1] and not actions_logged(new, "bid_made")
    await close_streams(streams)


@pytest.mark.asyncio
async def test_two_action_ids_at_one_sequence_on_one_stream(
    client: Client, server: SpadesServer
) -> None:
    table_id, _, streams = await client.seated()
    seat, prompt = await turn_prompt(client, table_id, streams)
    stream = streams[seat]
    first_id = await stream.send(bid(1), prompt.sequence)
    second_id = await stream.send(bid(6), prompt.sequence)
    first = await stream.act_result(first_id)
    second = await stream.act_result(second_id)
    assert first.accepted and first.sequence == prompt.sequence + 1, first
    assert not second.accepted and second.code == ABORTED, second
    assert "stale" in second.reason
    made = actions_logged(await log_events(server, table_id), "bid_made")
    assert [event.action_id for event in made] == [first_id]
    assert made[0].bid_made.bid.tricks == 1
    await close_streams(streams)


@pytest.mark.asyncio
async def test_one_action_id_sent_twice_at_once_is_applied_once(
    client: Client, server: SpadesServer
) -> None:
    """A client that retries at once (on the same stream, then on a new one) without waiting
    for the first answer: every answer is the first result; one event is logged."""
    table_id, tokens, streams = await client.seated()
    seat, prompt = await turn_prompt(client, table_id, streams)
    stream = streams[seat]
    await stream.send(bid(3), prompt.sequence, "same-id")
    await stream.send(bid(3), prompt.sequence, "same-id")
    rival = client.seat_stream(tokens[seat])
    await rival.start(after_sequence=prompt.sequence)
    await rival.send(bid(3), prompt.sequence, "same-id")
    result = await rival.act_result("same-id")
    assert result.accepted and result.sequence == prompt.sequence + 1, result
    made = actions_logged(await log_events(server, table_id), "bid_made")
    assert len(made) == 1 and made[0].action_id == "same-id"
    streams[seat] = rival
    await close_streams(streams)


@pytest.mark.asyncio
async def test_two_seats_conceding_at_once(client: Client, server: SpadesServer) -> None:
    """Conceding needs no turn: two seats of different sides concede at the same sequence;
    one concession ends the match, the other is refused, one Conceded is logged."""
    table_id, _, streams = await client.seated()
    sequence = (await current_view(client, table_id)).sequence
    ids = await asyncio.gather(
        streams[0].send(CONCEDE, sequence), streams[1].send(CONCEDE, sequence)
    )
    results = [await streams[0].act_result(ids[0]), await streams[1].act_result(ids[1])]
    assert sum(result.accepted for result in results) == 1, results
    refused = next(result for result in results if not result.accepted)
    assert refused.code in (ABORTED, FAILED_PRECONDITION), refused
    events = await log_events(server, table_id)
    assert len(actions_logged(events, "conceded")) == 1
    assert len(actions_logged(events, "match_ended")) == 1
    await close_streams(streams)


@pytest.mark.asyncio
async def test_readers_racing_with_writers_do_not_corrupt_the_table(
    client: Client, server: SpadesServer
) -> None:
    """While four clients play, other clients keep loading the table (records, spectators,
    seat streams authenticating). The table must stay exactly its log: every event once."""
    created = await client.create_table(Rules(max_hands=1))
    table_id = created.table.table_id
    tokens = await client.seat_all(table_id)
    streams = [client.seat_stream(token) for token in tokens]
    for stream in streams:
        await stream.start()
    done = asyncio.Event()

    async def read_records() -> None:
        while not done.is_set():
            await client.play.GetRecord(play_pb2.GetRecordRequest(table_id=table_id))

    async def open_spectators() -> None:
        while not done.is_set():
            spectator = watch(client, table_id)
            await spectator.snapshot()
            spectator.close()

    async def authenticate(token: str) -> None:
        # LeaveTable after the start authenticates (loading the table), then is refused.
        while not done.is_set():
            error = await rpc_error(
                client.lobby.LeaveTable(
                    lobby_pb2.LeaveTableRequest(), metadata=((TOKEN_KEY, token),)
                )
            )
            assert error.code() == grpc.StatusCode.FAILED_PRECONDITION, error

    readers = [asyncio.create_task(read_records()) for _ in range(3)]
    readers += [asyncio.create_task(open_spectators()) for _ in range(2)]
    readers += [asyncio.create_task(authenticate(token)) for token in tokens[:2]]
    rng = random.Random(11)
    try:
        await asyncio.wait_for(
            asyncio.gather(*(play_until_over(stream, rng) for stream in streams)), 40
        )
    finally:
        done.set()
        outcomes = await asyncio.gather(*readers, return_exceptions=True)
        for stream in streams:
            await stream.close()

    assert not [outcome for outcome in outcomes if outcome is not None], outcomes
    logged = await log_events(server, table_id)
    record = (await client.play.GetRecord(play_pb2.GetRecordRequest(table_id=table_id))).record
    assert [event.sequence for event in record.events] == [event.sequence for event in logged]
    replayed = MatchState.from_events(protocol.event_from_proto(event) for event in logged)
    assert replayed.is_over
    for stream in streams:
        sequences = [message.event.sequence for message in stream.events()]
        assert sequences == sorted(set(sequences)), "no event twice, in order"
        assert sequences[-1] == logged[-1].sequence


@pytest.mark.asyncio
async def test_a_whole_match_with_every_action_sent_twice(
    client: Client, server: SpadesServer
) -> None:
    """Every action is sent, then sent again with the same id: the match is the same as if
    each had been sent once, and each repeat got the first sequence."""
    table_id, tokens, streams = await client.seated(Rules(max_hands=1))
    rng = random.Random(5)
    repeats = 0

    def choose(prompt: play_pb2.TurnPrompt, rng: random.Random) -> actions_pb2.Action:
        return rng.choice(list(prompt.legal_actions))

    while True:
        now = await current_view(client, table_id)
        if now.view.phase == view_pb2.PHASE_ENDED:
            break
        seat, prompt = await turn_prompt(client, table_id, streams)
        action = choose(prompt, rng)
        first = await streams[seat].act(action, prompt.sequence, action_id=f"a{prompt.sequence}")
        if (await current_view(client, table_id)).view.phase == view_pb2.PHASE_ENDED:
            # The last action ended the match, and with it the streams: repeat it through Act.
            request = play_pb2.ActRequest(
                action=play_pb2.ActionRequest(
                    action_id=f"a{prompt.sequence}", sequence=prompt.sequence, action=action
                )
            )
            acted = await client.play.Act(request, metadata=((TOKEN_KEY, tokens[seat]),))
            again = acted.result
        else:
            again = await streams[seat].act(
                action, prompt.sequence, action_id=f"a{prompt.sequence}"
            )
        assert first.accepted and again.accepted and first.sequence == again.sequence
        repeats += 1
    logged = await log_events(server, table_id)
    with_ids = [event for event in logged if event.action_id]
    assert len(with_ids) == repeats, "one first event per action, none for the repeats"
    assert len({event.action_id for event in with_ids}) == repeats
    assert MatchState.from_events(protocol.event_from_proto(event) for event in logged).is_over
    await close_streams(streams)


@pytest.mark.asyncio
async def test_a_resent_extension_claim_gets_its_first_result_even_after_a_restart(
    server: SpadesServer, storage: Storages
) -> None:
    """A claim the log has is answered as applied when its id comes again, on this server or
    after a restart (a client resending after a crash must not read "stale")."""
    claim = actions_pb2.Action(extension_claim=actions_pb2.ExtensionClaim())
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        client = Client(channel)
        table_id, tokens, streams = await client.seated()
        seat, prompt = await turn_prompt(client, table_id, streams)
        first = await streams[seat].act(claim, prompt.sequence, action_id="claim-1")
        assert first.accepted, first
        again = await streams[seat].act(claim, prompt.sequence, action_id="claim-1")
        assert again.accepted and again.sequence == first.sequence, again
        await close_streams(streams)
    await server.stop()
    async with (
        running_server(storage()) as restarted,
        grpc.aio.insecure_channel(f"127.0.0.1:{restarted.port}") as channel,
    ):
        stream = Client(channel).seat_stream(tokens[seat])
        await stream.start()
        resent = await stream.act(claim, prompt.sequence, action_id="claim-1")
        assert resent.accepted and resent.sequence == first.sequence, resent
        claims = actions_logged(await log_events(restarted, table_id), "extension_claimed")
        assert len(claims) == 1
        await stream.close()
