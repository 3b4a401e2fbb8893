"""The search bot: every decision legal, the same decisions again for the same seed, within
its time, and registered under its name."""

from __future__ import annotations

import time
from collections.abc import Sequence

import pytest

from spades.bot import Bot, BotView, SeatTracker, run_local_match
from spades.bot.thinking import Thinking, turn_seconds
from spades.commands.bot import make_bot
from spades.engine import (
    BID,
    Card,
    Clock,
    Phase,
    Rules,
    apply,
    legal_actions,
    parse_cards,
    redact,
    seated_match,
)
from spades.engine import events as ev
from spades_bots.heuristic import HeuristicBot
from spades_bots.random_bot import RandomBot
from spades_bots.registry import bot_class
from spades_bots.search import SETTLED_WORLDS, Measurements, Playout, SearchBot, gone
from tests.support.deals import dealt_by_west, nil_to_set

RULE_SETS = [
    Rules(max_hands=1),
    Rules(players=3, jokers=True, max_hands=1),
    Rules(blind_nil=True, blind_nil_deficit=0, blind_nil_pass_cards=2, max_hands=1),
    Rules(two_of_clubs_leads=True, nil_allowed=False, max_hands=1),
]


class CountedThinking(Thinking):
    """A decision's time that keeps every answer its ``over()`` gave."""

    __slots__ = ("answers",)

    def __init__(self, cpu_seconds: float, wall_seconds: float) -> None:
        super().__init__(cpu_seconds, wall_seconds)
        self.answers: list[bool] = []

    def over(self) -> bool:
        answer = super().over()
        self.answers.append(answer)
        return answer


class Watched(SearchBot):
    """A search bot that keeps every card it chose, and checks each one is legal; and keeps
    each decision's time and the worlds it measured."""

    def __init__(self, seed: int, **options: float) -> None:
        super().__init__(seed=seed, thinking=self._think, **options)  # type: ignore[arg-type]
        self.choices: list[Card] = []
        self.decisions: list[CountedThinking] = []
        self.worlds: list[int] = []

    def _think(self, rules: Rules, wanted: float | None) -> Thinking:
        thinking = CountedThinking.for_turn(rules, wanted)
        assert isinstance(thinking, CountedThinking)
        self.decisions.append(thinking)
        return thinking

    def measure_bids(self, view: BotView, bids: Sequence[int]) -> Measurements:
        found = super().measure_bids(view, bids)
        self.worlds.append(len(found.weights))
        return found

    def measure(self, view: BotView, cards: Sequence[Card]) -> Measurements:
        found = super().measure(view, cards)
        self.worlds.append(len(found.weights))
        return found

    def play(self, view: BotView) -> Card:
        card = super().play(view)
        assert card in view.legal_cards
        self.choices.append(card)
        return card


def match_with(rules: Rules, seat_bots: list[Bot], seed: bytes = bytes(32)) -> list[ev.Event]:
    events: list[ev.Event] = []
    run_local_match(seat_bots, rules, seed=seed, events=events)
    return events


@pytest.mark.parametrize("rules", RULE_SETS, ids=["default", "cutthroat", "blind-nil", "2c"])
def test_search_decisions_are_legal_and_repeat_for_a_seed(rules: Rules) -> None:
    def seat_bots() -> list[Bot]:
        bots: list[Bot] = [Watched(seed=seat, think_ms=10_000, max_worlds=6) for seat in (0, 1)]
        return [*bots, HeuristicBot(), RandomBot(seed=4)][: rules.players]

    first, second = seat_bots(), seat_bots()
    events = match_with(rules, first)
    again = match_with(rules, second)
    assert events == again  # the same seeds play the same match
    assert all(isinstance(bot, Watched) and bot.choices for bot in first[:2])
    assert [bot.choices for bot in first[:2]] == [bot.choices for bot in second[:2]]  # type: ignore[attr-defined]


