"""Batched streams (StartPlay.batched, WatchRequest.batched, SeatRequest.batched): what one
action brings each viewer is one message, a Batch of its events in sequence, then the actor's
result, then the prompt of the seat on turn; the events are serialised once per class of viewer
and shared; unbatched streams on the same table get the old messages."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import pytest_asyncio
import structlog

from spades import protocol
from spades.engine import Rules
from spades.v1 import events_pb2, play_pb2
from spades_server.app.server import SpadesServer
from spades_server.domain import tokens
from spades_server.domain.decisions import (
    ActionRequest,
    decide_action,
    decide_close,
)
from spades_server.store.table_store import TableStore
from spades_server.streams import frames
from spades_server.streams.feeds import Outbox, SeatFeed, SeatSession, SpectatorFeed
from tests.support.clients import READ_TIMEOUT, TOKEN_KEY, Client, SeatStream, watch
from tests.support.seats import choices_of
from tests.support.servers import log_events
from tests.support.stores import TOKENS, client_side_open, sqlite_table_store, table_seated_in_store


async def batched_table(client: Client) -> tuple[list[SeatStream], int]:
    """Four batched Play streams from the latest sequence of a full table (the match has
    started), and the seat on turn."""
    created = await client.create_table(Rules(max_hands=1))
    seat_tokens = await client.seat_all(created.table.table_id)
    streams = [client.seat_stream(token, batched=True) for token in seat_tokens]
    snapshots = [await stream.start() for stream in streams]
    return streams, protocol.seat_from_proto(snapshots[-1].view.turn)


async def read_batch(stream: SeatStream) -> play_pb2.Batch:
    """The next message, which must be a batch (read whole, not unpacked)."""
    message = await asyncio.wait_for(stream.call.read(), READ_TIMEOUT)
    assert message is not grpc.aio.EOF  # type: ignore[attr-defined]
    assert message.WhichOneof("kind") == "batch", message
    return message.batch  # type: ignore[no-any-return]


@pytest.mark.asyncio
async def test_one_action_is_one_message_for_each_seat(client: Client) -> None:
    streams, turn = await batched_table(client)
    rng = random.Random(16)
    # From the latest: the seat on turn gets its prompt, alone in a batch.
    opening = await read_batch(streams[turn])
    assert not opening.events and opening.HasField("prompt")
    prompt = opening.prompt
    last = prompt.sequence
    for _ in range(40):  # 40 actions: bids, then card plays, tricks won on the way
        action_id = await streams[turn].send(rng.choice(choices_of(prompt)), prompt.sequence)
        received = [await read_batch(stream) for stream in streams]
        # Every seat: the action's events, nothing before, nothing missing.
        first = received[turn].events[0].sequence
        assert first == last + 1
        end = received[turn].events[-1].sequence
        for seat, batch in enumerate(received):
            assert [event.sequence for event in batch.events] == list(range(first, end + 1))
            owned = [event.action_id for event in batch.events if event.action_id]
            assert owned == ([action_id] if seat == turn else [])  # the actor's own, only
            if seat == turn:
                assert [result.action_id for result in batch.action_results] == [action_id]
                assert batch.action_results[0].accepted
                assert batch.action_results[0].sequence == first
            else:
                assert not batch.action_results
        prompted = [seat for seat, batch in enumerate(received) if batch.HasField("prompt")]
        assert len(prompted) == 1, prompted  # the seat on turn now, in the same message
        turn = prompted[0]
        prompt = received[turn].prompt
        assert prompt.sequence == end
        last = end
    for stream in streams:
        await stream.close()


async def read_raw_batch(call: Any) -> play_pb2.Batch:
    """The next message of a batched stream's call, which must be a batch."""
    message = await asyncio.wait_for(call.read(), READ_TIMEOUT)
    assert message is not grpc.aio.EOF  # type: ignore[attr-defined]
    assert message.WhichOneof("kind") == "batch", message
    return message.batch  # type: ignore[no-any-return]


