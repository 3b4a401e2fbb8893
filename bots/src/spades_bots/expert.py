"""The expert bot: determinized search whose playouts are solved double dummy (GIB's method).

At each card to play, the bot draws complete deals that agree with its view
(:func:`spades.bot.worlds.sample_world`), weighs each by how likely the bids *and the plays*
made so far were under its own model of the other seats (:func:`world_weight`), and values
every legal card in every world with the double-dummy solver (:func:`spades.solver.solve`,
the points objective: my side's hand points less the others', contracts, Nil, bags and the bag
penalty as the engine scores them, each bag charged at its share of the penalty:
:func:`bags_charged`). A world is solved from the card to play when the solver
can do so within the decision's share (:data:`SOLVE_SECONDS`, measured); earlier in the hand
each card is played, the hand is continued by the search bot's greedy policy
(:class:`~spades_bots.search.Playout`) down to the largest ending the budget allows (the
*horizon*), and that ending is solved. The card of best weighted mean is played; the
heuristic's card stands unless another measures better (by ``errors`` standard errors of the
difference when the rest of the hand was solved exactly, by the search bot's test when a
greedy playout came first; the same worlds serve every card).

Bids are the search bot's: each candidate bid (within two of the heuristic's count, and Nil
for a weak hand) is bid out in every world, the later seats bidding their count of tricks, the
hand played to its end by the greedy policy and scored by the engine; the bid is chosen by the
search bot's rule (:func:`choose_bid`). Solving the bids' endings cost more than it told: the
solver builds a context for each set of bids, and every candidate in every world is a new one.

In a hand that may end the match (:func:`may_end_match`) the cards are solved with the match's
stakes (:class:`~spades.solver.MatchStakes`): each end of the hand is valued by the standing it
leaves each side and by the match won or lost, as the search bot values its playouts; there the
match, not the hand's points, is what counts. The bids of such a hand are the search bot's.

Time: ``think_ms`` of CPU time per decision, as the search bot (100 ms by default), checked
after every world; the horizon is chosen so that one world costs at most a
``WORLDS_WANTED``-th of the budget by the measured solve times, so a decision overruns its budget by
at most one world. Every decision comes with a sealed note saying what it computed.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Final

from spades.bot import BotView, Noted
from spades.bot.thinking import Thinking
from spades.bot.worlds import Holders, sample_world
from spades.engine import (
    PLAY,
    Card,
    MatchState,
    Rules,
    act,
    card_power,
    effective_suit,
)
from spades.solver import MatchStakes, Objective, Position, solve
from spades_bots.heuristic import Powers
from spades_bots.search import (
    MATCH_POINTS,
    Measurements,
    Playout,
    SearchBot,
    bid_candidates,
    bid_likelihood,
    choose_bid,
    gone,
    nil_worth_trying,
)

#: CPU seconds one world costs when the solver values every card of a position with this many
#: tricks left (index): the median over the expert's own decisions at 25 ms with the whole rest
#: of the hand solved (sampling and weighting the world included; the positions of one decision
#: share the solver's memory), default rules, on the shared 2-core development machine; from 10
#: tricks left, extrapolated. Where a bot starts: :class:`SolveCosts` learns its own, but only
#: at the depths it solves, so a value set too high is never corrected (the first table, 3 to
#: 10 times too high, kept the whole rest of the hand unsolved until 4 tricks were left).
SOLVE_SECONDS: Final = (
    0.0,
    0.0002,
    0.0003,
    0.0003,
    0.0003,
    0.0003,
    0.0005,
    0.0026,
    0.004,
    0.012,
    0.04,
    0.12,
    0.4,
    1.5,
)
#: CPU seconds of the greedy policy for one trick (four plays), for the horizon's budget.
PLAYOUT_TRICK_SECONDS: Final = 0.00003
#: How fast the learnt cost follows a new measurement (an exponential moving mean).
LEARNING: Final = 0.2
#: A world may cost at most this fraction of the decision's budget (about ``1/WORLDS_WANTED``).
WORLDS_WANTED: Final = 12
#: The likelihood of a play the model would not make (see :func:`play_likelihood`).
UNLIKELY_PLAY: Final = 0.35
#: A hand may end the match when a side is within this many points of the target (or of the
#: loss threshold): about the most a side gains in a hand (a Nil made beside a contract of 5).
MATCH_REACH: Final = 150


def may_end_match(view: BotView) -> bool:
    """Whether the hand of ``view`` may end the match: the last hand the rules allow, or a side
    within :data:`MATCH_REACH` points of the target or of the loss threshold. In such a hand the
    match's outcome is what counts (a side at 480 that makes any contract wins, whatever the
    margin), so the expert solves it with the match's stakes (:func:`match_stakes`)."""
    rules = view.rules
    if rules.max_hands is not None and view.hand_number >= rules.max_hands:
        return True
    if max(view.scores) + MATCH_REACH >= rules.target_score:
        return True
    threshold = rules.loss_threshold
    return threshold is not None and min(view.scores) - MATCH_REACH <= threshold


