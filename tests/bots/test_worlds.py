"""sample_world: every world it draws agrees with the seat's view, none knows more than the view,
and the draws are uniform among the deals that agree.

Every fact is recomputed here from the true match and its events, not read back from the
sampler: the seat's cards, the hand sizes, the suits a seat cannot hold, the cards it saw
passed, and the public history.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spades.bot import BotView, SeatTracker
from spades.bot.worlds import Holders, Line, sample_world
from spades.engine import (
    Action,
    MatchState,
    Phase,
    PlayCard,
    Rules,
    apply,
    legal_actions,
    redact,
    seated_match,
    view,
)
from spades.engine import events as ev
from tests.support.rules import PROPERTY_SETTINGS, is_trump, rule_sets, suit_for_following

IN_HAND = (Phase.BLIND_NIL_CHOICE, Phase.BIDDING, Phase.PASSING, Phase.PLAYING)
#: A random match: any rule set, any seed, random legal play (repeatable by Hypothesis; a test
#: draws the whole play with random_play before it checks anything).
RANDOM_MATCHES: dict[str, st.SearchStrategy[Any]] = {
    "rules": rule_sets(),
    "seed": st.binary(min_size=32, max_size=32),
    "play": st.randoms(use_true_random=False),
}


@dataclass
class Moment:
    """A point of a match: the true state, every event so far, and each seat's tracker."""

    state: MatchState
    events: list[ev.Event]
    trackers: list[SeatTracker]

    def view_of(self, seat: int) -> BotView:
        legal = legal_actions(self.state, seat) if seat == self.state.turn else []
        return self.trackers[seat].view(legal)


def random_play(rules: Rules, seed: bytes, rng: random.Random) -> list[Action]:
    """Every action of a match played with random legal actions, drawn from ``rng`` at once.

    A test draws its play from Hypothesis's random here, before it checks anything: drawn
    while the checks ran, an example cut short part-way (pytest-timeout on a loaded machine)
    stopped drawing where the same choices had drawn on before, and Hypothesis reported
    FlakyStrategyDefinition instead of the timeout."""
    state, _ = seated_match(rules, seed)
    actions = []
    while not state.is_over:
        seat = state.seat_to_act()
        action = rng.choice(legal_actions(state, seat))
        state, _ = apply(state, seat, action)
        actions.append(action)
    return actions


def moments(
    rules: Rules, seed: bytes, choose: Callable[[list[Action]], Action]
) -> Iterator[Moment]:
    """Each moment of a match whose every action is ``choose(legal actions)``, before it."""
    state, events = seated_match(rules, seed)
    trackers = [SeatTracker(seat) for seat in range(rules.players)]

    def deliver(new_events: list[ev.Event]) -> None:
        events.extend(new_events)
        for event in new_events:
            for seat, tracker in enumerate(trackers):
                tracker.fold(redact(event, seat))

    for tracker_seat, tracker in enumerate(trackers):
        for event in events:
            tracker.fold(redact(event, tracker_seat))
    while not state.is_over:
        yield Moment(state, events, trackers)
        seat = state.seat_to_act()
        state, new_events = apply(state, seat, choose(legal_actions(state, seat)))
        deliver(new_events)


def this_hand(events: list[ev.Event]) -> list[ev.Event]:
    start = max(index for index, event in enumerate(events) if isinstance(event, ev.HandStarted))
    return events[start:]


def cannot_hold(state: MatchState) -> dict[int, set[int]]:
    """The suits each seat has shown it cannot hold: it did not follow, or it led a trump
    before trumps were broken (allowed only with nothing else in hand)."""
    voids: dict[int, set[int]] = {seat: set() for seat in range(state.players_count)}
    broken = False
    tricks: list[tuple[int, list[int]]] = [
        (trick.plays[0].seat, list(trick.cards)) for trick in state.completed_tricks
    ]
    if state.trick:
        tricks.append((state.trick[0].seat, [play.card for play in state.trick]))
    for leader, played in tricks:
        led = suit_for_following(played[0])
        if is_trump(played[0]) and not broken and state.rules.spades_must_be_broken:
            voids[leader].update({0, 1, 2})
        seat = leader
        for number in played:
            if suit_for_following(number) != led:
                voids[seat].add(led)
            broken = broken or is_trump(number)
            seat = state.next_seat(seat)
    return voids


def cards(mask: int) -> set[int]:
    return {number for number in range(54) if mask >> number & 1}


