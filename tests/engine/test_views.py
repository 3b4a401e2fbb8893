"""A seat rebuilding the match from its own redacted events sees the tricks as they were."""

from __future__ import annotations

import random

from spades.engine import MatchState, Phase, Rules, apply, legal_actions, redact, seated_match


def test_a_redacted_fold_knows_who_led_each_trick_under_two_of_clubs_leads() -> None:
    state, events = seated_match(Rules(two_of_clubs_leads=True, max_hands=1), seed=bytes(32))
    rng = random.Random(2)
    while state.phase is not Phase.ENDED:
        state, more = apply(
            state, state.seat_to_act(), rng.choice(legal_actions(state, state.seat_to_act()))
        )
        events += more
        for seat in range(4):
            folded = MatchState.from_events(redact(event, seat) for event in events)
            assert folded.completed_tricks == state.completed_tricks
            if state.trick:
                assert folded.current_trick() == state.current_trick()


def test_a_seat_that_cannot_see_the_two_of_clubs_does_not_guess_who_leads() -> None:
    state, events = seated_match(Rules(two_of_clubs_leads=True, max_hands=1), seed=bytes(32))
    while state.phase is not Phase.PLAYING:
        state, more = apply(
            state, state.seat_to_act(), legal_actions(state, state.seat_to_act())[1]
        )
        events += more
    holder = state.seat_to_act()
    for seat in range(4):
        folded = MatchState.from_events(redact(event, seat) for event in events)
        assert folded.turn == (holder if seat == holder else None)
