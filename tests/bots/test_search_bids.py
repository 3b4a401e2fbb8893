"""The search bot's bids by simulation: each candidate bid is scored by playing the sampled
worlds out, so a bid's value is what it would score, bags and sets included."""

from __future__ import annotations

from spades.bot import BotView, SeatTracker
from spades.engine import (
    BID,
    MatchState,
    Phase,
    Rules,
    apply,
    legal_actions,
    parse_cards,
    redact,
    seated_match,
)
from spades.engine.shuffle import first_dealer
from spades_bots.heuristic import HeuristicBot
from spades_bots.search import (
    MIN_WORLDS,
    NIL_MARGIN,
    RAISE_MARGIN,
    Measurements,
    SearchBot,
    bid_candidates,
    choose_bid,
    nil_worth_trying,
)

NORTH, EAST, SOUTH, WEST = range(4)
ALL_SPADES = "2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS AS"


def north_bids_last(north: str, bids: dict[int, int]) -> BotView:
    """North deals (so bids last) holding ``north``; the others bid ``bids``. North's view."""
    mine: list[int] = list(parse_cards(north))
    rest = [number for number in range(52) if number not in mine]
    deal = [mine, rest[:13], rest[13:26], rest[26:]]
    seed = next(bytes([b]) * 32 for b in range(256) if first_dealer(bytes([b]) * 32, 4) == NORTH)
    state: MatchState
    state, events = seated_match(Rules(), seed, preset_deals=[deal])
    while state.seat_to_act() != NORTH:
        seat = state.seat_to_act()
        state, more = apply(state, seat, BID[bids[seat]])
        events += more
    assert state.phase is Phase.BIDDING
    tracker = SeatTracker(NORTH)
    for event in events:
        tracker.fold(redact(event, NORTH))
    return tracker.view(legal_actions(state, NORTH))


def test_each_bid_scores_what_the_played_out_hand_would() -> None:
    # North holds every spade, so takes all 13 tricks in every world; South's Nil is made in
    # every world, and East-West are set in every world, whatever North bids. Each bid short
    # of 13 then costs its 10 points and a bag (10 points: a tenth of the 100-point penalty).
    view = north_bids_last(ALL_SPADES, {EAST: 3, SOUTH: 0, WEST: 3})
    bot = SearchBot(seed=1, think_ms=10_000, max_worlds=4)
    found = bot.measure_bids(view, [11, 12, 13])
    assert len(found.weights) == 4 and bot.last_worlds == 4
    assert round(found.mean(13) - found.mean(12), 6) == 19
    assert round(found.mean(12) - found.mean(11), 6) == 19
    assert all(outcome == found.outcomes[13][0] for outcome in found.outcomes[13])


def test_the_simulation_overrules_a_heuristic_bid_it_measures_worse() -> None:
    # The heuristic trims its count of 13 because the table has bid 6 (tricks are fought over)
    # and bids 9; every world shows North taking all 13, so the simulation bids as high as it
    # looks (two above the heuristic), for fewer bags.
    view = north_bids_last(ALL_SPADES, {EAST: 3, SOUTH: 0, WEST: 3})
    assert HeuristicBot().bid(view).answer == 9
    assert SearchBot(seed=3, think_ms=10_000, max_worlds=8).bid(view) == 11


def test_bids_are_simulated_near_the_heuristic_and_nil_stands() -> None:
    legal = list(range(14))
    assert bid_candidates(4, legal) == [2, 3, 4, 5, 6]
    assert bid_candidates(1, legal) == [1, 2, 3]
    assert bid_candidates(0, legal) == [0]  # the heuristic's Nil is not second-guessed
    assert bid_candidates(12, [*range(10), 12]) == [12]


def test_a_simulated_bid_repeats_for_a_seed() -> None:
    view = north_bids_last("AH KH 5H 2D 3D KD 4C 7C QC 3S 8S QS AS", {EAST: 4, SOUTH: 3, WEST: 3})
    bids = [SearchBot(seed=7, think_ms=10_000, max_worlds=6).bid(view) for _ in range(2)]
    assert bids[0] == bids[1] and bids[0] in view.legal_bids


LOW_CARDS = "2C 3C 4C 2D 3D 4D 2H 3H 4H 5H 2S 3S 4S"


def test_a_nil_the_heuristic_passes_up_is_bid_when_the_simulation_makes_it() -> None:
    # With a partner who bid only 2 the heuristic will not bid Nil (nobody to cover) and
    # bids 1; a hand of the lowest cards takes no trick in any world, so the Nil's 100
    # points beat the 1 by far more than NIL_MARGIN.
    view = north_bids_last(LOW_CARDS, {EAST: 4, SOUTH: 2, WEST: 4})
    assert HeuristicBot().bid(view).answer == 1
    assert nil_worth_trying(view)
    assert SearchBot(seed=2, think_ms=10_000, max_worlds=8).bid(view) == 0


def test_nil_is_tried_only_for_a_weak_hand_whose_partner_has_not_bid_nil() -> None:
    assert not nil_worth_trying(north_bids_last(LOW_CARDS, {EAST: 4, SOUTH: 0, WEST: 4}))
    assert not nil_worth_trying(north_bids_last(ALL_SPADES, {EAST: 3, SOUTH: 3, WEST: 3}))
    assert bid_candidates(1, list(range(14)), try_nil=True) == [0, 1, 2, 3]
    assert bid_candidates(0, list(range(14)), try_nil=True) == [0]


def measured(outcomes: dict[int, list[float]]) -> Measurements:
    found = Measurements(list(outcomes))
    for world in range(len(next(iter(outcomes.values())))):
        found.add(1.0, [values[world] for values in outcomes.values()])
    return found


def test_a_raise_needs_a_large_edge_a_lower_bid_a_small_one() -> None:
    worlds = MIN_WORLDS * 2
    steady = [10.0] * worlds
    # A raise measured 10 points better in every world is the playouts' optimism: it stands
    # only past RAISE_MARGIN.
    assert choose_bid(measured({3: steady, 4: [20.0] * worlds}), prior=3) == 3
    assert choose_bid(measured({3: steady, 4: [10.0 + RAISE_MARGIN + 1] * worlds}), prior=3) == 4
    # A lower bid better by 2 points on average, each world 8 off it (24 worlds: a standard
    # error of 1.7, so 2 points is more than one and less than two): taken.
    lower = [12.0 + (8.0 if world % 2 else -8.0) for world in range(24)]
    assert choose_bid(measured({2: lower, 3: [10.0] * 24}), prior=3) == 2
    assert not measured({2: lower, 3: [10.0] * 24}).clearly_better(2, 3, 0.0)  # not by two
    # A Nil must beat the bid chosen by NIL_MARGIN.
    assert choose_bid(measured({0: [25.0] * worlds, 3: steady}), prior=3) == 3
    assert choose_bid(measured({0: [10.0 + NIL_MARGIN + 1] * worlds, 3: steady}), prior=3) == 0