@pytest.mark.asyncio
async def test_every_batched_stream_is_told_whose_turn_it_is_and_its_deadline(
    client: Client,
) -> None:
    created = await client.create_table(Rules(max_hands=1))
    table_id = created.table.table_id
    seat_tokens = await client.seat_all(table_id)
    streams = [client.seat_stream(token, batched=True) for token in seat_tokens]
    snapshots = [await stream.start() for stream in streams]
    spectator = watch(client, table_id, batched=True)
    watched = await spectator.snapshot()
    turn = protocol.seat_from_proto(snapshots[-1].view.turn)
    opening = await read_batch(streams[turn])
    # From the latest: the spectator's snapshot has the turn and the clock the seat is prompted
    # with (so do the seats' own snapshots: it is public).
    for snapshot in (watched, *snapshots):
        assert snapshot.turn.seat == snapshot.view.turn == protocol.seat_to_proto(turn)
        assert snapshot.turn.deadline == opening.prompt.deadline
    assert opening.turn == watched.turn
    prompt = opening.prompt
    rng = random.Random(4)
    actions = 0
    while True:
        await streams[turn].send(rng.choice(choices_of(prompt)), prompt.sequence)
        actions += 1
        received = [await read_batch(stream) for stream in streams]
        public = await read_raw_batch(spectator.call)
        assert [event.sequence for event in public.events] == [
            event.sequence for event in received[0].events
        ]
        prompted = [seat for seat, batch in enumerate(received) if batch.HasField("prompt")]
        if not prompted:
            break  # the hand, and the one-hand match, is over: no one is to act
        (turn,) = prompted
        prompt = received[turn].prompt
        # Every viewer is told who acts next and until when: the deadline the seat is given.
        for batch in (public, *received):
            assert batch.turn.seat == protocol.seat_to_proto(turn)
            assert batch.turn.deadline == prompt.deadline
        assert public.turn.deadline.ToDatetime() > public.events[-1].time.ToDatetime()
    assert actions == 4 + 52
    assert not public.HasField("turn")
    assert any(event.HasField("match_ended") for event in public.events)
    for stream in streams:
        await stream.close()
    spectator.close()


@pytest.mark.asyncio
async def test_batched_and_unbatched_streams_see_the_same_events(
    client: Client, server: SpadesServer
) -> None:
    created = await client.create_table(Rules(max_hands=1))
    table_id = created.table.table_id
    seat_tokens = await client.seat_all(table_id)
    # Seats 0 and 2 batched, 1 and 3 not; a batched and an unbatched spectator, from the start.
    streams = [
        client.seat_stream(token, batched=seat % 2 == 0) for seat, token in enumerate(seat_tokens)
    ]
    for stream in streams:
        await stream.start(after_sequence=0)
    spectators = [watch(client, table_id, 0), watch(client, table_id, 0, batched=True)]
    for spectator in spectators:
        await spectator.snapshot()
    rng = random.Random(7)

    async def play_seat(stream: SeatStream) -> None:
        for _ in range(400):
            message = await stream.next()
            kind = message.WhichOneof("kind")
            if kind == "event" and message.event.HasField("seed_revealed"):
                return
            if kind == "prompt":
                await stream.send(rng.choice(choices_of(message.prompt)), message.prompt.sequence)
        raise AssertionError("the match did not end")

    await asyncio.wait_for(asyncio.gather(*(play_seat(stream) for stream in streams)), 60)
    for spectator in spectators:
        await spectator.until_event("seed_revealed")
    logged = await log_events(server, table_id)
    # Both spectators: every public event, in order, the same.
    assert spectators[0].events() == spectators[1].events()
    assert [event.sequence for event in spectators[1].events()] == [e.sequence for e in logged]
    assert spectators[1].batches and not spectators[0].batches
    for seat, stream in enumerate(streams):
        # Each seat's own redaction (CardsDealt with its own hand), batched or not.
        events = [m.event for m in stream.events()]
        assert [event.sequence for event in events] == [e.sequence for e in logged]
        dealt = [e.cards_dealt for e in events if e.HasField("cards_dealt")]
        assert len(dealt) == 4
        for deal in dealt:
            own = deal.seat == protocol.seat_to_proto(seat)
            assert len(deal.cards) == (13 if own else 0)
        assert bool(stream.batches) == (seat % 2 == 0)
        if seat % 2:
            assert all(m.WhichOneof("kind") != "batch" for m in stream.received)
        else:
            # Fewer messages than events: a whole catch-up and every action's events in one.
            assert len(stream.batches) < len(events)
    for stream in streams:
        await stream.close()
    for spectator in spectators:
        spectator.close()