def match_stakes(view: BotView) -> MatchStakes:
    """The stakes of ``view``'s hand for the solver: the scores before it, its number, and a
    match won or lost worth the search bot's :data:`~spades_bots.search.MATCH_POINTS`."""
    return MatchStakes(tuple(view.scores), view.hand_number, round(MATCH_POINTS))


def bags_charged(state: MatchState) -> Position:
    """The solver's position of ``state`` with every bag charged at its share of the bag
    penalty, as the search bot values a hand (:func:`~spades_bots.search.side_values`): the
    rules' bag limit made 1 and its penalty the share (10 points at the default 100 per 10),
    the bags carried in made 0. The hand's points then count a bag at 11 points, not 1, and
    the penalty's drop when it falls is already paid: a bot that valued bags at a point each
    takes every trick that might set the others, and pays the penalty a few hands later."""
    position = Position.of(state)
    rules = position.rules
    share = round(rules.bag_penalty / rules.bag_limit)
    return replace(
        position,
        rules=replace(rules, bag_limit=1, bag_penalty=share),
        bags=tuple(0 for _ in position.bags),
    )


class SolveCosts:
    """What one solve costs, by tricks left: :data:`SOLVE_SECONDS` to start with, then a
    moving mean of this bot's own solves (the solver's speed depends on the machine, the rules
    and the bids: a hand with a Nil takes longer to solve for points). A bot made with
    ``learn=False`` keeps the table, so its choices do not depend on timing (tests)."""

    def __init__(self, learn: bool = True) -> None:
        self.learn = learn
        self.seconds = list(SOLVE_SECONDS)

    def solve(self, state: MatchState, stakes: MatchStakes | None = None) -> dict[Card, int]:
        """The solver's values of ``state`` (points, bags charged: :func:`bags_charged`; with
        ``stakes``, the hand as a step of the match, which charges the bags as well), its CPU
        time learnt."""
        position = bags_charged(state) if stakes is None else Position.of(state)
        if not self.learn:
            return solve(position, Objective.POINTS, stakes)
        started = time.thread_time()
        values = solve(position, Objective.POINTS, stakes)
        spent = time.thread_time() - started
        left = min(state.rules.hand_size - len(state.completed_tricks), 13)
        self.seconds[left] += LEARNING * (spent - self.seconds[left])
        return values

    def horizon(self, tricks_left: int, choices: int, budget: float) -> int:
        """The largest ending (in tricks) the solver may take in one world: the whole rest of
        the hand when one solve (valuing every card at once) fits the world's share of
        ``budget``, else the ending of ``h`` tricks such that a greedy playout to it and one
        solve per choice fit; at least 1 (the last trick is always solved)."""
        share = budget / WORLDS_WANTED
        seconds = self.seconds
        if seconds[min(tricks_left, 13)] <= share:
            return tricks_left
        for horizon in range(min(tricks_left, 13) - 1, 0, -1):
            playout = PLAYOUT_TRICK_SECONDS * (tricks_left - horizon)
            if choices * (seconds[horizon] + playout) <= share:
                return horizon
        return 1