def test_another_seed_searches_other_worlds_and_the_same_seed_the_same() -> None:
    state, events = seated_match(Rules(), seed=bytes(32))
    while state.phase is not Phase.PLAYING:  # everyone bids 3
        state, more = apply(state, state.seat_to_act(), BID[3])
        events += more
    tracker = SeatTracker(state.seat_to_act())
    for event in events:
        tracker.fold(redact(event, tracker.seat))
    view = tracker.view(legal_actions(state, state.seat_to_act()))
    cards = view.legal_cards

    def outcomes(seed: int) -> list[list[float]]:
        found = SearchBot(seed=seed, think_ms=10_000, max_worlds=4).measure(view, cards)
        assert len(found.weights) == 4
        return [found.outcomes[card] for card in cards]

    assert outcomes(1) == outcomes(1)
    assert outcomes(1) != outcomes(2)


def test_search_stays_within_its_time_and_the_turn_clock() -> None:
    quick = Watched(seed=1, think_ms=30)
    clocked = Watched(seed=2, think_ms=10_000)
    rules = Rules(max_hands=1, clock=Clock(turn_millis=600, extension_millis=0))
    match_with(rules, [quick, HeuristicBot(), clocked, HeuristicBot()])
    assert quick.last_budget == 0.03
    assert clocked.last_budget == turn_seconds(rules) == 0.3  # the clock less the margin
    assert quick.last_worlds >= 1
    # Past its budget a decision only finishes the world in hand: it asks after each world
    # whether its time is over, and stops at the first yes.
    for bot in (quick, clocked):
        assert len(bot.decisions) == len(bot.worlds) > 0
        for thinking, worlds in zip(bot.decisions, bot.worlds, strict=True):
            assert len(thinking.answers) == worlds
            assert True not in thinking.answers[:-1]
    assert any(thinking.answers[-1] for thinking in quick.decisions)  # its 30 ms ran out
    assert {(t.cpu_seconds, t.wall_seconds) for t in quick.decisions} == {(0.03, 0.3)}
    assert {(t.cpu_seconds, t.wall_seconds) for t in clocked.decisions} == {(0.3, 0.3)}


def test_thinking_counts_cpu_time_and_stops_at_the_wall_clock_cap() -> None:
    # Waiting (another process on the core) spends no CPU time: the decision goes on.
    cpu, wall = [100.0], [500.0]
    clocks = {"cpu_clock": lambda: cpu[0], "wall_clock": lambda: wall[0]}
    waiting = Thinking(cpu_seconds=0.02, wall_seconds=10.0, **clocks)
    wall[0] += 0.06  # it waits: the wall clock moves, this thread's CPU time does not
    assert not waiting.over()
    cpu[0] += 0.03  # it works
    assert waiting.over()
    # However little CPU time it used, a decision ends at the wall-clock cap.
    capped = Thinking(cpu_seconds=10.0, wall_seconds=0.02, **clocks)
    assert not capped.over()
    wall[0] += 0.04
    assert capped.over()
    # Its own clocks are this thread's CPU time and the wall clock.
    working = Thinking(cpu_seconds=0.02, wall_seconds=10.0)
    spent = time.thread_time()
    while time.thread_time() - spent < 0.03:  # this thread's own work
        pass
    assert working.over()
    assert (working.cpu_clock, working.wall_clock) == (time.thread_time, time.perf_counter)
    turn = Thinking.for_turn(Rules(clock=Clock(turn_millis=600, extension_millis=0)), 10.0)
    assert (turn.cpu_seconds, turn.wall_seconds) == (0.3, 0.3)
    assert Thinking.for_turn(Rules(), 0.1).cpu_seconds == 0.1


def test_a_decision_stops_once_every_choice_scored_alike_in_enough_worlds() -> None:
    alike = Measurements([1, 2, 3])
    for _ in range(SETTLED_WORLDS - 1):
        alike.add(1.0, [5.0, 5.0, 5.0])
    assert not alike.settled  # too few worlds to say
    alike.add(0.5, [-2.0, -2.0, -2.0])
    assert alike.settled
    apart = Measurements([1, 2])
    apart.add(1.0, [5.0, 6.0])
    for _ in range(3 * SETTLED_WORLDS):
        apart.add(1.0, [5.0, 5.0])
    assert not apart.settled  # one world told them apart: keep looking


