"""A seat's view folded from its redacted events knows how many cards every seat holds.

The other hands' cards are hidden from it, so the counts come from the engine (cards dealt,
moved by the Blind Nil pass, minus cards played), never from the cards it can see.
"""

from __future__ import annotations

import random

from spades import protocol
from spades.bot import SeatTracker
from spades.engine import BLIND, Phase, Rules, apply, legal_actions, redact, seated_match, view
from spades.engine import events as ev


def as_received(event: ev.Event, seat: int) -> ev.Event:
    """The event as the seat's stream delivers it: redacted, then through the wire format."""
    return protocol.event_from_proto(protocol.event_to_proto(redact(event, seat)))


def test_hand_sizes_from_redacted_events_match_the_real_hands() -> None:
    rules = Rules(blind_nil=True, blind_nil_deficit=0, blind_nil_pass_cards=2, max_hands=2)
    state, events = seated_match(rules, seed=bytes(range(32)))
    trackers = [SeatTracker(seat) for seat in range(4)]
    rng = random.Random(11)
    mid_pass_checked = False
    folded = 0
    while not state.is_over and state.hand_number <= 2:
        for event in events[folded:]:
            for tracker in trackers:
                tracker.fold(as_received(event, tracker.seat))
        folded = len(events)
        truth = tuple(len(state.hand_of(seat)) for seat in range(4))
        for tracker in trackers:
            seat_view = tracker.view()
            assert seat_view.hand_sizes() == truth, (tracker.seat, state.phase)
            assert view(tracker.state, tracker.seat).hand_sizes == truth
        if state.phase is Phase.PASSING and sorted(truth) != [13] * 4:
            mid_pass_checked = True  # (one partner already holds 15 cards, the other 11)
        seat = state.seat_to_act()
        legal = legal_actions(state, seat)
        action = BLIND if BLIND in legal and seat == 0 else rng.choice(legal)
        state, more = apply(state, seat, action)
        events += more
    assert mid_pass_checked
