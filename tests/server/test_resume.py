"""Resume: a client that drops and comes back with its last sequence number gets exactly what
it missed (a snapshot there, then every later event once, in order), then live events."""

from __future__ import annotations

import random

import pytest

from spades import protocol
from spades.engine import MatchState, Rules, Viewer, redact, view
from spades.v1 import events_pb2, play_pb2, view_pb2
from spades_server.app.server import SpadesServer
from tests.support.clients import Client, SeatStream, close_streams, current_view, watch
from tests.support.seats import play_turns
from tests.support.servers import log_events


def rebuilt_view(
    logged: list[events_pb2.Event], sequence: int, viewer: Viewer
) -> view_pb2.MatchView:
    """The viewer's view after event ``sequence``, rebuilt by the engine from the log."""
    state = MatchState.from_events(protocol.event_from_proto(event) for event in logged[:sequence])
    return protocol.view_to_proto(view(state, viewer))


def assert_redacted_copy(
    received: events_pb2.Event, logged: events_pb2.Event, viewer: Viewer
) -> None:
    assert received.sequence == logged.sequence
    expected = redact(protocol.event_from_proto(logged), viewer)
    assert protocol.event_from_proto(received) == expected, (received, logged)


async def read_through(stream: SeatStream, sequence: int) -> None:
    """Read until the stream has delivered the event at ``sequence``."""
    while not any(m.event.sequence >= sequence for m in stream.events()):
        await stream.next()


def event_sequences(messages: list[play_pb2.PlayResponse]) -> list[int]:
    return [m.event.sequence for m in messages if m.WhichOneof("kind") == "event"]


def cards_played(snapshot: play_pb2.Snapshot) -> int:
    return len(snapshot.view.completed_tricks) * 4 + len(snapshot.view.current_trick)


@pytest.mark.asyncio
@pytest.mark.parametrize("behind", [0, 6], ids=["read-everything", "six-events-behind"])
async def test_a_seat_drops_mid_hand_and_resumes(
    client: Client, server: SpadesServer, behind: int
) -> None:
    table_id, tokens, streams = await client.seated(Rules(max_hands=1))
    rng = random.Random(behind)
    first_snapshot = streams[0].received[0].snapshot.sequence

    # Play into the hand, until a card has just been played as the second of a trick.
    now = await play_turns(
        client,
        table_id,
        streams,
        rng,
        until=lambda now: cards_played(now) >= 6 and len(now.view.current_trick) == 2,
    )
    dropped = protocol.seat_from_proto(now.view.current_trick[-1].seat)
    old = streams.pop(dropped)
    await read_through(old, now.sequence)
    old.call.cancel()
    last_seen = now.sequence - behind  # what the client had processed when it dropped
    seen_before = [s for s in event_sequences(old.received) if s <= last_seen]

    # The others play on until it is the dropped seat's turn again.
    during = await play_turns(client, table_id, streams, rng)
    assert protocol.seat_from_proto(during.view.turn) == dropped
    assert during.sequence > now.sequence
    logged = await log_events(server, table_id)
    assert logged[-1].sequence == during.sequence

    back = client.seat_stream(tokens[dropped])
    snapshot = await back.start(after_sequence=last_seen)
    assert snapshot.sequence == last_seen
    assert snapshot.view == rebuilt_view(logged, last_seen, dropped)
    missed = []
    while True:
        message = await back.next()
        kind = message.WhichOneof("kind")
        if kind == "prompt":
            break
        assert kind == "event", message
        missed.append(message.event)
    assert [event.sequence for event in missed] == list(range(last_seen + 1, during.sequence + 1))
    for event in missed:
        assert_redacted_copy(event, logged[event.sequence - 1], dropped)
    prompt = message.prompt
    assert prompt.sequence == during.sequence
    assert list(prompt.legal_actions) == list(
        rebuilt_view(logged, during.sequence, dropped).legal_actions
    )

    # It can act, and live events follow on the new stream.
    result = await back.act(rng.choice(list(prompt.legal_actions)), prompt.sequence)
    assert result.accepted and result.sequence == during.sequence + 1, result
    live = await back.next_of("event")
    assert live.event.sequence == during.sequence + 1
    streams[dropped] = back
    final = await play_turns(client, table_id, streams, rng)
    assert final.view.phase == view_pb2.PHASE_ENDED
    await read_through(back, final.sequence)

    # Across both connections: every event after the first snapshot exactly once, in order.
    seen = seen_before + event_sequences(back.received)
    assert seen == list(range(first_snapshot + 1, final.sequence + 1))
    await close_streams(streams)