def test_the_thinking_time_is_chosen_by_name_or_flag() -> None:
    assert bot_class("search") is SearchBot
    assert bot_class("search")().think_ms == 100  # type: ignore[attr-defined]
    assert bot_class("search:250")(seed=1).think_ms == 250  # type: ignore[call-arg,attr-defined]
    assert isinstance(bot_class("search:250")(), SearchBot)
    bot = make_bot("search", think_ms=40)
    assert isinstance(bot, SearchBot) and bot.think_ms == 40
    with pytest.raises(ValueError):
        bot_class("search:0")


def test_cards_with_nothing_between_them_are_searched_once() -> None:
    playout = Playout(Rules())
    hand = parse_cards("9H JH KH 2C 3C AS")
    groups = playout.distinct(hand, played=parse_cards("TH 4C"))
    assert groups == {
        Card.parse("2C"): parse_cards("2C 3C"),
        Card.parse("9H"): parse_cards("9H JH"),  # the 10 is gone; the queen is out
        Card.parse("KH"): [Card.parse("KH")],
        Card.parse("AS"): [Card.parse("AS")],
    }


def test_a_card_on_the_table_keeps_the_cards_either_side_of_it_apart() -> None:
    # North bid Nil and wins West's 5♥ with the 10 so far; East holds every heart above it.
    # The 9 sets the Nil, the jack saves it: the 10 is on the table, not gone, so the two do
    # not play alike. East-West, bidding 12, need every trick left but one, and the heuristic
    # takes the trick with the jack; the search bot, measuring the 9 on its own, ducks.
    state = nil_to_set()
    view = BotView(state, 1)
    assert HeuristicBot().play(view) == Card.parse("JH")
    groups = Playout(Rules()).distinct(view.legal_cards, gone(view))
    assert groups[Card.parse("9H")] == [Card.parse("9H")]
    assert groups[Card.parse("JH")] == parse_cards("JH QH KH AH")
    bot = SearchBot(seed=1, think_ms=60_000, max_worlds=16)
    assert bot.play(BotView(state, 1)) == Card.parse("9H")


PLAYOUT_HANDS = {0: "AH AC 2D", 1: "2H 2C TD", 2: "3H 3C 3D 9D QD", 3: "4H 4C"}


def test_the_playout_sheds_its_highest_loser_once_the_contract_is_made() -> None:
    # North-South bid 1 and 1 and North has taken two tricks: South ducks East's 10 with its
    # highest card under it (a bag later is likelier from the 9 than from the 3).
    made = dealt_by_west(
        PLAYOUT_HANDS, [1, 4, 1, 4], "AH", "2H", "3H", "4H", "AC", "2C", "3C", "4C", "2D", "TD"
    )
    assert made.seat_to_act() == 2 and made.tricks_won[0] == 2
    assert Playout(Rules()).card(made, 2) == Card.parse("9D")


def test_the_playout_does_not_overtake_its_partner() -> None:
    # North's 10 is winning and North-South still need tricks: South, who could take the trick
    # with the ace, leaves it to its partner and plays its lowest diamond.
    led = dealt_by_west({0: "TD", 1: "2D", 2: "AD 3D"}, [4, 4, 4, 1], "TD", "2D")
    assert led.seat_to_act() == 2
    assert Playout(Rules()).card(led, 2) == Card.parse("3D")


def test_the_playout_stays_under_an_opponents_nil_card() -> None:
    # East bid Nil and is winning with the 10: South, whose side still needs tricks, stays
    # under it with the 9 rather than take the trick with the queen.
    nil = dealt_by_west(PLAYOUT_HANDS, [4, 0, 4, 4], "2D", "TD")
    assert nil.seat_to_act() == 2
    assert Playout(Rules()).card(nil, 2) == Card.parse("9D")
