"""The search bot: determinized Monte Carlo over the worlds the seat cannot tell apart.

At each card to play, the bot draws complete deals that agree with its view
(:func:`spades.bot.worlds.sample_world`), weighs each by how well it explains the bids (a seat
that bid 5 likely holds about five tricks, by the heuristic's count), plays every legal card
in every world and the rest of the hand out with a fast greedy policy, and scores the hand with
the engine's own scoring. A card's value is the weighted mean, over worlds, of the change in
the match outcome it led to: points for my side less points for the others, each bag charged
at its share of the bag penalty (so bags cost before the penalty falls), a Nil made or set
through the score, and a match won or lost outright. Every card is tried on the same worlds, so
their differences are measured world by world. The heuristic's own choice stands unless
another card measures better by more than ``margin`` points and by more than twice the standard
error of that difference, over at least ``MIN_WORLDS`` worlds: the perfect-information
playouts are optimistic, and a handful of worlds is mostly noise (overruling the heuristic on
every small edge lost 45 of 60 duplicate matches to it; with this test the search won 24 of 40).

Bids are simulated too: for each legal number within ``BID_REACH`` of the heuristic's bid, and
Nil for a hand the heuristic counts at most ``NIL_TRICKS`` tricks, every sampled world is bid out
(the seats after this one bid their count of tricks) and played out by the same policy, and the
bid is scored like a card, by the change in the match outcome (:func:`choose_bid`). The
playouts see every hand, so they take more tricks and duck more surely than the table will: a
raise above the heuristic's bid must measure ``RAISE_MARGIN`` points better, a Nil
``NIL_MARGIN`` points better than the number chosen, while a lower bid needs only a better
mean by one standard error. A Nil the heuristic bids stands. The Blind Nil choice and the card
pass are the heuristic's; a decision with one legal action is instant.

Time: ``think_ms`` of CPU time per decision (100 by default): the deciding thread's own
processor time (:class:`spades.bot.thinking.Thinking`), "100 ms on one core", so a machine busy
with other work makes the answer later but not weaker; never more wall-clock time than the turn
clock allows less the safety margin. A decision stops early once ``SETTLED_WORLDS`` worlds have
scored every choice alike (nothing left to choose). The worlds of a decision come from a
generator seeded by the bot's ``seed`` and the moment of the match, so for a seed the bot makes
the same choices whenever it gets as far: with ``max_worlds`` it always does (tests); by time
alone, a slower machine may see fewer worlds.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Sequence
from typing import ClassVar, Final

from spades.bot import Bot, BotView
from spades.bot.thinking import Thinking
from spades.bot.worlds import Holders, sample_world
from spades.engine import (
    BID,
    PLAY,
    Action,
    Card,
    MakeBid,
    MatchState,
    Phase,
    Rules,
    act,
    automatic_action,
    card_power,
    cards_of,
    effective_suit,
    legal_actions,
    trump_power,
)
from spades.engine import events as ev
from spades.engine.legal import play_mask
from spades_bots.heuristic import HeuristicBot, Powers, estimate_tricks, nearest_legal_bid

#: How far (in tricks) a seat's bid is expected to stray from the heuristic's count.
BID_SPREAD = 1.5
#: Fewer worlds than this say too little to overrule the heuristic.
MIN_WORLDS = 6
#: How many standard errors a choice must measure better by to overrule the heuristic's.
ERRORS = 2.0
#: After this many worlds in which every choice scored the same, a decision stops looking.
SETTLED_WORLDS = 16
#: Points for winning (or losing) the match outright in a playout.
MATCH_POINTS = 300.0


def _cards_by_suit() -> tuple[tuple[tuple[int, ...], ...], ...]:
    """Per suit (the jokers as a fifth), per 13-bit mask of its cards: their numbers, lowest
    first (the playout's legal cards, without a loop over the bits)."""
    return tuple(
        tuple(
            tuple(13 * suit + bit for bit in range(13) if chunk >> bit & 1)
            for chunk in range(8192 if suit < 4 else 4)
        )
        for suit in range(5)
    )


_CARDS_BY_SUIT: Final = _cards_by_suit()


class Playout:
    """A fast greedy policy for all seats of a complete state (it sees every hand): win what
    the side still needs as cheaply as possible, never beat a partner, duck once the contract is
    made (shedding the highest card that loses), stay under an opponent's Nil card, and as a
    clean Nil bidder stay under (or be overtaken)."""

    def __init__(self, rules: Rules) -> None:
        seating = rules.seating
        self.players = rules.players
        #: Per seat: its partner, or None in cutthroat.
        self.partner = [seating.partner(seat) for seat in seating.seats]
        #: Per seat: the seats of its side.
        self.side = [seating.sides[seating.side_of(seat)] for seat in seating.seats]
        self.power = [[card_power(rules, card, led) for card in range(54)] for led in range(4)]
        #: Within a suit, higher is stronger; every trump is above every other card.
        self.strength = [trump_power(rules, card) or card % 13 + 1 for card in range(54)]
        #: Per card: the cards of its suit (jokers are spades) that beat it.
        self.above = [
            sum(
                1 << other
                for other in range(54)
                if effective_suit(other) == effective_suit(card)
                and self.strength[other] > self.strength[card]
            )
            for card in range(54)
        ]
        # Sort keys, one number per card (ties keep the lower card, as a key tuple did):
        #: leading or ducking low: side cards before trumps, low first;
        self.low = [(strength > 13) * 1000 + strength for strength in self.strength]
        #: shedding: side cards before trumps, high first;
        self.shed = [(strength <= 13) * 1000 + strength for strength in self.strength]
        #: per led suit, a losing card's place: the strongest in the trick, then by strength.
        self.loser = [
            [self.power[led][card] * 1000 + self.strength[card] for card in range(54)]
            for led in range(4)
        ]

    def card(self, state: MatchState, seat: int) -> int:
        mask = play_mask(state, seat)
        if not mask & (mask - 1):
            return mask.bit_length() - 1
        legal = _CARDS_BY_SUIT[0][mask & 8191]
        for suit in (1, 2, 3):
            if mask >> 13 * suit & 8191:
                legal = legal + _CARDS_BY_SUIT[suit][mask >> 13 * suit & 8191]
        if mask >> 52:
            legal = legal + _CARDS_BY_SUIT[4][mask >> 52]
        strength = self.strength
        nil = self._clean_nil(state, seat)
        trick = state.trick
        if not trick:
            if not nil and self._side_needs(state, seat):
                hands = state.hands
                others = 0
                for other in range(self.players):
                    if other != seat:
                        others |= hands[other]
                above = self.above
                bosses = [card for card in legal if not above[card] & others]
                if bosses:
                    return max(bosses, key=strength.__getitem__)
            return min(legal, key=self.low.__getitem__)
        led = trick[0].card
        led_suit = effective_suit(led)
        power = self.power[led_suit]
        best_play = trick[0]
        best = power[best_play.card]
        for play in trick:
            if power[play.card] > best:
                best_play = play
                best = power[play.card]
        best_seat = best_play.seat
        winners = [card for card in legal if power[card] > best]
        losers = [card for card in legal if power[card] <= best]
        if nil:
            if losers:
                return max(losers, key=self.loser[led_suit].__getitem__)
            # I must win: with my lowest winner, in case someone after me overtakes it.
            if len(trick) == self.players - 1:
                return max(winners, key=strength.__getitem__)
            return min(winners, key=power.__getitem__)
        partner = self.partner[seat]
        if partner is not None and best_seat == partner:
            if winners and self._clean_nil(state, partner):
                return min(winners, key=power.__getitem__)  # cover my Nil partner
            return min(losers or legal, key=self.low.__getitem__)
        if losers and self._clean_nil(state, best_seat):
            return max(losers, key=self.shed.__getitem__)  # stay under the Nil bidder's card
        needs = self._side_needs(state, seat)
        if winners and needs:
            return min(winners, key=power.__getitem__)
        if losers:
            # Made: shed the card most likely to take a bag later; else keep the high ones.
            if needs:
                return min(losers, key=self.low.__getitem__)
            return max(losers, key=self.shed.__getitem__)
        return min(winners, key=power.__getitem__)

    def distinct(self, hand: Sequence[Card], played: Iterable[int]) -> dict[Card, list[Card]]:
        """The cards of ``hand`` that play differently (the lowest of each group), each with
        the cards that play just like it: cards of one suit with nothing between them but
        cards held or ``played``, the cards of the hand's finished tricks (the 9 and the J of
        a suit whose 10 is gone). A card on the table is not gone: of the 9 and the J around
        a 10 played to this trick, one beats it and the other does not (:func:`gone`)."""
        passed = 0  # the cards nothing needs to beat: held, or out of play
        for card in played:
            passed |= 1 << card
        for card in hand:
            passed |= 1 << card
        groups: dict[Card, list[Card]] = {}
        ordered = sorted(hand, key=lambda card: (effective_suit(card), self.strength[card]))
        lowest: Card | None = None
        for card in ordered:
            if lowest is not None and effective_suit(card) == effective_suit(lowest):
                between = self.above[lowest] & ~self.above[card] & ~(1 << card)
                if not between & ~passed:
                    groups[lowest].append(card)
                    continue
            lowest = card
            groups[card] = [card]
        return groups

    def _clean_nil(self, state: MatchState, seat: int) -> bool:
        bid = state.bids[seat]
        return bid is not None and bid.tricks == 0 and state.tricks_won[seat] == 0

    def _side_needs(self, state: MatchState, seat: int) -> bool:
        side = self.side[seat]
        bid = won = 0
        for member in side:
            member_bid = state.bids[member]
            if member_bid is not None and member_bid.tricks:
                bid += member_bid.tricks
                won += state.tricks_won[member]
        return won < bid


def gone(view: BotView) -> list[Card]:
    """The cards of the hand's finished tricks, which no card can beat any more (not the
    cards on the table: :meth:`Playout.distinct`)."""
    return [play.card for trick in view.tricks for play in trick.plays]


def side_values(state: MatchState) -> list[float]:
    """Each side's standing: its score, with every bag it carries charged at its share of the
    bag penalty (so the penalty's drop when it falls is already paid)."""
    rules = state.rules
    bag_cost = rules.bag_penalty / rules.bag_limit
    return [score - bag_cost * bags for score, bags in zip(state.scores, state.bags, strict=True)]


class Measurements:
    """Each choice's outcomes (a card, or a bid) over the sampled worlds, with their weights."""

    def __init__(self, cards: Sequence[int]) -> None:
        self.cards = list(cards)
        self.weights: list[float] = []
        self.outcomes: dict[int, list[float]] = {card: [] for card in cards}
        #: Whether some world told the choices apart (any two outcomes differed).
        self.differ = False

    def add(self, weight: float, outcomes: Sequence[float]) -> None:
        self.weights.append(weight)
        for card, outcome in zip(self.cards, outcomes, strict=True):
            self.outcomes[card].append(outcome)
        if not self.differ and min(outcomes) != max(outcomes):
            self.differ = True

    @property
    def settled(self) -> bool:
        """True when ``SETTLED_WORLDS`` worlds or more have all scored every choice alike:
        the choice does not matter (the hand's tricks are as good as decided), so more
        worlds would only spend time."""
        return not self.differ and len(self.weights) >= SETTLED_WORLDS

    def mean(self, card: int) -> float:
        total = sum(self.weights)
        if not total:
            return 0.0
        return sum(w * x for w, x in zip(self.weights, self.outcomes[card], strict=True)) / total

    def clearly_better(self, card: int, other: int, margin: float, errors: float = ERRORS) -> bool:
        """True when ``card`` beats ``other`` by more than ``margin`` points on average, and by
        more than ``errors`` standard errors of that average (the same worlds serve both, so
        their difference is measured world by world), over at least ``MIN_WORLDS`` worlds."""
        total = sum(self.weights)
        if card == other or len(self.weights) < MIN_WORLDS or not total:
            return False
        differences = [
            a - b for a, b in zip(self.outcomes[card], self.outcomes[other], strict=True)
        ]
        mean = sum(w * d for w, d in zip(self.weights, differences, strict=True)) / total
        spread = sum(w * (d - mean) ** 2 for w, d in zip(self.weights, differences, strict=True))
        effective = total**2 / sum(w * w for w in self.weights)  # worlds, counted by weight
        error = math.sqrt(spread / total / max(effective - 1, 1))
        return mean > margin and mean > errors * error


class SearchBot(Bot):
    """Plays the card and bids the number that measure best over sampled worlds."""

    name = "search"
    thinks = True  # each decision searches for ``think_ms``: off the event loop
    #: The thinking time when the constructor is not given one (see :func:`thinking_for`).
    default_think_ms: ClassVar[float] = 100.0

    def __init__(
        self,
        seed: int | None = None,
        think_ms: float | None = None,
        max_worlds: int | None = None,
        margin: float = 1.0,
        thinking: Callable[[Rules, float | None], Thinking] = Thinking.for_turn,
    ) -> None:
        self.seed = seed if seed is not None else random.randrange(1 << 63)
        #: Each decision's time from the rules and ``think_ms`` (a test passes one it watches).
        self.thinking = thinking
        self.think_ms = think_ms if think_ms is not None else self.default_think_ms
        self.max_worlds = max_worlds
        self.margin = margin
        self.heuristic = HeuristicBot()
        #: Worlds evaluated at the last decision, and the seconds it had (for logs and tests).
        self.last_worlds = 0
        self.last_budget = 0.0
        self._playouts: dict[Rules, Playout] = {}

    def choose_blind_nil(self, view: BotView) -> bool:
        return self.heuristic.choose_blind_nil(view)

    def bid(self, view: BotView) -> int:
        prior, _ = self.heuristic.reasoned_bid(view)
        candidates = bid_candidates(prior, view.legal_bids, nil_worth_trying(view))
        if len(candidates) == 1:
            return prior
        return choose_bid(self.measure_bids(view, candidates), prior)

    def measure_bids(self, view: BotView, bids: Sequence[int]) -> Measurements:
        """Each bid's outcome in every world sampled within the time: the later seats bid
        their count of tricks, and the hand is played out by the playout policy."""
        thinking = self._thinking(view)
        rng = random.Random(f"{self.seed}:{view.hand_number}:bid:{view.seat}")
        holders = Holders(view)
        playout = self._playout(view.rules)
        powers = Powers(view.rules)
        found = Measurements(bids)
        while self.max_worlds is None or len(found.weights) < self.max_worlds:
            world = sample_world(view, rng, holders)
            # What the seats still to bid would bid: their count of tricks, at least 1.
            counts = [
                max(1, round(estimate_tricks(cards_of(hand), view.rules, powers)))
                for hand in world.hands
            ]
            found.add(
                bid_likelihood(world, view, powers),
                [bid_out(world, view.seat, bid, counts, playout) for bid in bids],
            )
            if thinking.over() or found.settled:
                break
        self.last_worlds = len(found.weights)
        return found

    def pass_cards(self, view: BotView) -> list[Card]:
        return self.heuristic.pass_cards(view)

    def play(self, view: BotView) -> Card:
        legal = sorted(view.legal_cards)
        if len(legal) == 1:
            return legal[0]
        prior = self.heuristic.play(view)
        choices = self._playout(view.rules).distinct(legal, gone(view))
        if len(choices) == 1:
            return prior
        prior_choice = next(choice for choice, same in choices.items() if prior in same)
        found = self.measure(view, list(choices))
        best = max(choices, key=lambda card: (found.mean(card), card == prior_choice))
        return best if found.clearly_better(best, prior_choice, self.margin) else prior

    def measure(self, view: BotView, cards: Sequence[Card]) -> Measurements:
        """Each card's outcome in every world sampled within the time."""
        thinking = self._thinking(view)
        rng = random.Random(f"{self.seed}:{view.hand_number}:{len(view.played_cards)}:{view.seat}")
        holders = Holders(view)
        playout = self._playout(view.rules)
        powers = Powers(view.rules)
        found = Measurements(cards)
        while self.max_worlds is None or len(found.weights) < self.max_worlds:
            world = sample_world(view, rng, holders)
            found.add(
                bid_likelihood(world, view, powers),
                [play_out(world, view.seat, card, playout) for card in cards],
            )
            if thinking.over() or found.settled:
                break
        self.last_worlds = len(found.weights)
        return found

    def _thinking(self, view: BotView) -> Thinking:
        """This decision's time: ``think_ms`` of CPU time, within the turn's clock."""
        thinking = self.thinking(view.rules, self.think_ms / 1000)
        self.last_budget = thinking.cpu_seconds
        return thinking

    def _playout(self, rules: Rules) -> Playout:
        found = self._playouts.get(rules)
        if found is None:
            found = self._playouts[rules] = Playout(rules)
        return found


def thinking_for(think_ms: float) -> type[SearchBot]:
    """The search bot thinking ``think_ms`` per decision, as a class (``search:MS`` for the
    arena and the runner, which make bots from a class)."""
    if not think_ms > 0:
        raise ValueError(f"the search bot needs a positive thinking time, not {think_ms} ms")
    return type("SearchBot", (SearchBot,), {"default_think_ms": think_ms})


def bid_likelihood(world: MatchState, view: BotView, powers: Powers) -> float:
    """How well a world's hands explain the bids made: each seat's count of tricks (the
    heuristic's, over the hand it was dealt) against its bid, as a bell curve."""
    weight = 1.0
    played_by = [0] * view.player_count
    for trick in view.tricks:
        seat = trick.leader
        for card in trick.cards:
            played_by[seat] |= 1 << card
            seat = view.next_seat(seat)
    for seat, card in view.current_trick:
        played_by[seat] |= 1 << card
    for seat, bid in enumerate(view.bids):
        if seat == view.seat or bid is None or bid.blind:
            continue
        dealt = cards_of(world.hands[seat] | played_by[seat])
        estimate = estimate_tricks(dealt, view.rules, powers)
        weight *= math.exp(-((estimate - bid.tricks) ** 2) / (2 * BID_SPREAD**2))
    return weight


#: How far from the heuristic's bid the simulation looks.
BID_REACH = 2
#: A bid above the heuristic's must measure better by this many points (and two standard
#: errors): the playouts, seeing every hand, take more tricks than the table will, so a raise
#: they like is mostly their optimism (raising on a 1-point edge cost 14 to 22 points in the
#: hands it raised, in 100 duplicate hands at 25 ms); a sure trick more (about 19 points) passes.
RAISE_MARGIN = 15.0
#: A bid below the heuristic's needs only a better mean by one standard error: the same
#: optimism makes a lower bid look worse than it is.
LOWER_ERRORS = 1.0
#: A Nil is tried in the simulation for a hand the heuristic counts at most this many tricks.
NIL_TRICKS = 2.0
#: ... and chosen when it measures better than the best number by this many points (and two
#: standard errors): perfect-information playouts duck better than the table will.
NIL_MARGIN = 20.0


def choose_bid(found: Measurements, prior: int) -> int:
    """The bid to make from the measured candidates (``prior`` the heuristic's among them): the
    best number, if it beats the heuristic's clearly enough (a raise by ``RAISE_MARGIN``, a
    lower bid by ``LOWER_ERRORS``), unless a Nil beats that by ``NIL_MARGIN``."""
    numbers = [bid for bid in found.cards if bid]
    best = max(numbers, key=lambda bid: (found.mean(bid), bid == prior))
    if best > prior:
        clear = found.clearly_better(best, prior, RAISE_MARGIN)
    else:
        clear = found.clearly_better(best, prior, 0.0, LOWER_ERRORS)
    if not clear:
        best = prior
    if 0 in found.cards and found.clearly_better(0, best, NIL_MARGIN):
        return 0
    return best


def nil_worth_trying(view: BotView) -> bool:
    """Whether the simulation tries a Nil: legal, the partner (if any) has not bid Nil, and
    the heuristic counts the hand at most ``NIL_TRICKS`` tricks."""
    if 0 not in view.legal_bids:
        return False
    partner_bid = view.bids[view.partner] if view.partner is not None else None
    if partner_bid is not None and partner_bid.is_nil:
        return False
    return estimate_tricks(view.hand, view.rules, Powers(view.rules)) <= NIL_TRICKS


def bid_candidates(prior: int, legal: Sequence[int], try_nil: bool = False) -> list[int]:
    """The bids worth simulating: the legal numbers within ``BID_REACH`` of the heuristic's
    bid, and Nil when ``try_nil`` (a Nil the heuristic chose stands)."""
    if prior == 0:
        return [prior]
    numbers = [bid for bid in legal if bid > 0 and abs(bid - prior) <= BID_REACH] or [prior]
    return [0, *numbers] if try_nil and 0 in legal else numbers


def bid_out(
    world: MatchState, seat: int, bid: int, counts: Sequence[int], playout: Playout
) -> float:
    """The change in the match outcome, for ``seat``'s side, of bidding ``bid`` in ``world``:
    the seats after it bid their ``counts`` (or the nearest legal number), anything else
    before the play is the clock's default, and the hand is played out by ``playout``."""
    before = side_values(world)
    state, events = bid_to_play(world, seat, bid, counts)
    return finish(state, seat, before, world.hand_number, events, playout)


def bid_to_play(
    world: MatchState, seat: int, bid: int, counts: Sequence[int]
) -> tuple[MatchState, list[ev.Event]]:
    """A copy of ``world`` with ``seat`` bidding ``bid``, the seats after it their ``counts``
    (or the nearest legal number), and anything else before the play the clock's default;
    and the events of the last action."""
    state = world.clone()
    hand = state.hand_number
    events = act(state, seat, BID[bid])
    while state.phase is not Phase.PLAYING and state.hand_number == hand and not state.is_over:
        turn = state.seat_to_act()
        if state.phase is Phase.BIDDING:
            legal = [
                action.tricks
                for action in legal_actions(state, turn)
                if isinstance(action, MakeBid)
            ]
            action: Action = BID[nearest_legal_bid(counts[turn], legal)]
        else:
            action = automatic_action(state)
        events = act(state, turn, action)
    return state, events


def play_out(world: MatchState, seat: int, card: int, playout: Playout) -> float:
    """The change in the match outcome, for ``seat``'s side, of playing ``card`` in ``world``
    and the rest of the hand by ``playout``."""
    state = world.clone()
    before = side_values(state)
    hand = state.hand_number
    events = act(state, seat, PLAY[card])
    return finish(state, seat, before, hand, events, playout)


def finish(
    state: MatchState,
    seat: int,
    before: Sequence[float],
    hand: int,
    events: list[ev.Event],
    playout: Playout,
) -> float:
    """Play the hand out by ``playout`` (in place) and measure the change in the match
    outcome for ``seat``'s side since ``before``."""
    while state.hand_number == hand and not state.is_over:
        turn = state.seat_to_act()
        events = act(state, turn, PLAY[playout.card(state, turn)])
    mine = state.side_of(seat)
    after = side_values(state)  # the hand is scored (the next one may have been dealt)
    gains = [new - old for new, old in zip(after, before, strict=True)]
    others = [gain for index, gain in enumerate(gains) if index != mine]
    value = gains[mine] - sum(others) / len(others)
    ended = next((event for event in events if isinstance(event, ev.MatchEnded)), None)
    if ended is not None and ended.winners:
        value += MATCH_POINTS if seat in ended.winners else -MATCH_POINTS
    return value
