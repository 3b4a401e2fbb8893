"""The analysis library: what a seat is judged from, a deliberately bad card, the totals, and
the refusals of records that cannot be analysed."""

from __future__ import annotations

from dataclasses import replace

import pytest

from spades.analysis import Summary, Unanalysable, analyse
from spades.analysis.decisions import PlayDecision, play_decisions
from spades.analysis.judge import judge_play
from spades.engine import (
    PLAY,
    Card,
    MatchState,
    PlayCard,
    Rules,
    act,
    automatic_choice,
    legal_actions,
    redact,
    seated_match,
)
from spades.engine import events as ev
from spades.records import build_record
from spades.solver import Objective, solve
from tests.support.random_matches import VARIANTS, play


@pytest.fixture(scope="module")
def decisions(match_events: list[ev.Event]) -> list[PlayDecision]:
    return list(play_decisions(build_record(match_events, table_id="t")))


def test_a_seat_is_judged_from_what_it_could_see(decisions: list[PlayDecision]) -> None:
    assert len(decisions) == 52
    for decision in decisions:
        own = decision.state.hands[decision.seat]
        assert decision.seat_state.hands[decision.seat] == own
        others = [s for s in range(4) if s != decision.seat]
        assert all(decision.seat_state.hands[other] == 0 for other in others)
        assert all(decision.state.hands[other] for other in others if decision.trick < 13)
        assert PLAY[decision.card] in decision.legal


def test_a_card_that_throws_a_trick_away_shows_the_loss() -> None:
    # A constructed ending: bids of 3 all round, the clock's cheapest cards until three tricks
    # are left; then the seat to play has a card that keeps a trick and one that gives it away.
    state, events = seated_match(Rules(), seed=bytes(32))
    for _ in range(44):  # four bids and ten tricks
        seat = state.seat_to_act()
        events.extend(act(state, seat, automatic_choice(state.rules, legal_actions(state, seat))))
    assert len(state.completed_tricks) == 10
    seat = state.seat_to_act()
    tricks = solve(state, Objective.TRICKS)
    points = solve(state, Objective.POINTS)
    worst = min(tricks, key=tricks.__getitem__)
    assert max(tricks.values()) - tricks[worst] >= 1  # the position has a trick to throw away
    decision = _decision(state, events, seat, worst)
    judged = judge_play(decision, worlds=4, seed=b"bad")
    assert judged.loss_tricks == max(tricks.values()) - tricks[worst] >= 1
    assert judged.loss_points == max(points.values()) - points[worst] > 0
    assert worst not in judged.best
    assert judged.worlds == 4
    assert judged.expected_loss_points is not None and judged.expected_loss_points >= 0
    kept = judge_play(replace(decision, card=judged.best[0]), worlds=4, seed=b"bad")
    assert (kept.loss_points, kept.loss_tricks) == (0, 0)


def test_totals_count_only_plays_that_lost_nothing_as_accurate(
    decisions: list[PlayDecision],
) -> None:
    late = [judge_play(d, worlds=2, seed=b"") for d in decisions if d.trick >= 11]
    summary = Summary.of(late)
    assert summary.plays == len(late)
    assert summary.perfect == sum(1 for play in late if play.loss_points == 0)
    assert summary.loss_points == sum(play.loss_points for play in late)
    assert all(play.loss_points > 0 for play in summary.costliest)
    assert Summary.of([]).accuracy == 1.0


def test_an_unfinished_match_is_not_analysed(match_events: list[ev.Event]) -> None:
    with pytest.raises(Unanalysable, match="not finished"):
        analyse(build_record(match_events[:60], table_id="live"), worlds=1)
    # Even with its seed in the record (a table's own record before the end).
    with pytest.raises(Unanalysable, match="live table"):
        analyse(build_record(match_events[:60], table_id="live", public=False), worlds=1)


def _decision(state: MatchState, events: list[ev.Event], seat: int, card: Card) -> PlayDecision:
    """The decision of ``seat`` playing ``card`` now, its view folded from what it saw."""
    seen = MatchState()
    for event in events:
        seen.evolve(redact(event, seat))
    return PlayDecision(
        hand=state.hand_number,
        trick=len(state.completed_tricks) + 1,
        seat=seat,
        card=card,
        state=state.clone(),
        seat_state=seen,
        legal=tuple(legal_actions(state, seat)),
        timed_out=False,
    )


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_variation_is_judged(variant: str) -> None:
    # The records' matches of random legal play: Blind Nil and its card pass, cutthroat,
    # jokers, counter-clockwise, timeouts, substitutes, a concession. Every card is read from
    # the replay with what its seat saw; the last two tricks of each hand are judged (cheap).
    rules, options = VARIANTS[variant]
    events = play(rules, **options)
    decisions = list(play_decisions(build_record(events, table_id=variant)))
    played = [e for e in events if isinstance(e, ev.CardPlayed)]
    assert [(d.seat, d.card) for d in decisions] == [(e.seat, e.card) for e in played]
    assert any(d.timed_out for d in decisions) == any(
        isinstance(e, ev.TurnTimedOut) and isinstance(e.automatic_action, PlayCard) for e in events
    )
    for decision in decisions:
        if decision.trick < rules.hand_size - 1:
            continue
        judged = judge_play(decision, worlds=2, seed=b"variants")
        assert judged.loss_points >= 0 and judged.loss_tricks >= 0
        assert set(judged.best) <= set(judged.values) and decision.card in judged.values
