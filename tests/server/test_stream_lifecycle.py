"""Streams with a lifecycle a client can rely on (issue 10), on both log backends.

Where a stream starts (``after_sequence``: 0 from the beginning, N after N, ``latest`` now), how
it ends (OK once the match is over and the seed is revealed, on a live table and on a finished
one; ABORTED for a replaced stream, after the results it owes), what a prompt offers (flags for
concession and the extension, a card pass as a choice of N cards), the first result of an
action id (a refusal too, on a stream and through Act), and messages that are not actions.
"""

from __future__ import annotations

import random
import uuid
from typing import TypeVar, cast

import grpc
import pytest
from google.protobuf.message import Message
from google.rpc import error_details_pb2, status_pb2

from spades import protocol
from spades.engine import Clock, Rules
from spades.v1 import actions_pb2, play_pb2, view_pb2
from spades_server.app.server import SpadesServer
from tests.support.clients import TOKEN_KEY, Client, close_streams, current_view, watch
from tests.support.seats import bid, play_turns, turn_prompt
from tests.support.servers import log_events

Code = grpc.StatusCode
DetailT = TypeVar("DetailT", bound=Message)
CONCEDE = actions_pb2.Action(concession=actions_pb2.Concession())
CLAIM = actions_pb2.Action(extension_claim=actions_pb2.ExtensionClaim())


async def act(
    client: Client, token: str, action_id: str, sequence: int, action: actions_pb2.Action
) -> play_pb2.ActionResult:
    """One action through PlayService.Act."""
    request = play_pb2.ActRequest(
        action=play_pb2.ActionRequest(action_id=action_id, sequence=sequence, action=action)
    )
    return (await client.play.Act(request, metadata=((TOKEN_KEY, token),))).result


async def watch_to_end(
    client: Client, table_id: str, **start: object
) -> tuple[list[play_pb2.WatchResponse], grpc.StatusCode]:
    """Every message of a Watch stream, and the status it ended with."""
    call = client.play.Watch(play_pb2.WatchRequest(table_id=table_id, **start))  # type: ignore[arg-type]
    messages = [message async for message in call]
    return messages, await call.code()


# ------------------------------------------------------------------------------ how streams end


@pytest.mark.asyncio
async def test_play_seat_and_watch_end_with_ok_after_the_seed_is_revealed(
    client: Client, server: SpadesServer
) -> None:
    table_id, tokens, streams = await client.seated()
    spectator = watch(client, table_id, after_sequence=0)
    await spectator.snapshot()
    seat, prompt = await turn_prompt(client, table_id, streams)
    # Another seat moves to a Seat stream: it replaces that seat's Play stream (ABORTED).
    other = (seat + 1) % 4
    seat_call = client.play.Seat(
        play_pb2.SeatRequest(latest=True), metadata=((TOKEN_KEY, tokens[other]),)
    )
    opened = cast(play_pb2.SeatResponse, await seat_call.read())
    assert opened.WhichOneof("kind") == "snapshot"
    assert await streams.pop(other).until_end() == Code.ABORTED
    # The action that ends the match: its result comes before the stream ends.
    conceded = await streams[seat].act(CONCEDE, prompt.sequence, action_id="the-end")
    assert conceded.accepted, conceded
    logged = await log_events(server, table_id)
    assert logged[-1].HasField("seed_revealed")
    for stream in streams.values():
        assert await stream.until_end() == Code.OK
        assert stream.events()[-1].event.sequence == logged[-1].sequence
        assert stream.events()[-1].event.HasField("seed_revealed")
    assert any(
        m.action_result.action_id == "the-end"
        for m in streams[seat].received
        if m.WhichOneof("kind") == "action_result"
    )
    seat_messages: list[play_pb2.SeatResponse] = []
    while (message := await seat_call.read()) is not grpc.aio.EOF:  # type: ignore[attr-defined]
        seat_messages.append(cast(play_pb2.SeatResponse, message))
    assert await seat_call.code() == Code.OK
    assert seat_messages[-1].event.HasField("seed_revealed")
    while True:
        try:
            await spectator.next()
        except EOFError:
            break
    assert await spectator.call.code() == Code.OK
    events = [m.event for m in spectator.received if m.WhichOneof("kind") == "event"]
    assert [event.sequence for event in events] == [event.sequence for event in logged]


