"""Whole matches under random rule sets, seeds and legal play, checked against the rulebook.

Every check here is recomputed in the test from the events and the cards, not read back from
the engine: the deck each hand deals, follow-suit and broken spades, who wins each trick, the
score and the bag carry, who wins the match, and what each viewer may see.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from spades.engine import (
    BLIND,
    CONCEDE,
    LOOK,
    Action,
    Bid,
    Card,
    Direction,
    IllegalAction,
    MakeBid,
    MatchState,
    PassCards,
    Phase,
    PlayCard,
    Rules,
    act,
    apply,
    automatic_action,
    legal_actions,
    redact,
    seated_match,
    time_out,
    view,
)
from spades.engine import events as ev
from spades.engine.cards import CARDS
from tests.support.rules import (
    PROPERTY_SETTINGS,
    SEARCH_PHASES,
    is_trump,
    rule_sets,
    suit_for_following,
)

LITTLE_JOKER = 52
BIG_JOKER = 53
SPADES = 3
TWO_OF_CLUBS = 0
TWO_OF_HEARTS = 26
TWO_OF_SPADES = 39


# ---------------------------------------------------------------- the rulebook, restated


def expected_deck(rules: Rules) -> set[int]:
    deck = set(range(52))
    if rules.jokers:
        deck |= {LITTLE_JOKER, BIG_JOKER}
        if rules.players == 4:
            deck -= {TWO_OF_CLUBS, TWO_OF_HEARTS}
    return deck


def expected_hand_size(rules: Rules) -> int:
    if rules.players == 4:
        return 13
    return 18 if rules.jokers else 17


def trump_strength(rules: Rules, number: int) -> int:
    """BJ > LJ > 2♠ > A♠ > ... > 3♠ with jokers; A♠ > ... > 2♠ without."""
    if number == BIG_JOKER:
        return 100
    if number == LITTLE_JOKER:
        return 99
    if rules.jokers and number == TWO_OF_SPADES:
        return 98
    return number % 13 + 2


def expected_winner(rules: Rules, plays: list[tuple[int, int]]) -> int:
    led = suit_for_following(plays[0][1])

    def strength(card_number: int) -> tuple[int, int]:
        if is_trump(card_number):
            return (2, trump_strength(rules, card_number))
        if card_number // 13 == led:
            return (1, card_number % 13)
        return (0, 0)

    return max(plays, key=lambda play: strength(play[1]))[0]


def expected_legal_plays(
    rules: Rules,
    hand: set[int],
    trick: list[tuple[int, int]],
    spades_broken: bool,
    first_trick: bool,
) -> set[int]:
    if trick:
        led = suit_for_following(trick[0][1])
        following = {c for c in hand if suit_for_following(c) == led}
        return following or set(hand)
    if rules.two_of_clubs_leads and first_trick and TWO_OF_CLUBS in hand:
        return {TWO_OF_CLUBS}
    if rules.spades_must_be_broken and not spades_broken:
        return {c for c in hand if not is_trump(c)} or set(hand)
    return set(hand)


def expected_bids(rules: Rules, bids: list[Bid | None], seat: int) -> list[int]:
    size = expected_hand_size(rules)
    lowest = 1
    nil_ok = rules.nil_allowed
    if rules.minimum_team_bid and rules.players == 4:
        partner_bid = bids[(seat + 2) % 4]
        if partner_bid is not None:
            lowest = max(1, rules.minimum_team_bid - partner_bid.tricks)
            nil_ok = nil_ok and partner_bid.tricks >= rules.minimum_team_bid
    return ([0] if nil_ok else []) + list(range(lowest, size + 1))


def expected_side_result(
    rules: Rules,
    seats: tuple[int, ...],
    bids: dict[int, Bid],
    tricks: dict[int, int],
    bags_before: int,
) -> tuple[int, int, int, int]:
    """(hand points, bags this hand, bag penalty points, bags carried) per RULES.md section 1."""
    nil_seats = [seat for seat in seats if bids[seat].tricks == 0]
    contract = sum(bids[seat].tricks for seat in seats)
    team_tricks = sum(tricks[seat] for seat in seats)
    nil_tricks = sum(tricks[seat] for seat in nil_seats)
    counted = team_tricks if rules.nil_tricks_count_for_partner else team_tricks - nil_tricks
    points = bags = 0
    if contract:
        if counted >= contract:
            points += 10 * contract + counted - contract
            bags += counted - contract
        else:
            points -= 10 * contract
    elif rules.nil_tricks_count_for_partner:
        points += team_tricks
        bags += team_tricks
    if not rules.nil_tricks_count_for_partner:
        points += nil_tricks
        bags += nil_tricks
    for seat in nil_seats:
        value = 200 if bids[seat].blind else 100
        points += value if tricks[seat] == 0 else -value
    penalty = -((bags_before + bags) // rules.bag_limit) * rules.bag_penalty
    return points + penalty, bags, penalty, (bags_before + bags) % rules.bag_limit


#: Types that hold no card, skipped to keep the scan fast.
_CARDLESS = (str, bytes, bool, Rules, Bid, ev.HandScored, ev.MatchEnded, Phase)


def cards_in(value: Any) -> Iterator[Card]:
    """Every Card anywhere inside a view or an event."""
    if isinstance(value, Card):
        yield value
    elif value is None or isinstance(value, _CARDLESS) or type(value) is int:
        return
    elif isinstance(value, (tuple, list, set, frozenset)):
        for item in value:
            yield from cards_in(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from cards_in(item)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            yield from cards_in(getattr(value, field.name))


# ---------------------------------------------------------------- the referee


class Referee:
    """Follows a match event by event, with its own bookkeeping, and checks every fact."""

    def __init__(self, rules: Rules, events: list[ev.Event]) -> None:
        self.rules = rules
        self.players = rules.players
        self.step = 1 if rules.direction is Direction.CLOCKWISE else -1
        self.sides = [(0, 2), (1, 3)] if self.players == 4 else [(0,), (1,), (2,)]
        self.viewers: list[int | None] = [*range(self.players), None]
        self.shadow = MatchState()
        self.scores = [0] * len(self.sides)
        self.bags = [0] * len(self.sides)
        self.hand_points_sum = [0] * len(self.sides)
        self.hands_played = 0
        self.dealer = -1
        self.holdings: list[set[int]] = []
        self.events: list[ev.Event] = []
        self.ended = False
        self.follow(events)

    # Per-hand bookkeeping.
    def start_hand(self, event: ev.HandStarted) -> None:
        assert event.hand_number == self.hands_played + 1
        if self.dealer >= 0:
            assert event.dealer == (self.dealer + self.step) % self.players
        self.dealer = event.dealer
        self.holdings = [set() for _ in range(self.players)]
        self.dealt_to: set[int] = set()
        self.played: set[int] = set()
        self.known_by: list[set[int]] = [set() for _ in range(self.players)]
        self.trick: list[tuple[int, int]] = []
        self.tricks_done = 0
        self.tricks_won = [0] * self.players
        self.spades_broken = False
        self.bid_order: list[int] = []
        # Blind Nil: only a seat whose side trails the best other side by the deficit.
        expected_eligible: set[int] = set()
        if self.rules.blind_nil:
            for seat in range(self.players):
                mine = self.side_index(seat)
                best = max(s for index, s in enumerate(self.scores) if index != mine)
                if best - self.scores[mine] >= self.rules.blind_nil_deficit:
                    expected_eligible.add(seat)
        assert set(event.blind_nil_eligible) == expected_eligible

    def side_index(self, seat: int) -> int:
        return next(index for index, side in enumerate(self.sides) if seat in side)

    def follow(self, events: list[ev.Event]) -> None:
        for event in events:
            self.shadow.evolve(event)
            self.events.append(event)
            self.check_event(event)
            self.check_redaction(event)

    def check_event(self, event: ev.Event) -> None:
        rules = self.rules
        if isinstance(event, ev.HandStarted):
            self.start_hand(event)
        elif isinstance(event, ev.CardsDealt):
            assert event.cards is not None
            cards = {int(c) for c in event.cards}
            assert len(cards) == event.card_count == expected_hand_size(rules)
            assert not cards & self.dealt_to, "a card was dealt twice"
            self.dealt_to |= cards
            self.holdings[event.seat] = cards
            if event.seat == self.players - 1:
                deck = expected_deck(rules)
                assert self.dealt_to <= deck
                assert len(deck - self.dealt_to) == len(deck) - self.players * len(cards)
                if rules.players == 4 or rules.jokers:
                    assert self.dealt_to == deck
        elif isinstance(event, ev.CardsPassed):
            assert event.cards is not None and len(event.cards) == rules.blind_nil_pass_cards
            moved = set(event.cards)
            assert moved <= self.holdings[event.from_seat]
            assert self.holdings[event.to_seat].isdisjoint(moved)
            self.holdings[event.from_seat] -= moved
            self.holdings[event.to_seat] |= moved
            self.known_by[event.from_seat] |= moved
            self.known_by[event.to_seat] |= moved
        elif isinstance(event, ev.BidMade):
            self.bid_order.append(event.seat)
            if len(self.bid_order) == self.players:
                self.check_bidding_finished()
        elif isinstance(event, ev.CardPlayed):
            self.check_card_played(event)
        elif isinstance(event, ev.TrickWon):
            assert len(self.trick) == self.players
            assert event.winner == expected_winner(rules, self.trick)
            assert event.winning_card == dict(self.trick)[event.winner]
            self.tricks_done += 1
            assert event.trick_number == self.tricks_done
            self.tricks_won[event.winner] += 1
            if any(is_trump(card_number) for _, card_number in self.trick):
                self.spades_broken = True
            self.trick = []
        elif isinstance(event, ev.HandScored):
            self.check_hand_scored(event)
        elif isinstance(event, ev.MatchEnded):
            self.check_match_ended(event)

    def check_bidding_finished(self) -> None:
        bids = [bid or Bid.NIL for bid in self.shadow.bids]
        blind = [seat for seat in self.bid_order if bids[seat].blind]
        others = [seat for seat in self.bid_order if seat not in blind]
        # Blind Nil choices come first; then everyone else bids from the dealer's next seat on.
        assert self.bid_order[: len(blind)] == blind
        round_order = [
            (self.dealer + self.step * k) % self.players for k in range(1, self.players + 1)
        ]
        assert others == [seat for seat in round_order if seat in others]
        if self.rules.minimum_team_bid:
            for side in self.sides:
                contract = sum(bids[seat].tricks for seat in side)
                assert contract >= self.rules.minimum_team_bid, (
                    f"side {side} bid {[str(bids[seat]) for seat in side]} under the "
                    f"minimum team bid {self.rules.minimum_team_bid}"
                )

    def check_card_played(self, event: ev.CardPlayed) -> None:
        card_number = int(event.card)
        assert card_number in self.holdings[event.seat]
        if self.trick:
            assert event.seat == (self.trick[-1][0] + self.step) % self.players
        elif self.tricks_done == 0:
            holder = next(
                (s for s in range(self.players) if TWO_OF_CLUBS in self.holdings[s]), None
            )
            if self.rules.two_of_clubs_leads and holder is not None:
                assert event.seat == holder and card_number == TWO_OF_CLUBS
            else:
                assert event.seat == (self.dealer + self.step) % self.players
        legal = expected_legal_plays(
            self.rules,
            self.holdings[event.seat],
            self.trick,
            self.spades_broken,
            self.tricks_done == 0,
        )
        assert card_number in legal
        self.holdings[event.seat].discard(card_number)
        self.played.add(card_number)
        self.trick.append((event.seat, card_number))

    def check_hand_scored(self, event: ev.HandScored) -> None:
        rules = self.rules
        assert self.tricks_done == expected_hand_size(rules)
        assert sum(self.tricks_won) == self.tricks_done
        assert all(not cards for cards in self.holdings), "every dealt card is played"
        bids = {seat: bid for seat, bid in enumerate(self.shadow.bids) if bid is not None}
        tricks = dict(enumerate(self.tricks_won))
        assert len(event.sides) == len(self.sides)
        for index, (side, result) in enumerate(zip(self.sides, event.sides, strict=True)):
            assert result.seats == side
            assert [r.tricks for r in result.seat_results] == [tricks[s] for s in side]
            points, bags, penalty, carried = expected_side_result(
                rules, side, bids, tricks, self.bags[index]
            )
            assert (result.hand_points, result.bags) == (points, bags)
            assert result.bag_penalty_points == penalty
            assert result.total_bags == carried == (self.bags[index] + bags) % rules.bag_limit
            assert result.total_score == self.scores[index] + result.hand_points
            self.scores[index] = result.total_score
            self.bags[index] = result.total_bags
            self.hand_points_sum[index] += result.hand_points
        assert self.scores == self.hand_points_sum
        self.hands_played += 1
        self.expected_end = self.expected_winner_side()

    def expected_winner_side(self) -> int | None:
        rules = self.rules
        over = max(self.scores) >= rules.target_score
        mercy = rules.loss_threshold is not None and min(self.scores) <= rules.loss_threshold
        limit = rules.max_hands is not None and self.hands_played >= rules.max_hands
        top = max(self.scores)
        leaders = [index for index, score in enumerate(self.scores) if score == top]
        if (over or mercy or limit) and len(leaders) == 1:
            return leaders[0]
        return None

    def check_match_ended(self, event: ev.MatchEnded) -> None:
        self.ended = True
        assert list(event.final_scores) == self.scores
        if event.reason is ev.EndReason.CONCESSION:
            conceded = self.events[-2]
            assert isinstance(conceded, ev.Conceded)
            assert not set(event.winners) & set(self.sides[self.side_index(conceded.seat)])
            return
        winner = self.expected_end
        assert winner is not None
        assert event.winners == self.sides[winner]

    # What each viewer may know: the cards played this hand, its own cards once it may see
    # them, and the cards it passed or was passed. Nothing else, ever.
    def allowed_cards(self, viewer: int | None, state: MatchState) -> set[int]:
        if state.phase is Phase.WAITING_FOR_PLAYERS:
            return set()
        allowed = set(self.played)
        if viewer is not None:
            allowed |= self.known_by[viewer]
            if state.visible[viewer]:
                allowed |= self.holdings[viewer]
        return allowed

    def check_redaction(self, event: ev.Event) -> None:
        if isinstance(event, ev.TableCreated):
            for viewer in self.viewers:
                hidden = redact(event, viewer)
                assert isinstance(hidden, ev.TableCreated)
                assert hidden.seed is None and not hidden.preset_deals
            return
        for viewer in self.viewers:
            allowed = self.allowed_cards(viewer, self.shadow)
            if isinstance(event, ev.TurnTimedOut):
                allowed |= self.known_at_once(event, viewer)
            leaked = set(cards_in(redact(event, viewer))) - allowed
            assert not leaked, f"{event} shows {sorted(map(str, leaked))} to viewer {viewer}"

    @staticmethod
    def known_at_once(event: ev.TurnTimedOut, viewer: int | None) -> set[int]:
        # The clock's action takes effect in the same breath: a card played is public, and the
        # cards of a pass are known to the passer and to the partner receiving them.
        action = event.automatic_action
        if isinstance(action, PlayCard):
            return {action.card}
        if isinstance(action, PassCards) and viewer in (event.seat, (event.seat + 2) % 4):
            return set(action.cards)
        return set()

    def check_views(self, live: MatchState) -> None:
        for viewer in self.viewers:
            seen = view(live, viewer)
            assert seen == view(self.shadow, viewer), "the events rebuild a different state"
            leaked = set(cards_in(seen)) - self.allowed_cards(viewer, live)
            assert not leaked, f"view of {viewer} shows {sorted(map(str, leaked))}"
            if viewer is not None and viewer in live.blind_pending:
                assert seen.hand is None, "a seat still choosing Blind Nil sees its cards"
        assert live.hands == self.shadow.hands

    # Checks before an action.
    def check_legal_actions(self, state: MatchState) -> None:
        seat = state.seat_to_act()
        for other in range(self.players):
            if other != seat:
                assert legal_actions(state, other) == []
        actions = legal_actions(state, seat)
        if state.phase is Phase.PLAYING:
            legal = expected_legal_plays(
                self.rules,
                self.holdings[seat],
                self.trick,
                self.spades_broken,
                self.tricks_done == 0,
            )
            assert {a.card for a in actions if isinstance(a, PlayCard)} == legal
            assert len(actions) == len(legal)
        elif state.phase is Phase.BIDDING:
            tricks = [a.tricks for a in actions if isinstance(a, MakeBid)]
            assert tricks == expected_bids(self.rules, state.bids, seat)
        elif state.phase is Phase.BLIND_NIL_CHOICE:
            # With a board, a team may not bid two Blind Nils (its contract must reach it).
            partner_bid = state.bids[(seat + 2) % 4] if self.players == 4 else None
            board_closes_it = bool(self.rules.minimum_team_bid) and bool(
                partner_bid and partner_bid.tricks == 0
            )
            assert actions == ([LOOK] if board_closes_it else [BLIND, LOOK])
        elif state.phase is Phase.PASSING:
            assert all(
                isinstance(a, PassCards) and set(a.cards) <= self.holdings[seat] for a in actions
            )

    def check_refusals(self, state: MatchState, rng: random.Random) -> None:
        """A sample of illegal actions is refused with a reason, changing nothing."""
        seat = state.seat_to_act()
        before = view(state, None)
        attempts: list[tuple[int, Action]] = [((seat + 1) % self.players, LOOK)]
        if state.phase is Phase.PLAYING:
            legal = {a.card for a in legal_actions(state, seat) if isinstance(a, PlayCard)}
            illegal = sorted(self.holdings[seat] - legal)
            attempts += [
                (seat, PlayCard(CARDS[c])) for c in rng.sample(illegal, min(2, len(illegal)))
            ]
            not_held = sorted(expected_deck(self.rules) - self.holdings[seat])
            attempts.append((seat, PlayCard(CARDS[rng.choice(not_held)])))
            attempts.append((seat, MakeBid(3)))
        elif state.phase is Phase.BIDDING:
            allowed = set(expected_bids(self.rules, state.bids, seat))
            attempts += [(seat, MakeBid(t)) for t in range(20) if t not in allowed][:3]
            attempts.append((seat, PlayCard(CARDS[rng.choice(sorted(expected_deck(self.rules)))])))
        for who, action in attempts:
            trial = state.clone()
            try:
                act(trial, who, action)
            except IllegalAction as error:
                assert error.reason
                if state.phase is Phase.PLAYING and isinstance(action, PlayCard) and who == seat:
                    self.check_play_reason(state, action.card, error.reason)
            else:
                raise AssertionError(f"{action} by seat {who} was accepted in {state.phase}")
            assert view(trial, None) == before, "a refused action changed the state"

    def check_play_reason(self, state: MatchState, card_number: int, reason: str) -> None:
        seat = state.seat_to_act()
        if card_number not in self.holdings[seat]:
            assert reason.startswith("you do not hold the ")
        elif self.trick:
            led = suit_for_following(self.trick[0][1])
            singular = ["a club", "a diamond", "a heart", "a spade"][led]
            plural = ["clubs", "diamonds", "hearts", "spades"][led]
            assert reason == f"you hold {singular}, so you must follow {plural}"
        elif self.rules.two_of_clubs_leads and self.tricks_done == 0 and 0 in self.holdings[seat]:
            # (In cutthroat the 2♣ may be the card out of play: then nobody must lead it.)
            assert reason == "the holder of the 2♣ must lead it to the first trick"
        else:
            assert reason == "spades are not broken yet, and you hold another suit to lead"

    def check_automatic_action(self, state: MatchState, action: Action) -> None:
        seat = state.seat_to_act()
        if state.phase is Phase.BLIND_NIL_CHOICE:
            assert action == LOOK
        elif state.phase is Phase.BIDDING:
            allowed = expected_bids(self.rules, state.bids, seat)
            assert isinstance(action, MakeBid)
            assert action.tricks == (1 if 1 in allowed else min(t for t in allowed if t))
        elif state.phase is Phase.PASSING:
            assert isinstance(action, PassCards)
            order = sorted(self.holdings[seat], key=self.lowness)
            assert sorted(map(self.lowness, action.cards)) == list(
                map(self.lowness, order[: len(action.cards)])
            )
        elif state.phase is Phase.PLAYING:
            assert isinstance(action, PlayCard)
            legal = expected_legal_plays(
                self.rules,
                self.holdings[seat],
                self.trick,
                self.spades_broken,
                self.tricks_done == 0,
            )
            assert self.lowness(action.card) == min(map(self.lowness, legal))

    def lowness(self, card_number: int) -> tuple[int, int]:
        # The clock plays low, and any other suit before a spade.
        if is_trump(card_number):
            return (1, trump_strength(self.rules, card_number))
        return (0, card_number % 13)


# ---------------------------------------------------------------- the matches


def play_random_match(rules: Rules, seed: bytes, rng: random.Random) -> Referee:
    state, events = seated_match(rules, seed)
    referee = Referee(rules, events)
    referee.check_views(state)
    actions = 0
    while not state.is_over:
        actions += 1
        referee.check_legal_actions(state)
        if rng.random() < 0.15:
            referee.check_refusals(state, rng)
        roll = rng.random()
        if roll < 0.002 or referee.hands_played > 12:
            state, new_events = apply(state, rng.randrange(rules.players), CONCEDE)
        elif roll < 0.08:
            referee.check_automatic_action(state, automatic_action(state))
            state, new_events = time_out(state)
            assert isinstance(new_events[0], ev.TurnTimedOut)
        else:
            seat = state.seat_to_act()
            state, new_events = apply(state, seat, rng.choice(legal_actions(state, seat)))
        referee.follow(new_events)
        referee.check_views(state)
    assert referee.ended
    rebuilt = MatchState.from_events(referee.events)
    for viewer in referee.viewers:
        assert view(rebuilt, viewer) == view(state, viewer)
    return referee


@PROPERTY_SETTINGS
@given(
    rules=rule_sets(),
    seed=st.binary(min_size=32, max_size=32),
    rng=st.randoms(use_true_random=True),
)
def test_random_matches_follow_the_rules(rules: Rules, seed: bytes, rng: random.Random) -> None:
    play_random_match(rules, seed, rng)


@PROPERTY_SETTINGS
@given(seed=st.binary(min_size=32, max_size=32), rng=st.randoms(use_true_random=True))
def test_random_default_matches_follow_the_rules(seed: bytes, rng: random.Random) -> None:
    play_random_match(Rules(max_hands=2), seed, rng)


@settings(max_examples=40, deadline=None, phases=SEARCH_PHASES)
@given(
    seed=st.binary(min_size=32, max_size=32),
    rng=st.randoms(use_true_random=True),
    pass_cards=st.sampled_from([0, 2]),
)
def test_random_blind_nil_matches_follow_the_rules(
    seed: bytes, rng: random.Random, pass_cards: int
) -> None:
    # Deficit 0 makes every seat eligible in the first hand, so Blind Nil is chosen often.
    rules = Rules(blind_nil=True, blind_nil_deficit=0, blind_nil_pass_cards=pass_cards, max_hands=1)
    play_random_match(rules, seed, rng)