class ExpertBot(SearchBot):
    """Plays the card and bids the number that measure best over sampled worlds, each solved
    double dummy, the worlds weighted by how well they explain the bids and plays."""

    name = "expert"  # thinking in a worker thread, 100 ms by default: the search bot's

    def __init__(
        self,
        seed: int | None = None,
        think_ms: float | None = None,
        max_worlds: int | None = None,
        errors: float = 1.0,
        learn: bool = True,
        plan_ms: float | None = None,
    ) -> None:
        super().__init__(seed=seed, think_ms=think_ms, max_worlds=max_worlds, margin=0.0)
        #: How many standard errors a card must measure better by to overrule the heuristic.
        self.errors = errors
        #: What a solve costs (learnt from this bot's own solves unless ``learn`` is False).
        self.costs = SolveCosts(learn)
        #: The budget the horizon is planned for (``think_ms`` unless given: tests that stop
        #: at ``max_worlds`` plan for a real budget and think as long as those worlds take).
        self.plan_ms = plan_ms
        #: The horizon of the last decision (tricks solved double dummy), for notes and tests,
        #: and whether that was the whole rest of the hand.
        self.last_horizon = 0
        self.last_whole = False
        #: Whether the last decision was valued by the match's outcome (:func:`may_end_match`).
        self.last_match = False

    # ------------------------------------------------------------------ bidding

    def bid(self, view: BotView) -> Noted[int]:  # type: ignore[override]
        prior, _ = self.heuristic.reasoned_bid(view)
        candidates = bid_candidates(prior, view.legal_bids, nil_worth_trying(view))
        if len(candidates) == 1:
            return Noted(prior, f"bid {_bid_name(prior)}: the heuristic's count, nothing to try")
        # The search's measure: every candidate bid out and played to the end of the hand by
        # the greedy policy, scored by the engine. Not solved: the solver builds a context for
        # each set of bids (the hand's value table and its memory, 1 to 7 ms), and every
        # candidate in every world (the later seats bid that world's counts) is a new set, so
        # solved bids saw one world in 25 ms and never overruled the heuristic.
        self.last_match = may_end_match(view)
        self.last_horizon = 0
        self.last_whole = False
        found = self.measure_bids(view, candidates)
        choice = choose_bid(found, prior)
        return Noted(choice, self._note(f"bid {_bid_name(choice)}", found, prior, _bid_name))

    # ------------------------------------------------------------------ play

    def play(self, view: BotView) -> Noted[Card]:  # type: ignore[override]
        legal = sorted(view.legal_cards)
        if len(legal) == 1:
            return Noted(legal[0], f"{legal[0]}: my only legal card")
        prior = self.heuristic.play(view)
        choices = self._playout(view.rules).distinct(legal, gone(view))
        if len(choices) == 1:
            return Noted(prior, f"{prior}: every legal card plays alike")
        prior_choice = next(choice for choice, same in choices.items() if prior in same)
        self.last_match = may_end_match(view)
        found = self.measure(view, list(choices))
        best = max(choices, key=lambda card: (found.mean(card), card == prior_choice))
        if self.last_whole:
            # Exact in every world: the mean decides, by ``errors``.
            clear = found.clearly_better(best, prior_choice, 0.0, self.errors)
        else:  # the greedy part errs: the search bot's test (a point, two errors)
            clear = found.clearly_better(best, prior_choice, 1.0, 2.0)
        card = best if clear else prior
        return Noted(card, self._note(str(card), found, prior_choice, _card_name))

    def measure(self, view: BotView, cards: Sequence[Card]) -> Measurements:
        """Each card's double-dummy value in every world sampled within the time (with the
        match's stakes when the hand may end the match: :func:`may_end_match`)."""
        thinking = self._thinking(view)
        rng = random.Random(f"{self.seed}:{view.hand_number}:{len(view.played_cards)}:{view.seat}")
        playout = self._playout(view.rules)
        tricks_left = view.rules.hand_size - len(view.tricks)
        horizon = self.costs.horizon(tricks_left, len(cards), self._planned(thinking))
        self.last_horizon = horizon
        self.last_whole = horizon >= tricks_left
        stakes = match_stakes(view) if may_end_match(view) else None

        def outcomes(world: MatchState) -> list[float]:
            if horizon >= tricks_left:
                solved = self.costs.solve(world, stakes)
                return [float(solved[card]) for card in cards]
            values = []
            for card in cards:
                state = world.clone()
                act(state, view.seat, PLAY[card])
                values.append(solved_value(state, view.seat, horizon, playout, self.costs, stakes))
            return values

        return self._worlds(view, thinking, rng, cards, outcomes)

    def _worlds(
        self,
        view: BotView,
        thinking: Thinking,
        rng: random.Random,
        choices: Sequence[int],
        outcomes: Callable[[MatchState], list[float]],
    ) -> Measurements:
        """Each choice's outcomes in every world sampled until the time is spent (the clock
        looked at after each world), each world weighted by :func:`world_weight`."""
        holders = Holders(view)
        powers = Powers(view.rules)
        found = Measurements(choices)
        while self.max_worlds is None or len(found.weights) < self.max_worlds:
            world = sample_world(view, rng, holders)
            found.add(world_weight(world, view, powers), outcomes(world))
            if thinking.over() or found.settled:
                break
        self.last_worlds = len(found.weights)
        return found

    def _planned(self, thinking: Thinking) -> float:
        """The CPU seconds the decision's horizon is planned for."""
        return thinking.cpu_seconds if self.plan_ms is None else self.plan_ms / 1000

    def _note(self, head: str, found: Measurements, prior: int, name: Callable[[int], str]) -> str:
        """What a decision computed: the worlds, the horizon, each choice's mean value (hand
        points for my side less the others', double dummy) and the heuristic's choice."""
        worlds = len(found.weights)
        if not self.last_horizon:
            how = "played out greedily, scored by the engine"
        elif self.last_whole:
            how = "solved double dummy from here"
        else:
            how = f"played greedily to the last {self.last_horizon} tricks, solved from there"
        if self.last_match:
            how = f"the match may end this hand: {how}, the match's outcome counted"
        values = ", ".join(
            f"{name(choice)} {found.mean(choice):+.1f}"
            for choice in sorted(found.cards, key=found.mean, reverse=True)
        )
        effective = _effective_worlds(found.weights)
        return (
            f"{head}: {worlds} worlds (weight of {effective:.1f}), {how}; mean points "
            f"for my side: {values}; the heuristic's choice {name(prior)}"
        )