@pytest.mark.asyncio
async def test_a_stream_opened_on_a_finished_table_sends_what_it_asked_for_and_ends(
    client: Client, server: SpadesServer
) -> None:
    table_id, tokens, streams = await client.seated()
    seat, prompt = await turn_prompt(client, table_id, streams)
    assert (await streams[seat].act(CONCEDE, prompt.sequence)).accepted
    for stream in streams.values():
        assert await stream.until_end() == Code.OK
    logged = await log_events(server, table_id)
    last = logged[-1].sequence

    # Watch from the beginning: an empty snapshot at 0, then every event, then OK.
    messages, status = await watch_to_end(client, table_id)
    assert status == Code.OK
    assert messages[0].snapshot.sequence == 0 and messages[0].snapshot.view == view_pb2.MatchView()
    assert [m.event.sequence for m in messages[1:]] == list(range(1, last + 1))
    # Watch at the latest: the final view, nothing more, then OK.
    messages, status = await watch_to_end(client, table_id, latest=True)
    assert status == Code.OK and len(messages) == 1
    assert messages[0].snapshot.sequence == last
    assert messages[0].snapshot.view.phase == view_pb2.PHASE_ENDED
    # Play after N, and Seat: the events after N, then OK.
    again = client.seat_stream(tokens[2])
    snapshot = await again.start(after_sequence=last - 3)
    assert snapshot.sequence == last - 3
    assert await again.until_end() == Code.OK
    assert [m.event.sequence for m in again.events()] == [last - 2, last - 1, last]
    seat_call = client.play.Seat(
        play_pb2.SeatRequest(after_sequence=last), metadata=((TOKEN_KEY, tokens[3]),)
    )
    seat_messages = [message async for message in seat_call]
    assert await seat_call.code() == Code.OK
    assert [m.WhichOneof("kind") for m in seat_messages] == ["snapshot"]


# ------------------------------------------------------------------------------ where they start