@pytest.mark.asyncio
async def test_a_seat_resumes_at_the_latest_sequence(client: Client, server: SpadesServer) -> None:
    """Nothing missed: the snapshot is the latest view, the prompt follows at once."""
    table_id, tokens, streams = await client.seated(Rules(max_hands=1))
    now = await current_view(client, table_id)
    turn = protocol.seat_from_proto(now.view.turn)
    streams[turn].call.cancel()
    back = client.seat_stream(tokens[turn])
    snapshot = await back.start(after_sequence=now.sequence)
    assert snapshot.sequence == now.sequence
    message = await back.next()
    assert message.WhichOneof("kind") == "prompt" and message.prompt.sequence == now.sequence
    logged = await log_events(server, table_id)
    assert snapshot.view == rebuilt_view(logged, now.sequence, turn)
    await back.close()
    for seat, stream in streams.items():
        if seat != turn:
            await stream.close()


@pytest.mark.asyncio
async def test_a_spectator_drops_and_resumes(client: Client, server: SpadesServer) -> None:
    table_id, _, streams = await client.seated(Rules(players=3, max_hands=1))
    rng = random.Random(3)
    spectator = watch(client, table_id)
    start = (await spectator.snapshot()).sequence
    await play_turns(client, table_id, streams, rng, until=lambda now: cards_played(now) >= 4)
    now = await current_view(client, table_id)
    while not spectator.events() or spectator.events()[-1].sequence < now.sequence - 3:
        await spectator.next()
    spectator.close()
    last_seen = spectator.events()[-1].sequence
    before = [event.sequence for event in spectator.events()]
    assert before == list(range(start + 1, last_seen + 1))

    await play_turns(client, table_id, streams, rng, until=lambda now: cards_played(now) >= 12)
    logged = await log_events(server, table_id)
    back = watch(client, table_id, after_sequence=last_seen)
    snapshot = await back.snapshot()
    assert snapshot.sequence == last_seen
    assert snapshot.view == rebuilt_view(logged, last_seen, None)
    while not back.events() or back.events()[-1].sequence < logged[-1].sequence:
        await back.next()
    # ...then live events, to the end of the match.
    final = await play_turns(client, table_id, streams, rng)
    await back.until_event("seed_revealed")
    logged = await log_events(server, table_id)
    assert final.sequence == logged[-1].sequence
    after = [event.sequence for event in back.events()]
    assert after == list(range(last_seen + 1, final.sequence + 1))
    for event in back.events():
        assert_redacted_copy(event, logged[event.sequence - 1], None)
    back.close()
    await close_streams(streams)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "rules",
    [
        Rules(max_hands=1),
        Rules(blind_nil=True, blind_nil_deficit=0, blind_nil_pass_cards=2, max_hands=1),
    ],
    ids=["default", "blind-nil-pass"],
)
async def test_a_snapshot_at_any_sequence_is_the_view_rebuilt_there(
    client: Client, server: SpadesServer, rules: Rules
) -> None:
    table_id, tokens, streams = await client.seated(rules)
    await play_turns(client, table_id, streams, random.Random(4))
    logged = await log_events(server, table_id)
    for after in range(1, logged[-1].sequence + 1, 3):
        seat = after % 4
        stream = client.seat_stream(tokens[seat])
        snapshot = await stream.start(after_sequence=after)
        assert snapshot.sequence == after
        assert snapshot.view == rebuilt_view(logged, after, seat), after
        await stream.close()
        spectator = watch(client, table_id, after_sequence=after)
        public = await spectator.snapshot()
        assert public.sequence == after
        assert public.view == rebuilt_view(logged, after, None), after
        spectator.close()
    # 0 means the latest.
    latest = await client.seat_stream(tokens[1]).start()
    assert latest.sequence == logged[-1].sequence
    assert latest.view == rebuilt_view(logged, logged[-1].sequence, 1)
    await close_streams(streams)
