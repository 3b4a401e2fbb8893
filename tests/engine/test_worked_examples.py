"""Every worked example of RULES.md section 4, scored directly and played through the engine.

Each example is checked twice: ``score_side`` on the example's bids and tricks, and a whole
scripted hand (or several, when the example needs earlier scores or bags) played with
``spades.engine.apply`` whose HandScored and MatchEnded events must give the example's numbers.
Seats: North 0, East 1, South 2, West 3; NS is side 0 and EW side 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from spades.engine import Bid, Rules, score_side
from spades.engine.events import EndReason, HandStarted, SideResult

from .scenario import hand_scores, match_end, play_hands, scripted_hand

NIL = Bid.NIL
BLIND_NIL = Bid.BLIND_NIL
NS = (0, 2)
DEFAULT_RULES = Rules()
COUNT_NIL_TRICKS = Rules(nil_tricks_count_for_partner=True)


@dataclass(frozen=True)
class Example:
    """One North-South result: the bids and tricks of North and South, and what they score."""

    name: str
    north: Bid
    south: Bid
    north_tricks: int
    south_tricks: int
    hand_points: int
    bags: int
    contract_made: bool | None = None
    rules: Rules = DEFAULT_RULES
    score_before: int = 0
    bags_before: int = 0
    total_bags: int | None = None


# Single-hand examples, NS's numbers (the team totals split between the partners).
EXAMPLES = [
    Example("1 made: bid 4+3, take 7", Bid(4), Bid(3), 4, 3, 70, 0, True),
    Example("1 set: bid 4+3, take 6", Bid(4), Bid(3), 3, 3, -70, 0, False),
    Example("1 overtricks: bid 4+3, take 9", Bid(4), Bid(3), 5, 4, 72, 2, True),
    Example("2 all 13: bid 9, no Boston bonus", Bid(5), Bid(4), 7, 6, 94, 4, True),
    Example(
        "3 carrying 8 bags: bid 5, take 8",
        Bid(3),
        Bid(2),
        4,
        4,
        -47,
        3,
        True,
        bags_before=8,
        total_bags=1,
    ),
    Example("4 made Nil: Nil + 4, take 0 + 5", NIL, Bid(4), 0, 5, 141, 1, True),
    Example("5 failed Nil: Nil + 4, take 2 + 3", NIL, Bid(4), 2, 3, -138, 2, False),
    Example("11 Nil tricks do not help: 5, Nil takes 2", NIL, Bid(5), 2, 4, -148, 2, False),
    Example(
        "11 with nil tricks count for partner",
        NIL,
        Bid(5),
        2,
        4,
        -49,
        1,
        True,
        rules=COUNT_NIL_TRICKS,
    ),
    Example("12 contract 7, 9 tricks", Bid(4), Bid(3), 6, 3, 72, 2, True),
    Example("12 contract 5, 4 tricks", Bid(3), Bid(2), 2, 2, -50, 0, False),
]


def _direct(example: Example) -> SideResult:
    return score_side(
        example.rules,
        NS,
        {0: example.north, 2: example.south},
        {0: example.north_tricks, 2: example.south_tricks},
        example.score_before,
        example.bags_before,
    )


def _check(example: Example, result: SideResult) -> None:
    assert result.hand_points == example.hand_points
    assert result.bags == example.bags
    if example.contract_made is not None:
        assert result.contract_made is example.contract_made
    if example.total_bags is not None:
        assert result.total_bags == example.total_bags


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda example: example.name)
def test_score_side(example: Example) -> None:
    _check(example, _direct(example))


@pytest.mark.parametrize(
    "example",
    [e for e in EXAMPLES if not e.bags_before],
    ids=lambda example: example.name,
)
def test_through_the_engine(example: Example) -> None:
    ew_tricks = 13 - example.north_tricks - example.south_tricks
    east_tricks = ew_tricks // 2
    hand = scripted_hand(
        [example.north, Bid(2), example.south, Bid(2)],
        [example.north_tricks, east_tricks, example.south_tricks, ew_tricks - east_tricks],
    )
    _, events = play_hands([hand], example.rules)
    (scored,) = hand_scores(events)
    _check(example, scored.sides[0])
    assert scored.sides[0].total_score == example.hand_points


def test_example_2_no_boston_bonus_through_the_engine() -> None:
    # North takes every trick, with South's bid still counting: 94, 4 bags.
    hand = scripted_hand([Bid(5), Bid(2), Bid(4), Bid(2)], [13, 0, 0, 0])
    _, events = play_hands([hand])
    (scored,) = hand_scores(events)
    assert (scored.sides[0].hand_points, scored.sides[0].bags) == (94, 4)
    assert (scored.sides[1].hand_points, scored.sides[1].bags) == (-40, 0)


def test_example_3_carrying_8_bags_through_the_engine() -> None:
    first = scripted_hand([Bid(1), Bid(2), Bid(1), Bid(1)], [5, 2, 5, 1])  # 28, 8 bags
    second = scripted_hand([Bid(3), Bid(3), Bid(2), Bid(2)], [4, 3, 4, 2])
    _, events = play_hands([first, second])
    before, after = hand_scores(events)
    assert (before.sides[0].total_score, before.sides[0].total_bags) == (28, 8)
    ns = after.sides[0]
    assert ns.contract_points == 53  # 50 for the bid, 3 for the overtricks
    assert (ns.bags, ns.bag_penalty_points, ns.hand_points) == (3, -100, -47)
    assert (ns.total_bags, ns.total_score) == (1, 28 - 47)


def test_example_6_blind_nil_through_the_engine() -> None:
    rules = Rules(blind_nil=True)
    hands = [
        scripted_hand([Bid(7), NIL, Bid(6), NIL], [7, 0, 6, 0]),  # NS 130, EW 200
        scripted_hand([Bid(3), Bid(4), Bid(2), Bid(4)], [3, 4, 2, 4]),  # NS 180, EW 280
        scripted_hand([NIL, Bid(2), Bid(10), Bid(2)], [0, 2, 9, 2]),  # NS 180, EW 320
        scripted_hand([BLIND_NIL, Bid(3), Bid(5), Bid(4)], [0, 3, 6, 4]),
    ]
    _, events = play_hands(hands, rules)
    scores = hand_scores(events)
    assert [s.sides[0].total_score for s in scores[:3]] == [130, 180, 180]
    assert [s.sides[1].total_score for s in scores[:3]] == [200, 280, 320]
    started = [e for e in events if isinstance(e, HandStarted)]
    assert started[0].blind_nil_eligible == ()
    assert set(started[3].blind_nil_eligible) == {0, 2}  # trailing by 140 >= 100
    ns = scores[3].sides[0]
    (nil,) = ns.nil_results
    assert (nil.seat, nil.blind, nil.made, nil.points) == (0, True, True, 200)
    assert (ns.contract_points, ns.bags, ns.hand_points) == (51, 1, 251)
    assert ns.total_score == 180 + 251


def test_example_6_blind_nil_score_side() -> None:
    result = score_side(Rules(blind_nil=True), NS, {0: BLIND_NIL, 2: Bid(5)}, {0: 0, 2: 6}, 180, 0)
    assert (result.hand_points, result.bags, result.total_score) == (251, 1, 431)


def test_example_7_both_past_the_target_the_higher_wins_score_side() -> None:
    north_south = score_side(Rules(), NS, {0: Bid(3), 2: Bid(3)}, {0: 4, 2: 4}, 460, 0)
    east_west = score_side(Rules(), (1, 3), {1: Bid(2), 3: Bid(2)}, {1: 3, 3: 2}, 470, 0)
    assert (north_south.hand_points, north_south.total_score) == (62, 522)
    assert (east_west.hand_points, east_west.total_score) == (41, 511)


def test_example_7_both_past_the_target_the_higher_wins_through_the_engine() -> None:
    hands = [
        scripted_hand([NIL, Bid(7), NIL, Bid(6)], [0, 7, 0, 6]),  # NS 200, EW 130
        scripted_hand([Bid(7), NIL, Bid(6), NIL], [7, 0, 6, 0]),  # NS 330, EW 330
        scripted_hand([NIL, Bid(5), Bid(3), Bid(5)], [0, 5, 3, 5]),  # NS 460, EW 430
        scripted_hand([NIL, Bid(2), Bid(10), Bid(2)], [0, 2, 9, 2]),  # NS 460, EW 470
        scripted_hand([Bid(3), Bid(2), Bid(3), Bid(2)], [4, 3, 4, 2]),  # +62, +41
    ]
    state, events = play_hands(hands)
    scores = hand_scores(events)
    assert [s.sides[0].total_score for s in scores] == [200, 330, 460, 460, 522]
    assert [s.sides[1].total_score for s in scores] == [130, 330, 430, 470, 511]
    assert (scores[-1].sides[0].hand_points, scores[-1].sides[1].hand_points) == (62, 41)
    end = match_end(events)
    assert end is not None
    assert end.reason is EndReason.TARGET_SCORE
    assert end.winners == (0, 2)
    assert end.final_scores == (522, 511)
    assert state.is_over


# Examples 8-10: the three hands of 002, played in sequence.
HAND_8 = ([Bid(3), Bid(4), NIL, Bid(2)], [5, 3, 0, 5])
HAND_9 = ([Bid(5), Bid(3), NIL, Bid(3)], [6, 2, 2, 3])
HAND_10 = ([Bid(2), Bid(1), Bid(3), Bid(1)], [6, 1, 5, 1])
#: (NS hand points, EW hand points, NS running bags, EW running bags, NS total, EW total)
EXPECTED_8_TO_10 = [
    (132, 62, 2, 2, 132, 62),
    (-47, -60, 5, 2, 85, 2),
    (-44, 20, 1, 2, 41, 22),
]


def test_examples_8_to_10_score_side() -> None:
    totals = [0, 0]
    bags = [0, 0]
    for (bids, tricks), expected in zip((HAND_8, HAND_9, HAND_10), EXPECTED_8_TO_10, strict=True):
        results = [
            score_side(
                Rules(),
                side,
                dict(enumerate(bids)),
                dict(enumerate(tricks)),
                totals[index],
                bags[index],
            )
            for index, side in enumerate((NS, (1, 3)))
        ]
        totals = [r.total_score for r in results]
        bags = [r.total_bags for r in results]
        got = (results[0].hand_points, results[1].hand_points, *bags, *totals)
        assert got == expected


def test_examples_8_to_10_through_the_engine() -> None:
    hands = [scripted_hand(bids, tricks) for bids, tricks in (HAND_8, HAND_9, HAND_10)]
    state, events = play_hands(hands)
    got = [
        (
            s.sides[0].hand_points,
            s.sides[1].hand_points,
            s.sides[0].total_bags,
            s.sides[1].total_bags,
            s.sides[0].total_score,
            s.sides[1].total_score,
        )
        for s in hand_scores(events)
    ]
    assert got == EXPECTED_8_TO_10
    assert state.scores == [41, 22]
    assert state.bags == [1, 2]
    # Hand 10: 50 + 6 for the contract, then the 100-point bag penalty.
    ns = hand_scores(events)[2].sides[0]
    assert (ns.contract_points, ns.bags, ns.bag_penalty_points) == (56, 6, -100)


def test_example_9_details() -> None:
    ns = score_side(Rules(), NS, {0: Bid(5), 2: NIL}, {0: 6, 2: 2}, 132, 2)
    assert (ns.contract, ns.contract_tricks, ns.contract_made) == (5, 6, True)
    assert ns.contract_points == 51
    (nil,) = ns.nil_results
    assert (nil.made, nil.points, nil.tricks) == (False, -100, 2)
    assert (ns.bags, ns.total_bags) == (3, 5)


def test_example_11_both_ways_through_one_deal() -> None:
    hand = scripted_hand([NIL, Bid(3), Bid(5), Bid(3)], [2, 4, 4, 3])
    _, default_events = play_hands([hand])
    _, counting_events = play_hands([hand], COUNT_NIL_TRICKS)
    default_ns = hand_scores(default_events)[0].sides[0]
    counting_ns = hand_scores(counting_events)[0].sides[0]
    assert (default_ns.contract_tricks, default_ns.contract_points) == (4, -50)
    assert (default_ns.nil_results[0].points, default_ns.bags, default_ns.hand_points) == (
        -100,
        2,
        -148,
    )
    assert (counting_ns.contract_tricks, counting_ns.contract_points) == (6, 51)
    assert (counting_ns.bags, counting_ns.hand_points) == (1, -49)