@pytest.mark.asyncio
async def test_after_sequence_zero_is_the_beginning_and_latest_is_now(
    client: Client, server: SpadesServer
) -> None:
    table_id, tokens, streams = await client.seated()
    version = await server.log.stream_version(table_id)
    beginning = client.seat_stream(tokens[0])
    snapshot = await beginning.start(after_sequence=0)
    # Before the first event: who is looking, nothing else; then the table's own TableCreated.
    assert snapshot.sequence == 0
    assert snapshot.view == view_pb2.MatchView(viewer=protocol.seat_to_proto(0))
    first = await beginning.next_of("event")
    assert first.event.sequence == 1 and first.event.HasField("table_created")
    await beginning.close()

    now = client.seat_stream(tokens[1])
    snapshot = await now.start(after_sequence=None)  # latest
    assert snapshot.sequence == version and snapshot.view.rules.players == 4
    await now.close()
    middle = watch(client, table_id, after_sequence=3)
    assert (await middle.snapshot()).sequence == 3
    middle.close()

    # Both at once, or a sequence from the future: refused, with a status that says which.
    for request, code, words in (
        (
            play_pb2.WatchRequest(table_id=table_id, after_sequence=2, latest=True),
            Code.INVALID_ARGUMENT,
            "not both",
        ),
        (
            play_pb2.WatchRequest(table_id=table_id, after_sequence=version + 1),
            Code.OUT_OF_RANGE,
            "past the table's latest",
        ),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            async for _ in client.play.Watch(request):
                pass
        assert refused.value.code() == code and words in (refused.value.details() or "")
    bad = client.seat_stream(tokens[2])
    await bad.call.write(
        play_pb2.PlayRequest(start=play_pb2.StartPlay(after_sequence=1, latest=True))
    )
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await bad.next()
    assert refused.value.code() == Code.INVALID_ARGUMENT
    await close_streams(streams)


# ------------------------------------------------------------------------------ one stream per seat


@pytest.mark.asyncio
async def test_a_replaced_stream_delivers_the_result_of_its_action_then_ends(
    client: Client, server: SpadesServer
) -> None:
    table_id, tokens, streams = await client.seated()
    for _ in range(4):  # each bid of the first round, racing a replacement of its stream
        seat, prompt = await turn_prompt(client, table_id, streams)
        old = streams[seat]
        action_id = await old.send(bid(3), prompt.sequence)
        newer = client.seat_stream(tokens[seat])
        await newer.start(after_sequence=prompt.sequence)
        streams[seat] = newer
        try:
            result: play_pb2.ActionResult | None = await old.act_result(action_id)
            assert await old.until_end() == Code.ABORTED
        except grpc.aio.AioRpcError as ended:
            # The old stream had not read it yet (the two streams race to the server): it
            # owes no result, and ends as replaced all the same.
            assert ended.code() == Code.ABORTED
            result = None
        assert old.call and "newer stream" in (await old.call.details() or "")
        if result is not None and result.accepted:
            # Its event reaches the new stream too, with the id for the acting seat.
            event = (await newer.next_of("event")).event
            assert event.action_id == action_id and event.sequence == result.sequence
        else:
            # Never decided: refused by the replaced stream (or never read there), and the id
            # is free on the new one: another bid under it is applied, not the first result.
            if result is not None:
                assert result.code == Code.ABORTED.value[0], result
                assert "newer stream" in result.reason
            again = await newer.act(bid(4), prompt.sequence, action_id=action_id)
            assert again.accepted, again
            event = (await newer.next_of("event")).event
            assert event.sequence == again.sequence and event.bid_made.bid.tricks == 4
    bids = [e for e in await log_events(server, table_id) if e.HasField("bid_made")]
    assert len(bids) == 4
    await close_streams(streams)


# ------------------------------------------------------------------------------ the first result


@pytest.mark.asyncio
async def test_a_refused_action_id_stays_refused_whatever_comes_with_it_again(
    client: Client, server: SpadesServer
) -> None:
    table_id, tokens, streams = await client.seated()
    seat, prompt = await turn_prompt(client, table_id, streams)
    stream = streams[seat]
    version = await server.log.stream_version(table_id)
    refused = await stream.act(bid(99), prompt.sequence, action_id="once")
    assert not refused.accepted and refused.reason, refused
    # The same id with a legal bid: the first result again, and nothing applied.
    for answer in (
        await stream.act(bid(3), prompt.sequence, action_id="once"),
        await act(client, tokens[seat], "once", prompt.sequence, bid(3)),
    ):
        assert not answer.accepted, answer
        assert (answer.code, answer.reason) == (refused.code, refused.reason)
    # ...and from a newer stream of the seat (which replaces this one).
    newer = client.seat_stream(tokens[seat])
    await newer.start(after_sequence=prompt.sequence)
    streams[seat] = newer
    answer = await newer.act(bid(3), prompt.sequence, action_id="once")
    assert (answer.accepted, answer.reason) == (False, refused.reason)
    assert await server.log.stream_version(table_id) == version, "no repeat took a version"
    # A new id is decided afresh, and an accepted id stays accepted whatever comes with it.
    accepted = await newer.act(bid(3), prompt.sequence, action_id="twice")
    assert accepted.accepted, accepted
    for answer in (
        await newer.act(bid(99), prompt.sequence, action_id="twice"),
        await act(client, tokens[seat], "twice", 0, CONCEDE),
    ):
        assert answer.accepted and answer.sequence == accepted.sequence, answer
    assert not (await current_view(client, table_id)).view.end.reason
    # The id is the seat's: another seat may use "once" for its own action.
    other, other_prompt = await turn_prompt(client, table_id, streams)
    assert other != seat
    theirs = await streams[other].act(bid(2), other_prompt.sequence, action_id="once")
    assert theirs.accepted, theirs
    await close_streams(streams)


@pytest.mark.asyncio
async def test_a_repeated_refused_id_gets_the_whole_first_status_with_its_details(
    client: Client,
) -> None:
    """The first result is the whole google.rpc.Status, not just its code and words: a repeat
    carries the first refusal's BadRequest field and ErrorInfo metadata too, on the stream that
    refused it, through Act and on a newer stream (which read the refusal back from the log)."""
    table_id, tokens, streams = await client.seated()
    seat, prompt = await turn_prompt(client, table_id, streams)
    impossible = await streams[seat].act(bid(99), prompt.sequence, action_id="impossible")
    stale = await streams[seat].act(bid(3), prompt.sequence - 1, action_id="stale")
    first = {"impossible": impossible.status, "stale": stale.status}
    # What the first refusals say, so the comparison below compares something.
    (violation,) = details_of(impossible.status, error_details_pb2.BadRequest).field_violations
    assert violation.field == "action.bid.tricks", violation
    info = details_of(stale.status, error_details_pb2.ErrorInfo)
    assert info.reason == "STALE_SEQUENCE" and info.metadata["sequence"], info
    newer = client.seat_stream(tokens[seat])
    for action_id, status in first.items():
        # A legal answer under the refused id: the first refusal, whole.
        assert (await streams[seat].act(bid(3), prompt.sequence, action_id)).status == status
        assert (await act(client, tokens[seat], action_id, prompt.sequence, bid(3))).status == (
            status
        )
    await newer.start(after_sequence=prompt.sequence)
    streams[seat] = newer
    for action_id, status in first.items():
        assert (await newer.act(bid(3), prompt.sequence, action_id)).status == status
    await close_streams(streams)


def details_of(status: status_pb2.Status, kind: type[DetailT]) -> DetailT:
    """The one detail of ``kind`` in ``status``."""
    found = []
    for detail in status.details:
        unpacked = kind()
        if detail.Unpack(unpacked):  # False (and nothing read) for a detail of another kind
            found.append(unpacked)
    (only,) = found
    return only


@pytest.mark.asyncio
async def test_a_refusal_of_the_moment_is_not_kept(client: Client, server: SpadesServer) -> None:
    """A stale answer is the id's result; a replaced stream's refusal is not (see above), and
    neither is a refusal of an id of the wrong length (it names no id)."""
    table_id, _, streams = await client.seated()
    seat, prompt = await turn_prompt(client, table_id, streams)
    stale = await streams[seat].act(bid(3), prompt.sequence - 1, action_id="late")
    assert not stale.accepted and stale.code == Code.ABORTED.value[0]
    again = await streams[seat].act(bid(3), prompt.sequence, action_id="late")
    assert (again.accepted, again.reason) == (False, stale.reason), "the first result"
    await close_streams(streams)


# ------------------------------------------------------------------------------ prompts


@pytest.mark.asyncio
async def test_prompts_flag_concession_and_the_extension(client: Client) -> None:
    rules = Rules(max_hands=1, clock=Clock(turn_millis=60_000, extension_millis=30_000))
    table_id, _, streams = await client.seated(rules)
    seat, prompt = await turn_prompt(client, table_id, streams)
    assert prompt.may_concede and prompt.may_claim_extension
    kinds = {action.WhichOneof("kind") for action in prompt.legal_actions}
    assert kinds == {"bid"}, "no concession or extension among the legal actions"
    assert not prompt.HasField("card_pass")
    claimed = await streams[seat].act(CLAIM, prompt.sequence)
    assert claimed.accepted, claimed
    later = (await streams[seat].next_of("prompt")).prompt
    assert later.sequence == claimed.sequence
    assert later.may_concede and not later.may_claim_extension, "one extension a turn"
    await close_streams(streams)

    no_extension = Rules(max_hands=1, clock=Clock(turn_millis=60_000, extension_millis=0))
    table_id, _, streams = await client.seated(no_extension)
    _, prompt = await turn_prompt(client, table_id, streams)
    assert prompt.may_concede and not prompt.may_claim_extension
    await close_streams(streams)


def north_goes_blind(
    seat: int, prompt: play_pb2.TurnPrompt, rng: random.Random
) -> actions_pb2.Action:
    choices = list(prompt.legal_actions)
    blind = [a for a in choices if a.HasField("blind_nil_choice") and a.blind_nil_choice.blind]
    look = [a for a in choices if a.HasField("blind_nil_choice") and not a.blind_nil_choice.blind]
    if blind and seat == 0:
        return blind[0]
    return look[0] if look else rng.choice(choices)


@pytest.mark.asyncio
async def test_a_card_pass_prompt_is_a_choice_of_n_cards(
    client: Client, server: SpadesServer
) -> None:
    rules = Rules(max_hands=1, blind_nil=True, blind_nil_deficit=0, blind_nil_pass_cards=2)
    table_id, _, streams = await client.seated(rules)
    now = await play_turns(
        client,
        table_id,
        streams,
        random.Random(3),
        until=lambda snapshot: snapshot.view.phase == view_pb2.PHASE_PASSING,
        choose=north_goes_blind,
    )
    assert now.view.phase == view_pb2.PHASE_PASSING
    seat, prompt = await turn_prompt(client, table_id, streams)
    assert list(prompt.legal_actions) == [], "not every pair of cards"
    assert prompt.card_pass.count == 2
    hand = server.store.cached(table_id).state.hands[seat]
    assert {protocol.card_from_proto(card) for card in prompt.card_pass.cards} == {
        card for card in range(54) if hand >> card & 1
    }
    chosen = list(prompt.card_pass.cards)[-2:]
    passed = await streams[seat].act(
        actions_pb2.Action(card_pass=actions_pb2.CardPass(cards=chosen)), prompt.sequence
    )
    assert passed.accepted, passed
    await close_streams(streams)


# ------------------------------------------------------------------------------ not actions


@pytest.mark.asyncio
async def test_a_second_start_and_an_empty_message_are_named_and_the_stream_goes_on(
    client: Client, server: SpadesServer
) -> None:
    table_id, _, streams = await client.seated()
    seat, prompt = await turn_prompt(client, table_id, streams)
    stream = streams[seat]
    version = await server.log.stream_version(table_id)
    await stream.call.write(play_pb2.PlayRequest(start=play_pb2.StartPlay()))
    again = (await stream.next_of("action_result")).action_result
    assert not again.accepted and again.code == Code.INVALID_ARGUMENT.value[0]
    assert "`start` opens the stream and is sent only once" in again.reason
    await stream.call.write(play_pb2.PlayRequest())
    empty = (await stream.next_of("action_result")).action_result
    assert not empty.accepted and empty.code == Code.INVALID_ARGUMENT.value[0]
    assert "neither `start` nor `action`" in empty.reason
    assert await server.log.stream_version(table_id) == version
    # The stream goes on: the seat's action is decided as usual.
    result = await stream.act(bid(3), prompt.sequence, action_id=uuid.uuid4().hex)
    assert result.accepted, result
    await close_streams(streams)