@pytest.mark.asyncio
async def test_a_batched_seat_stream_gets_events_and_prompts_and_act_answers(
    client: Client,
) -> None:
    created = await client.create_table(Rules(max_hands=1))
    table_id = created.table.table_id
    seat_tokens = await client.seat_all(table_id)
    calls: list[Any] = [
        client.play.Seat(
            play_pb2.SeatRequest(latest=True, batched=True), metadata=((TOKEN_KEY, token),)
        )
        for token in seat_tokens
    ]
    snapshots = [await asyncio.wait_for(call.read(), READ_TIMEOUT) for call in calls]
    assert all(s.WhichOneof("kind") == "snapshot" for s in snapshots)
    turn = protocol.seat_from_proto(snapshots[0].snapshot.view.turn)
    first = await asyncio.wait_for(calls[turn].read(), READ_TIMEOUT)
    assert first.WhichOneof("kind") == "batch" and first.batch.HasField("prompt")
    prompt = first.batch.prompt
    action = choices_of(prompt)[0]
    acted = await client.play.Act(
        play_pb2.ActRequest(
            action=play_pb2.ActionRequest(action_id="a1", sequence=prompt.sequence, action=action)
        ),
        metadata=((TOKEN_KEY, seat_tokens[turn]),),
    )
    assert acted.result.accepted
    for seat, call in enumerate(calls):
        message = await asyncio.wait_for(call.read(), READ_TIMEOUT)
        assert message.WhichOneof("kind") == "batch", message
        batch = message.batch
        assert batch.events[0].sequence == acted.result.sequence
        assert not batch.action_results  # results come back from Act
        assert batch.events[0].action_id == ("a1" if seat == turn else "")
    for call in calls:
        call.cancel()


@pytest.mark.asyncio
async def test_an_unbatched_stream_never_gets_a_batch(client: Client) -> None:
    created = await client.create_table(Rules(max_hands=1))
    seat_tokens = await client.seat_all(created.table.table_id)
    stream = client.seat_stream(seat_tokens[0])
    await stream.start(after_sequence=0)
    for _ in range(8):
        message = await stream.next()
        assert message.WhichOneof("kind") in ("event", "prompt"), message
    await stream.close()


# -- the frames, without gRPC ------------------------------------------------------------------


@pytest_asyncio.fixture
async def store(tmp_path: Path) -> AsyncIterator[TableStore]:
    async with sqlite_table_store(tmp_path / "batches.db") as opened:
        yield opened


@pytest.mark.asyncio
async def test_frames_parse_as_the_messages_play_proto_declares(store: TableStore) -> None:
    table = await table_seated_in_store(store)
    assert table.started and table.version > 5
    for viewer in (None, 0, 1, 2, 3):
        for index in range(table.version):
            expected = frames.redacted(table, index, viewer)
            for response in (play_pb2.PlayResponse, play_pb2.WatchResponse, play_pb2.SeatResponse):
                parsed = response.FromString(frames.event(table, index, viewer))
                assert parsed.WhichOneof("kind") == "event"
                assert parsed.event == expected
    result = play_pb2.ActionResult(action_id="x", accepted=True, sequence=3)
    prompt = play_pb2.TurnPrompt(sequence=table.version, may_concede=True)
    data = frames.batch(table, 2, table.version, 1, [result, result], prompt.SerializeToString())
    parsed = play_pb2.PlayResponse.FromString(data)
    assert parsed == play_pb2.PlayResponse(
        batch=play_pb2.Batch(
            events=[frames.redacted(table, index, 1) for index in range(2, table.version)],
            action_results=[result, result],
            prompt=prompt,
        )
    )
    # Protobuf's own encoding, byte for byte.
    assert data == parsed.SerializeToString()


