"""A ``MatchView`` read back into the engine's view is the view that was sent: for every seat
and the public, after every event of random matches, folded from the viewer's own redacted
events (as a client does) and from the whole log (as the server does)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spades import protocol
from spades.engine import (
    CONCEDE,
    MatchState,
    Phase,
    Rules,
    SeatView,
    apply,
    legal_actions,
    redact,
    seated_match,
    view,
)
from spades.engine import events as ev
from spades.v1 import cards_pb2, view_pb2
from tests.support.rules import PROPERTY_SETTINGS, rule_sets


def round_trip(seat_view: SeatView) -> SeatView:
    message = protocol.view_to_proto(seat_view)
    # Through bytes, as it travels: nothing may depend on the Python message object.
    return protocol.view_from_proto(view_pb2.MatchView.FromString(message.SerializeToString()))


def random_match(rules: Rules, rng: random.Random, concede: bool) -> list[ev.Event]:
    state, events = seated_match(rules, seed=rng.randbytes(32))
    while state.phase is not Phase.ENDED:
        seat = state.seat_to_act()
        legal = legal_actions(state, seat)
        action = CONCEDE if concede and rng.random() < 0.01 and CONCEDE in legal else None
        state, more = apply(state, seat, action or rng.choice(legal))
        events += more
    return events


def check_every_viewer_after_every_event(events: list[ev.Event], players: int) -> int:
    viewers: list[int | None] = [None, *range(players)]
    whole = MatchState()
    folded = {viewer: MatchState() for viewer in viewers}
    checked = 0
    for event in events:
        whole.evolve(event)
        for viewer in viewers:
            folded[viewer].evolve(redact(event, viewer))
            for seat_view in (view(folded[viewer], viewer), view(whole, viewer)):
                assert round_trip(seat_view) == seat_view, (event, viewer)
                checked += 1
    return checked


@pytest.mark.slow  # about 20 s
@settings(PROPERTY_SETTINGS, max_examples=25)
@given(rules=rule_sets(), seed=st.integers(0, 2**32), concede=st.booleans())
def test_every_view_of_a_random_match_reads_back_as_sent(
    rules: Rules, seed: int, concede: bool
) -> None:
    events = random_match(rules, random.Random(seed), concede)
    assert check_every_viewer_after_every_event(events, rules.players) > 0


def test_the_hand_of_a_seat_that_played_all_its_cards_is_empty_not_hidden() -> None:
    rules = Rules(max_hands=2)
    events = random_match(rules, random.Random(5), concede=False)
    state = MatchState()
    seen_empty = False
    for event in events:
        state.evolve(event)
        if isinstance(event, ev.TrickWon) and event.trick_number == rules.hand_size:
            seat_view = round_trip(view(state, 2))
            assert seat_view.hand == () and seat_view.hand_sizes == (0, 0, 0, 0)
            seen_empty = True
        if isinstance(event, ev.HandStarted):
            seat_view = round_trip(view(state, 2))
            assert seat_view.hand is None  # dealt in the next event: not looked at yet
    assert seen_empty


def test_a_substituted_seat_and_the_end_read_back() -> None:
    events = random_match(Rules(max_hands=1), random.Random(9), concede=False)
    events.insert(3, ev.SeatSubstituted(1, ev.SubstitutionReason.DISCONNECTED))
    state = MatchState.from_events(events)
    for viewer in (None, 0, 1):
        seat_view = view(state, viewer)
        assert seat_view.substituted == (1,) and seat_view.end is not None
        assert seat_view.seed is not None
        assert round_trip(seat_view) == seat_view


@pytest.mark.parametrize(
    ("field", "change", "complaint"),
    [
        ("viewer", lambda m: setattr(m, "viewer", 9), "view.viewer: unknown seat 9"),
        ("phase", lambda m: setattr(m, "phase", 42), "view.phase: unknown phase 42"),
        (
            "hand",
            lambda m: m.hand.add(suit=cards_pb2.SUIT_SPADES, rank=1),
            "view.hand[0]: rank 1 is not a card of spades (2..14)",
        ),
        (
            "players",
            lambda m: m.players.add(seat=cards_pb2.SEAT_WEST, name="x"),
            "view.players[0].seat: no seat 3 at this table",
        ),
    ],
)
def test_a_malformed_view_is_refused_naming_its_field(
    field: str, change: object, complaint: str
) -> None:
    state, _ = seated_match(Rules(players=3), seed=bytes(32))
    message = protocol.view_to_proto(view(state, None))
    del message.players[:]
    assert callable(change)
    change(message)
    with pytest.raises(protocol.ProtocolError) as raised:
        protocol.view_from_proto(message)
    assert str(raised.value) == complaint, field
