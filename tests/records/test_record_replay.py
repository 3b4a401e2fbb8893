"""replay: every recorded match re-runs through the engine to the same events."""

from __future__ import annotations

import pytest

from spades.engine import apply, close, legal_actions
from spades.engine import events as ev
from spades.records import (
    NotReplayable,
    ReplayError,
    build_record,
    record_from_bytes,
    record_from_json,
    record_to_bytes,
    record_to_json,
    replay,
)


def test_every_match_replays_after_json_and_binary(match: list[ev.Event]) -> None:
    record = build_record(match)
    for stored in (
        record_from_json(record_to_json(record)),
        record_from_bytes(record_to_bytes(record)),
    ):
        state = replay(stored)
        assert state.is_over
        assert state.end == match[-2]
        last_score = [event for event in match if isinstance(event, ev.HandScored)][-1]
        assert state.scores == [side.total_score for side in last_score.sides]


def test_the_private_record_of_an_unfinished_match_replays(unfinished: list[ev.Event]) -> None:
    state = replay(build_record(unfinished, public=False))
    assert not state.is_over


def test_the_public_record_of_an_unfinished_match_cannot_be_replayed(
    unfinished: list[ev.Event],
) -> None:
    with pytest.raises(NotReplayable, match=r"no seed .* cannot be replayed"):
        replay(build_record(unfinished))


def test_a_public_record_of_a_finished_match_replays_from_the_revealed_seed(
    matches: dict[str, list[ev.Event]],
) -> None:
    # Hidden cards in the record must agree with what the engine deals from the seed.
    record = build_record(matches["blind nil with card pass"], public=True)
    assert not any(event.cards_dealt.cards for event in record.events)
    with pytest.raises(NotReplayable, match="passed cards are hidden"):
        replay(record)
    replay(build_record(matches["default"], public=True))


def test_a_record_that_stops_inside_an_action_is_refused(
    matches: dict[str, list[ev.Event]],
) -> None:
    events = matches["default"]
    trick_won = next(i for i, event in enumerate(events) if isinstance(event, ev.TrickWon))
    record = build_record(events[:trick_won], public=False)
    with pytest.raises(ReplayError) as caught:
        replay(record)
    assert caught.value.index == trick_won
    assert "the record ends, but the engine goes on with TrickWon" in str(caught.value)


def test_a_match_the_operator_closed_replays() -> None:
    from spades.engine import Rules, seated_match
    from spades.records import build_record, replay

    state, events = seated_match(Rules(), seed=bytes(32))
    state, more = apply(state, state.seat_to_act(), legal_actions(state, state.seat_to_act())[2])
    closed, ended = close(state)
    replayed = replay(build_record(events + more + ended))
    assert replayed.end == closed.end
