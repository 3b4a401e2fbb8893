"""Absent players: runs of timeouts, substitutes, reclaiming a seat, and marked hands."""

from __future__ import annotations

import pytest

from spades.engine import IllegalAction, MatchState, Rules, acting, new_match, seated_match, view
from spades.engine import events as ev

TIMEOUTS = ev.SubstitutionReason.TIMEOUTS
DISCONNECTED = ev.SubstitutionReason.DISCONNECTED


def started(rules: Rules | None = None) -> MatchState:
    state, _ = seated_match(rules or Rules(max_hands=3), seed=bytes(32))
    return state


def act(state: MatchState) -> MatchState:
    """The seat on turn takes its first legal action itself."""
    new, _ = acting.apply(
        state, state.seat_to_act(), acting.legal_actions(state, state.seat_to_act())[0]
    )
    return new


def time_out(state: MatchState) -> MatchState:
    new, _ = acting.time_out(state)
    return new


def until_turn_of(state: MatchState, seat: int) -> MatchState:
    while state.turn != seat:
        state = act(state)
    return state


def test_a_run_of_timeouts_counts_per_seat_and_the_automatic_action_does_not_end_it() -> None:
    state = started()
    seat = state.seat_to_act()
    state = time_out(state)
    assert state.timeout_streaks[seat] == 1
    state = until_turn_of(state, seat)  # the others act themselves
    assert state.timeout_streaks[seat] == 1
    state = time_out(state)
    assert state.timeout_streaks[seat] == 2
    assert sum(state.timeout_streaks) == 2
    assert state.timeouts == 2


def test_the_seats_own_action_ends_its_run() -> None:
    state = started()
    seat = state.seat_to_act()
    state = until_turn_of(time_out(state), seat)
    state = act(state)
    assert state.timeout_streaks[seat] == 0


def test_another_seats_timeout_does_not_end_a_run() -> None:
    state = started()
    first = state.seat_to_act()
    state = time_out(state)
    second = state.seat_to_act()
    state = time_out(state)
    assert state.timeout_streaks[first] == state.timeout_streaks[second] == 1


def test_a_substitute_takes_the_seat_and_its_run_starts_again() -> None:
    state = started()
    seat = state.seat_to_act()
    state = time_out(until_turn_of(time_out(state), seat))
    new, events = acting.substitute(state, seat, TIMEOUTS)
    assert events == [ev.SeatSubstituted(seat, TIMEOUTS)]
    assert new.substitutions[seat] is TIMEOUTS and state.substitutions[seat] is None
    assert new.timeout_streaks[seat] == 0
    assert new.turn == state.turn  # nothing else changes: the substitute plays the same turn
    assert view(new, None).substituted == (seat,)
    assert view(new, (seat + 1) % 4).substituted == (seat,)


def test_the_player_takes_the_seat_back() -> None:
    state = started()
    state, _ = acting.substitute(state, 2, DISCONNECTED)
    state, events = acting.reclaim(state, 2)
    assert events == [ev.SeatReclaimed(2)]
    assert state.substitutions[2] is None and view(state, 2).substituted == ()
    with pytest.raises(IllegalAction, match="not played by a substitute"):
        acting.reclaim(state, 2)


def test_a_substituted_seat_may_get_a_new_substitute() -> None:
    state = started()
    state, _ = acting.substitute(state, 1, DISCONNECTED)
    state, events = acting.substitute(state, 1, TIMEOUTS)
    assert events == [ev.SeatSubstituted(1, TIMEOUTS)] and state.substitutions[1] is TIMEOUTS


def test_no_substitute_before_the_match_or_after_it() -> None:
    waiting, _ = new_match(Rules(), bytes(32))
    with pytest.raises(IllegalAction, match="not started"):
        acting.substitute(waiting, 0, TIMEOUTS)
    state = started(Rules(max_hands=1))
    while not state.is_over:
        state = act(state)
    with pytest.raises(IllegalAction, match="over"):
        acting.substitute(state, 0, TIMEOUTS)
    with pytest.raises(IllegalAction, match="no seat 7"):
        acting.substitute(started(), 7, TIMEOUTS)


def scored_hands(events: list[ev.Event]) -> list[tuple[int, ...]]:
    return [event.automatic_play for event in events if isinstance(event, ev.HandScored)]


def test_hands_with_automatic_or_substitute_play_are_marked() -> None:
    state, events = seated_match(Rules(max_hands=4), seed=bytes(32))

    def step(produced: list[ev.Event]) -> None:
        events.extend(produced)

    # Hand 1: East times out once; every other turn is played by its seat.
    while state.hand_number == 1:
        if state.turn == 1 and not any(isinstance(e, ev.TurnTimedOut) for e in events):
            state, produced = acting.time_out(state)
        else:
            state, produced = acting.apply(
                state, state.seat_to_act(), acting.legal_actions(state, state.seat_to_act())[0]
            )
        step(produced)
    # Hand 2: South gets a substitute mid-hand, who plays on into hand 3.
    state = act(state)
    state, produced = acting.substitute(state, 2, DISCONNECTED)
    step(produced)
    while state.hand_number == 2:
        state, produced = acting.apply(
            state, state.seat_to_act(), acting.legal_actions(state, state.seat_to_act())[0]
        )
        step(produced)
    # Hand 3: South's player takes the seat back mid-hand. Hand 4: nobody automatic.
    state = act(state)
    state, produced = acting.reclaim(state, 2)
    step(produced)
    while not state.is_over:
        state, produced = acting.apply(
            state, state.seat_to_act(), acting.legal_actions(state, state.seat_to_act())[0]
        )
        step(produced)
    assert scored_hands(events) == [(1,), (2,), (2,), ()]
    # The state folded from the events agrees, and so does every seat's view.
    assert MatchState.from_events(events).hand_results == state.hand_results
    assert [r.automatic_play for r in view(state, 0).hand_results] == [(1,), (2,), (2,), ()]


def test_a_match_played_by_the_clock_marks_every_hand_with_every_seat() -> None:
    state, events = seated_match(Rules(max_hands=2), seed=bytes(32))
    while not state.is_over:
        state, produced = acting.time_out(state)
        events.extend(produced)
    hands = scored_hands(events)
    assert len(hands) >= 2 and set(hands) == {(0, 1, 2, 3)}


def test_folding_the_events_gives_the_same_runs_and_substitutes() -> None:
    state, events = seated_match(Rules(max_hands=2), seed=bytes(32))
    for _ in range(9):
        state, produced = acting.time_out(state)
        events.extend(produced)
    state, produced = acting.substitute(state, state.seat_to_act(), TIMEOUTS)
    events.extend(produced)
    folded = MatchState.from_events(events)
    assert folded.timeout_streaks == state.timeout_streaks
    assert folded.substitutions == state.substitutions
    assert folded.automatic_play == state.automatic_play
    clone = state.clone()
    assert clone.timeout_streaks == state.timeout_streaks
    assert clone.substitutions == state.substitutions
