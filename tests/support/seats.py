"""A seat's moves over the wire: the actions a test sends (a bid, a card, a concession), the
prompt of the seat to act, and whole turns played through seat streams until a match ends."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import grpc

from spades import protocol
from spades.engine import Rules, seated_match
from spades.v1 import actions_pb2, cards_pb2, events_pb2, play_pb2, view_pb2
from tests.support.clients import Client, SeatStream, current_view


def bid(tricks: int) -> actions_pb2.Action:
    """A bid of ``tricks`` (not Nil: ``tricks`` 0 is refused)."""
    return actions_pb2.Action(bid=actions_pb2.Bid(kind=actions_pb2.Bid.KIND_TRICKS, tricks=tricks))


def play(card: cards_pb2.Card) -> actions_pb2.Action:
    return actions_pb2.Action(play_card=card)


CONCEDE = actions_pb2.Action(concession=actions_pb2.Concession())


async def turn_prompt(
    client: Client, table_id: str, streams: dict[int, SeatStream]
) -> tuple[int, play_pb2.TurnPrompt]:
    """The seat to act and its prompt at the table's latest sequence."""
    now = await current_view(client, table_id)
    seat = protocol.seat_from_proto(now.view.turn)
    while True:
        prompt = (await streams[seat].next_of("prompt")).prompt
        if prompt.sequence == now.sequence:
            return seat, prompt


def choices_of(prompt: play_pb2.TurnPrompt) -> list[actions_pb2.Action]:
    """Every answer a prompt allows: its legal actions, or each pass of its card-pass choice."""
    if prompt.HasField("card_pass"):
        chosen = itertools.combinations(prompt.card_pass.cards, prompt.card_pass.count)
        return [actions_pb2.Action(card_pass=actions_pb2.CardPass(cards=cards)) for cards in chosen]
    return list(prompt.legal_actions)


async def play_until_over(stream: SeatStream, rng: random.Random) -> None:
    """Answer every prompt with a random legal action until the match ends."""
    while True:
        message = await stream.next()
        kind = message.WhichOneof("kind")
        if kind == "event" and message.event.WhichOneof("kind") == "seed_revealed":
            return
        if kind == "prompt":
            action = rng.choice(choices_of(message.prompt))
            result = await stream.act(action, message.prompt.sequence)
            assert result.accepted or result.code == grpc.StatusCode.ABORTED.value[0], result


#: Picks a seat's action: (seat, prompt, rng) -> action.
ActionChooser = Callable[[int, play_pb2.TurnPrompt, random.Random], actions_pb2.Action]


def assert_each_move_timed_out_once(kinds: Sequence[str | None]) -> None:
    """Every bid and card of a table nobody plays (``kinds``: its events' kinds) came from one
    timeout, none from two: 4 bids and 52 cards a hand, and more hands when the match was tied
    after its hand limit (it plays on to a clear leader)."""
    turns = [kind for kind in kinds if kind in ("turn_timed_out", "bid_made", "card_played")]
    assert len(turns) >= 2 * 56, len(turns)
    assert turns[0::2] == ["turn_timed_out"] * (len(turns) // 2), "a turn timed out twice"
    assert all(kind in ("bid_made", "card_played") for kind in turns[1::2])


def own_moves(events: Iterable[events_pb2.Event]) -> dict[int, list[int]]:
    """The sequences of the bids and cards each seat (by its protocol value) made itself, from
    a table's events in order: not the clock's move for it, which follows its TurnTimedOut."""
    moves: dict[int, list[int]] = {}
    timed_out = None
    for event in events:
        kind = event.WhichOneof("kind")
        if kind in ("bid_made", "card_played"):
            seat = event.bid_made.seat if kind == "bid_made" else event.card_played.seat
            if seat != timed_out:
                moves.setdefault(seat, []).append(event.sequence)
        timed_out = event.turn_timed_out.seat if kind == "turn_timed_out" else None
    return moves


def random_action(seat: int, prompt: play_pb2.TurnPrompt, rng: random.Random) -> actions_pb2.Action:
    return rng.choice(choices_of(prompt))


async def play_turns(
    client: Client,
    table_id: str,
    streams: dict[int, SeatStream],
    rng: random.Random,
    *,
    until: Any = None,
    choose: ActionChooser = random_action,
    max_actions: int = 2000,
) -> play_pb2.Snapshot:
    """Play the table turn by turn (whoever is to act, through its stream) until the match is
    over, or ``until(snapshot)`` holds, or the seat to act has no stream; returns the public
    view there. Every action must be accepted."""
    for _ in range(max_actions):
        now = await current_view(client, table_id)
        if now.view.phase == view_pb2.PHASE_ENDED or (until is not None and until(now)):
            return now
        seat = protocol.seat_from_proto(now.view.turn)
        stream = streams.get(seat)
        if stream is None:
            return now
        while True:
            prompt = (await stream.next_of("prompt")).prompt
            if prompt.sequence == now.sequence:
                break
            assert prompt.sequence < now.sequence, (prompt, now.sequence)
        result = await stream.act(choose(seat, prompt, rng), prompt.sequence)
        assert result.accepted, result
    raise AssertionError(f"the match did not end within {max_actions} actions")


def heart_follow_seed() -> tuple[bytes, int, cards_pb2.Card, cards_pb2.Card]:
    """A seed whose first leader holds a heart, and whose second player holds hearts and
    another suit: (seed, leader, the heart to lead, the second player's wrong card)."""
    for number in range(256):
        seed = bytes([number]) * 32
        state, _ = seated_match(Rules(), seed=seed)
        assert state.dealer is not None
        leader = state.next_seat(state.dealer)
        second = state.next_seat(leader)
        hearts = [card for card in state.hand_of(leader) if card.suit == 2]
        second_hand = state.hand_of(second)
        others = [card for card in second_hand if card.suit not in (2,)]
        if hearts and others and any(card.suit == 2 for card in second_hand):
            return (
                seed,
                leader,
                protocol.card_to_proto(hearts[0]),
                protocol.card_to_proto(others[0]),
            )
    raise AssertionError("no seed found")
