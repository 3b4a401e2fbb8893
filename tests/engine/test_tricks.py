"""Tricks store who played each card: the engine, its views and the protocol read it back."""

from __future__ import annotations

import random

from spades import protocol
from spades.engine import (
    Direction,
    MatchState,
    Phase,
    Play,
    Rules,
    apply,
    legal_actions,
    redact,
    seated_match,
    view,
)
from spades.engine import events as ev


def _played_tricks(events: list[ev.Event]) -> list[list[Play]]:
    """The plays of each trick, straight from the CardPlayed events."""
    tricks: list[list[Play]] = [[]]
    for event in events:
        if isinstance(event, ev.CardPlayed):
            tricks[-1].append(Play(event.seat, event.card))
        elif isinstance(event, ev.TrickWon):
            tricks.append([])
    return tricks


def test_plays_record_the_seat_of_every_card_in_every_direction() -> None:
    for rules in (
        Rules(max_hands=1),
        Rules(max_hands=1, direction=Direction.COUNTER_CLOCKWISE),
        Rules(max_hands=1, players=3, two_of_clubs_leads=True),
    ):
        state, events = seated_match(rules, seed=bytes(range(32)))
        rng = random.Random(5)
        while state.hand_number == 1 and not state.is_over:
            seat = state.seat_to_act()
            state, more = apply(state, seat, rng.choice(legal_actions(state, seat)))
            events += more
            expected = _played_tricks(events)
            done = expected[: len(state.completed_tricks)]
            if state.hand_number == 1:
                assert [list(trick.plays) for trick in state.completed_tricks] == done
                assert state.trick == expected[len(state.completed_tricks)]
                assert state.current_trick() == state.trick
        winners = [event.winner for event in events if isinstance(event, ev.TrickWon)]
        assert winners[: len(state.completed_tricks)] == [
            trick.winner for trick in state.completed_tricks
        ]


def test_a_redacted_fold_and_the_protocol_view_keep_the_plays() -> None:
    state, events = seated_match(Rules(max_hands=1), seed=bytes(32))
    rng = random.Random(3)
    while len(state.completed_tricks) < 3 or len(state.trick) < 2:
        seat = state.seat_to_act()
        state, more = apply(state, seat, rng.choice(legal_actions(state, seat)))
        events += more
    folded = MatchState.from_events(redact(event, 1) for event in events)
    assert folded.completed_tricks == state.completed_tricks
    assert folded.trick == state.trick
    message = protocol.view_to_proto(view(folded, 1))
    sent = [
        [Play(protocol.seat_from_proto(p.seat), protocol.card_from_proto(p.card)) for p in t.plays]
        for t in message.completed_tricks
    ]
    assert sent == [list(trick.plays) for trick in state.completed_tricks]
    current = [
        Play(protocol.seat_from_proto(p.seat), protocol.card_from_proto(p.card))
        for p in message.current_trick
    ]
    assert current == state.trick and state.phase is Phase.PLAYING