def _bid_name(bid: int) -> str:
    return "Nil" if bid == 0 else str(bid)


def _card_name(card: int) -> str:
    return str(Card(card))


def _effective_worlds(weights: Sequence[float]) -> float:
    """The worlds the weights amount to (Kish's effective sample size)."""
    squares = sum(weight * weight for weight in weights)
    return sum(weights) ** 2 / squares if squares else 0.0


# ---------------------------------------------------------------------- one world


def solved_value(
    state: MatchState,
    seat: int,
    horizon: int,
    playout: Playout,
    costs: SolveCosts,
    stakes: MatchStakes | None = None,
) -> float:
    """``seat``'s side's double-dummy value of ``state`` (changed in place): the greedy policy
    plays until at most ``horizon`` tricks are left and a seat of my side is to act (in
    cutthroat: me), then the solver values that position (hand points, my side's less the
    others', or with ``stakes`` the match's; the best card of the seat to act)."""
    rules = state.rules
    seating = rules.seating
    side = seating.side_of(seat)
    hand_size = rules.hand_size
    while True:
        turn = state.seat_to_act()
        left = hand_size - len(state.completed_tricks)
        if left <= horizon and seating.side_of(turn) == side:
            return float(max(costs.solve(state, stakes).values()))
        act(state, turn, PLAY[playout.card(state, turn)])