@pytest.mark.asyncio
async def test_each_event_is_serialised_once_per_viewer_and_shared(store: TableStore) -> None:
    table = await table_seated_in_store(store)
    dealt = next(  # seat 2's own deal
        index
        for index, entry in enumerate(table.entries)
        if entry.message.WhichOneof("kind") == "cards_dealt"
        and entry.message.cards_dealt.seat == protocol.seat_to_proto(2)
    )
    shared = frames.event_payload(table, dealt, 2)
    assert frames.event_payload(table, dealt, 2) is shared  # the same bytes for every stream
    assert frames.cache_of(table)[frames.wire_key(dealt + 1, 2)] is shared
    # Each class of viewer its own: the seat sees its hand; another seat, like the public, not.
    public = frames.event_payload(table, dealt, None)
    assert shared != public
    assert frames.event_payload(table, dealt, 0) == public
    cache = frames.cache_of(table)
    assert cache[frames.wire_key(dealt + 1, 0)] is not cache[frames.wire_key(dealt + 1, None)]
    assert events_pb2.Event.FromString(shared) == frames.redacted(table, dealt, 2)
    assert events_pb2.Event.FromString(public) == frames.redacted(table, dealt, None)
    # An event that hides nothing (a seat taken) is serialised once for every viewer.
    taken = next(
        index
        for index, entry in enumerate(table.entries)
        if entry.message.WhichOneof("kind") == "seat_taken" and not entry.action_id
    )
    whole = frames.event_payload(table, taken, None)
    assert all(frames.event_payload(table, taken, seat) is whole for seat in range(4))
    assert events_pb2.Event.FromString(whole) == table.entries[taken].message


@pytest.mark.asyncio
async def test_the_cache_keeps_only_the_latest_sequences(store: TableStore) -> None:
    table = await table_seated_in_store(store)
    old = table.version - frames.CACHED_SEQUENCES  # nothing that old (the table is young)
    assert old < 0
    for index in range(table.version):
        for viewer in (None, 0, 1, 2, 3):
            frames.event_payload(table, index, viewer)
    viewers_keys = {
        frames.wire_key(sequence, viewer)
        for sequence in range(1, table.version + 1)
        for viewer in (None, 0, 1, 2, 3)
    }
    cache = frames.cache_of(table)
    assert viewers_keys <= set(cache)
    # Pretend many more events came (the cache prunes what left the window once it is full).
    table.version += 10 * frames.CACHED_SEQUENCES
    cache.clear()
    for filler in range(frames.PRUNE_AT):
        cache[frames.wire_key(filler - 10 * frames.PRUNE_AT, 0)] = b""  # all too old
    frames.event_payload(table, 0, None)  # too old to be kept now: serialised, not cached
    assert len(cache) == frames.PRUNE_AT
    table.version -= 10 * frames.CACHED_SEQUENCES
    frames.event_payload(table, table.version - 1, None)  # recent: prunes, then caches
    assert list(cache) == [frames.wire_key(table.version, None)]