def check_world(world: MatchState, moment: Moment, seat: int) -> None:
    real = moment.state
    # The public history, and the seat's own cards once it has looked.
    for field in ("phase", "hand_number", "dealer", "bids", "completed_tricks", "tricks_won"):
        assert getattr(world, field) == getattr(real, field), field
    assert (world.trick, world.scores, world.bags) == (real.trick, real.scores, real.bags)
    assert world.spades_broken == real.spades_broken and world.played == real.played
    if real.visible[seat]:
        assert world.hands[seat] == real.hands[seat]
    if (
        real.phase is not Phase.PLAYING
        or view(moment.trackers[seat].state, seat).leader is not None
    ):
        assert (world.leader, world.turn) == (real.leader, real.turn)
    else:  # the seat cannot know who holds the 2♣ that leads; the world says
        assert world.leader is not None and world.turn == world.leader and not world.trick
    # Every card once, the right number per seat, none against a shown void.
    voids = cannot_hold(real)
    held: set[int] = set()
    for other in range(real.players_count):
        hand = cards(world.hands[other])
        assert len(hand) == real.hands[other].bit_count(), other
        assert not hand & held and not hand & cards(real.played)
        assert hand <= cards(real.rules.deck_mask)
        assert not {suit_for_following(number) for number in hand} & voids[other], other
        held |= hand
    # Cards the seat saw change hands in the Blind Nil pass are where it saw them go.
    for event in this_hand(moment.events):
        if isinstance(event, ev.CardsPassed) and seat == event.from_seat:
            for number in event.cards or ():
                if real.hands[event.to_seat] >> number & 1:
                    assert world.hands[event.to_seat] >> number & 1
    # The seat's choices are the same in the world, and the world plays on to the hand's end.
    if seat == real.turn and real.visible[seat]:
        assert legal_actions(world, seat) == legal_actions(real, seat)
    line = Line(world)
    rng = random.Random(0)
    while line.state.hand_number == real.hand_number and not line.state.is_over:
        line.push(rng.choice(legal_actions(line.state, line.state.seat_to_act())))
    assert line.depth > 0
    for _ in range(line.depth):
        line.pop()
    assert line.state is world


@pytest.mark.slow  # about 14 s
@PROPERTY_SETTINGS
@given(**RANDOM_MATCHES, every=st.integers(3, 9))
def test_sampled_worlds_never_contradict_the_view(
    rules: Rules, seed: bytes, play: random.Random, every: int
) -> None:
    sampler = random.Random(1)
    actions = iter(random_play(rules, seed, play))
    for index, moment in enumerate(moments(rules, seed, lambda _: next(actions))):
        if index % every or moment.state.phase not in IN_HAND:
            continue
        for seat in range(rules.players):
            seat_view = moment.view_of(seat)
            holders = Holders(seat_view)
            for _ in range(2):
                check_world(sample_world(seat_view, sampler, holders), moment, seat)


def swapped(hands: list[int], one: int, two: int, first: int, second: int) -> list[int]:
    out = hands[:]
    out[one] = out[one] & ~(1 << first) | 1 << second
    out[two] = out[two] & ~(1 << second) | 1 << first
    return out


@PROPERTY_SETTINGS
@given(**RANDOM_MATCHES, stop=st.integers(0, 45))
def test_sampled_worlds_know_nothing_the_view_does_not(
    rules: Rules, seed: bytes, play: random.Random, stop: int
) -> None:
    """Two true deals that differ only where the seat cannot see (two hidden cards of one suit
    swapped between two other seats) give the seat the same view, so the same worlds; and
    since two worlds agree with that view, the sampled worlds vary."""
    seat = 0
    first_hand = next(moments(rules, seed, random.Random(0).choice)).state.hands
    others = [s for s in range(1, rules.players)]
    pair = next(
        (
            (one, two, a, b)
            for one, two in itertools.combinations(others, 2)
            for a in sorted(cards(first_hand[one]))
            for b in sorted(cards(first_hand[two]))
            if suit_for_following(a) == suit_for_following(b) and 0 not in (a, b)
        ),
        None,
    )
    if pair is None:
        return
    one, two, a, b = pair
    deals = [list(map(cards, first_hand)), list(map(cards, swapped(first_hand, one, two, a, b)))]
    states = [seated_match(rules, seed, preset_deals=[deal])[0] for deal in deals]
    assert states[0].hands != states[1].hands
    trackers = [SeatTracker(seat), SeatTracker(seat)]
    for index, deal in enumerate(deals):
        for event in seated_match(rules, seed, preset_deals=[deal])[1]:
            trackers[index].fold(redact(event, seat))
    for _ in range(stop):
        if states[0].phase is not Phase.BIDDING and states[0].phase is not Phase.PLAYING:
            break
        action = play.choice(legal_actions(states[0], states[0].seat_to_act()))
        if states[0].hand_number > 1 or action not in legal_actions(
            states[1], states[1].seat_to_act()
        ):
            break
        if isinstance(action, PlayCard) and action.card in (a, b):
            break
        for index in range(2):
            states[index], new_events = apply(states[index], states[index].seat_to_act(), action)
            for event in new_events:
                trackers[index].fold(redact(event, seat))
    if states[0].hand_number > 1 or states[0].phase not in IN_HAND:
        return
    views = [tracker.view() for tracker in trackers]
    assert view(trackers[0].state, seat) == view(trackers[1].state, seat)
    worlds = [[sample_world(v, random.Random(k)).hands for k in range(12)] for v in views]
    assert worlds[0] == worlds[1]
    assert len({tuple(hands) for hands in worlds[0]}) > 1