# ---------------------------------------------------------------------- inference


def world_weight(world: MatchState, view: BotView, powers: Powers) -> float:
    """How likely the bids and the plays so far were in ``world`` under the bot's model of the
    other seats: the search bot's bell curve of each bid around the heuristic's count of the
    hand the world dealt (:func:`bid_likelihood`), times :func:`play_likelihood`."""
    return bid_likelihood(world, view, powers) * play_likelihood(world, view)


def play_likelihood(world: MatchState, view: BotView) -> float:
    """How likely the other seats' plays this hand were, given the hands ``world`` dealt them,
    under two rules of the heuristic's play (each broken play counts ``UNLIKELY_PLAY``):

    * a seat last to a trick, whose side still needed tricks and whose partner was not
      winning, takes the trick when it can: a last seat that let it go likely could not;
    * a clean Nil bidder following suit under the winning card plays its highest card that
      still loses: it likely held none between the card it played and the winning one.
    """
    rules = view.rules
    seating = rules.seating
    players = rules.players
    plays = [list(trick.plays) for trick in view.tricks]
    if view.current_trick:
        plays.append(list(view.current_trick))
    # Each seat's hand before each trick: the world's hand and what it played from then on.
    held = list(world.hands)
    before: list[list[int]] = [[] for _ in plays]
    for index in range(len(plays) - 1, -1, -1):
        for seat, card in plays[index]:
            held[seat] |= 1 << card
        before[index] = list(held)
    won = [0] * players
    weight = 1.0
    for index, trick in enumerate(plays):
        led = effective_suit(trick[0][1])
        best_seat, best_power = trick[0][0], card_power(rules, trick[0][1], led)
        for place, (seat, card) in enumerate(trick):
            power = card_power(rules, card, led)
            if seat != view.seat and place:
                hand = before[index][seat]
                if place == players - 1 and best_seat != seating.partner(seat):
                    weight *= _last_seat(rules, seat, hand, led, best_power, power, won, view)
                weight *= _nil_duck(rules, seat, hand, card, led, best_power, won, view)
            if power > best_power:
                best_seat, best_power = seat, power
        if len(trick) == players:
            won[best_seat] += 1
    return weight


def _legal(hand: int, led: int) -> list[int]:
    following = [card for card in range(54) if hand >> card & 1 and effective_suit(card) == led]
    return following or [card for card in range(54) if hand >> card & 1]


def _last_seat(
    rules: Rules,
    seat: int,
    hand: int,
    led: int,
    best: int,
    played: int,
    won: Sequence[int],
    view: BotView,
) -> float:
    if played > best:
        return 1.0
    bid = view.bids[seat]
    if bid is None or bid.tricks == 0:
        return 1.0
    side = rules.seating.sides[rules.seating.side_of(seat)]
    contract = sum(b.tricks for member in side if (b := view.bids[member]) is not None)
    if sum(won[member] for member in side) >= contract:
        return 1.0
    could = any(card_power(rules, card, led) > best for card in _legal(hand, led))
    return UNLIKELY_PLAY if could else 1.0


def _nil_duck(
    rules: Rules,
    seat: int,
    hand: int,
    card: Card,
    led: int,
    best: int,
    won: Sequence[int],
    view: BotView,
) -> float:
    bid = view.bids[seat]
    if bid is None or bid.tricks != 0 or won[seat] or effective_suit(card) != led:
        return 1.0
    power = card_power(rules, card, led)
    if power > best:
        return 1.0
    higher_loser = any(power < card_power(rules, other, led) <= best for other in _legal(hand, led))
    return UNLIKELY_PLAY if higher_loser else 1.0