@pytest.mark.asyncio
async def test_a_long_catch_up_comes_in_several_batches(
    store: TableStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = await table_seated_in_store(store)
    monkeypatch.setattr(frames, "MAX_BATCH_EVENTS", 2)
    shutdown = asyncio.Event()
    feed = aiter(SpectatorFeed(store, table.table_id, 0, shutdown, batched=True))
    first = await asyncio.wait_for(anext(feed), 5)
    assert isinstance(first, play_pb2.PlayResponse) and first.HasField("snapshot")
    sequences: list[int] = []
    while len(sequences) < table.version:
        message = await asyncio.wait_for(anext(feed), 5)
        assert isinstance(message, bytes)
        batch = play_pb2.WatchResponse.FromString(message).batch
        assert 1 <= len(batch.events) <= 2
        sequences += [event.sequence for event in batch.events]
    assert sequences == list(range(1, table.version + 1))
    shutdown.set()
    store.wake_all()
    with pytest.raises(Exception, match="shutting down"):
        await asyncio.wait_for(anext(feed), 5)


@pytest.mark.asyncio
async def test_a_seat_feed_sends_the_result_with_the_events_it_caused(store: TableStore) -> None:
    """The actor's stream waits while its action is decided: its result, the events and the
    next prompt come in one batch, not the events first and the result after."""
    table = await table_seated_in_store(store)
    seat = table.state.turn
    assert seat is not None
    holder = tokens.digest(TOKENS[seat])
    outbox = Outbox(16)
    session = SeatSession(
        table.table_id, seat, holder, False, asyncio.Event(), structlog.get_logger()
    )

    async def reclaim() -> None:
        return None

    actions = asyncio.ensure_future(client_side_open())
    feed = aiter(
        SeatFeed(
            store,
            session,
            None,
            asyncio.Event(),
            outbox=outbox,
            actions=actions,
            reclaim=reclaim,
            batched=True,
        )
    )
    await asyncio.wait_for(anext(feed), 5)  # the snapshot
    opening_data = await asyncio.wait_for(anext(feed), 5)
    assert isinstance(opening_data, bytes)
    opening = play_pb2.PlayResponse.FromString(opening_data)
    prompt = opening.batch.prompt
    assert opening.batch.HasField("prompt") and not opening.batch.events
    # An action is read and being decided: the table changes (its events), then its result.
    owed = outbox.begin()
    action = protocol.action_from_proto(choices_of(prompt)[0])
    before = table.version
    asked = ActionRequest(seat, holder, False, action, "act-1", prompt.sequence)
    next_message = asyncio.ensure_future(anext(feed))
    _, entries = await store.execute(table.table_id, lambda t: decide_action(t, asked))
    for _ in range(50):  # the feed was woken by the change: it must wait for the result
        await asyncio.sleep(0)
    assert not next_message.done()
    result = play_pb2.ActionResult(action_id="act-1", accepted=True, sequence=entries[0].sequence)
    owed.settle(result)
    store.poke(table.table_id)
    data = await asyncio.wait_for(next_message, 5)
    assert isinstance(data, bytes)
    batch = play_pb2.PlayResponse.FromString(data).batch
    assert [event.sequence for event in batch.events] == list(range(before + 1, table.version + 1))
    assert batch.events[0].action_id == "act-1"
    assert list(batch.action_results) == [result]
    actions.cancel()


@pytest.mark.asyncio
async def test_every_method_of_the_service_is_served(server: SpadesServer) -> None:
    """PlayService is registered by hand (play.add_to_server, for pre-serialised messages):
    none of its methods may be missing (an empty request is refused, never UNIMPLEMENTED)."""
    service = play_pb2.DESCRIPTOR.services_by_name["PlayService"]
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        for method in service.methods:
            path = f"/{service.full_name}/{method.name}"
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                if method.client_streaming:
                    call: Any = channel.stream_stream(path, None, None)(
                        iter(()), timeout=READ_TIMEOUT
                    )
                    await call.read()
                elif method.server_streaming:
                    stream: Any = channel.unary_stream(path, None, None)(b"", timeout=READ_TIMEOUT)
                    await stream.read()
                else:
                    await channel.unary_unary(path, None, None)(b"", timeout=READ_TIMEOUT)
            assert refused.value.code() is not grpc.StatusCode.UNIMPLEMENTED, method.name


def test_the_serializer_writes_bytes_as_they_are() -> None:
    serialize = frames.serializer(play_pb2.PlayResponse)
    assert serialize(b"\x12\x00") == b"\x12\x00"
    message = play_pb2.PlayResponse(prompt=play_pb2.TurnPrompt(sequence=4))
    assert serialize(message) == message.SerializeToString()


@pytest.mark.asyncio
async def test_a_finished_table_keeps_no_serialised_events(store: TableStore) -> None:
    table = await table_seated_in_store(store)
    frames.event_payload(table, table.version - 1, None)
    frames.turn_payload(table)
    assert frames.cache_of(table)
    await store.execute(table.table_id, decide_close)  # MatchEnded, SeedRevealed
    assert table.finished
    # The streams' catch-up of the end empties it (a finished table may stay cached for long).
    for index in range(table.version - 3, table.version):
        payload = frames.event_payload(table, index, None)
        assert events_pb2.Event.FromString(payload) == frames.redacted(table, index, None)
    assert not frames.cache_of(table)
    assert frames.turn_payload(table) == b""
    assert not frames.cache_of(table)  # and nothing added since


@pytest.mark.asyncio
async def test_the_turn_is_serialised_once_per_sequence_and_shared(store: TableStore) -> None:
    table = await table_seated_in_store(store)
    assert table.state.turn is not None
    shared = frames.turn_payload(table)
    assert frames.turn_payload(table) is shared  # the same bytes for every stream
    turn = play_pb2.Turn.FromString(shared)
    assert turn.seat == protocol.seat_to_proto(table.state.turn)
    parsed = play_pb2.WatchResponse.FromString(
        frames.batch(table, table.version - 1, table.version, None, turn=shared)
    )
    assert parsed.batch.turn == turn
    assert list(parsed.batch.events) == [frames.redacted(table, table.version - 1, None)]