def late_moment(rules: Rules, seed: bytes, tricks_left: int) -> Moment:
    for moment in moments(rules, seed, random.Random(7).choice):
        state = moment.state
        done = len(state.completed_tricks)
        late = state.phase is Phase.PLAYING and rules.hand_size - done == tricks_left
        if late and not state.trick and state.turn == 0:
            return moment
    raise AssertionError("no such moment")


@pytest.mark.parametrize("seed", [bytes([n]) * 32 for n in range(4)])
def test_sampled_worlds_are_uniform_among_the_deals_that_agree(seed: bytes) -> None:
    """Late in a hand, every deal of the hidden cards that agrees with North's view is listed
    by brute force; sampling draws each about equally often, and nothing else."""
    moment = late_moment(Rules(), seed, tricks_left=3)
    real = moment.state
    north = moment.view_of(0)
    hidden = sorted(set().union(*(cards(real.hands[s]) for s in (1, 2, 3))))
    voids = cannot_hold(real)
    sizes = [real.hands[s].bit_count() for s in (1, 2, 3)]
    agreeing = set()
    for east in itertools.combinations(hidden, sizes[0]):
        rest = [n for n in hidden if n not in east]
        for south in itertools.combinations(rest, sizes[1]):
            west = tuple(n for n in rest if n not in south)
            deal = (east, south, west)
            if all(
                not {suit_for_following(n) for n in hand} & voids[seat]
                for seat, hand in zip((1, 2, 3), deal, strict=True)
            ):
                agreeing.add(tuple(sum(1 << n for n in hand) for hand in deal))
    holders = Holders(north)
    assert len(agreeing) > 1 and holders.count() == len(agreeing)
    draws = min(100 * len(agreeing), 40_000)
    sampler = random.Random(3)
    counts = Counter(tuple(sample_world(north, sampler, holders).hands[1:]) for _ in range(draws))
    assert set(counts) == agreeing
    # Chi-square against uniform: far below what a bias of even 20% would give.
    expected = draws / len(agreeing)
    statistic = sum((count - expected) ** 2 / expected for count in counts.values())
    assert statistic < len(agreeing) + 6 * (2 * len(agreeing)) ** 0.5


def test_a_tracked_view_samples_worlds() -> None:
    state, events = seated_match(Rules(), seed=bytes(32))
    seat = state.seat_to_act()
    tracker = SeatTracker(seat)
    for event in events:
        tracker.fold(redact(event, seat))
    view = tracker.view(legal_actions(state, seat))
    first, second = sample_world(view, random.Random(1)), sample_world(view, random.Random(2))
    # Its own hand as dealt; the others filled in, differently for another draw.
    assert first.hands[seat] == second.hands[seat] == state.hands[seat]
    assert all(first.hands[other] for other in range(4))
    assert first.hands != second.hands


def test_a_cutthroat_leader_without_the_two_of_clubs_gets_worlds_where_it_is_undealt() -> None:
    """Cutthroat leaves one card undealt: when it is the 2♣, the dealer's left leads. That seat
    cannot see where the 2♣ is, but its prompt says it leads: every world must agree."""
    rules = Rules(players=3, two_of_clubs_leads=True)
    two_of_clubs = 0
    for number in range(5000):
        state, events = seated_match(rules, seed=number.to_bytes(32, "big"))
        if not any(hand >> two_of_clubs & 1 for hand in state.hands):
            break
    else:
        pytest.fail("no deal in 5000 left the 2♣ undealt")
    while state.phase is not Phase.PLAYING:
        seat = state.seat_to_act()
        state, more = apply(state, seat, legal_actions(state, seat)[-1])
        events += more
    leader = state.seat_to_act()
    tracker = SeatTracker(leader)
    for event in events:
        tracker.fold(redact(event, leader))
    seat_view = tracker.view(legal_actions(state, leader))
    holders = Holders(seat_view)
    rng = random.Random(3)
    for _ in range(20):
        world = sample_world(seat_view, rng, holders)
        assert world.turn == leader
        assert not any(hand >> two_of_clubs & 1 for hand in world.hands)
        assert legal_actions(world, leader) == legal_actions(state, leader)
