"""The heuristic bot: a solid rule-based player, deterministic given its view.

Bidding counts the tricks a hand should take (top trumps, aces, guarded kings, long and ruffing
spades), trims the count when the table has already bid most of the tricks, leans up when the
team is close to the bag limit, and bids Nil with a hand of low cards when the partner can cover.

Play follows one plan per trick, chosen from the hand's situation:

- **nil**: I bid Nil: play the highest card that still loses; lead low. Forced to beat the
  winning card while others still play, play the lowest winner (a later card may still take
  it), unless even that one surely wins: then shed the highest.
- **cover**: my partner bid Nil and is still clean: win the tricks my partner might take.
- **set**: an opponent bid Nil and is still clean: stay under them so they must win a trick.
- **make**: my side still needs tricks: win them cheaply, never beat a partner who is winning.
- **duck**: the contract is made: stop taking tricks (bags), unless the opponents can still be
  set and the tricks that takes do not cost more in bags (the penalty) than the set is worth.

Cards played and the suits each seat has shown void in come from the view, so a card is a
"boss" (the highest of its suit still out) and a seat is known to be out of a suit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from spades.bot import Bot, BotView, Noted
from spades.engine import (
    Bid,
    Card,
    Rules,
    Seat,
    Suit,
    card_power,
    cheapest_cards,
    counting_tricks,
    effective_suit,
    trump_power,
)

SPADES = Suit.SPADES


class Plan(Enum):
    NIL = "nil"
    COVER = "cover"
    SET = "set"
    MAKE = "make"
    DUCK = "duck"


class Powers:
    """How strong each card is in a trick, for one rule set: the engine's trump order and
    trick rule, kept at hand for the bot's many comparisons."""

    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        self.trump = [trump_power(rules, number) for number in range(54)]
        self.trumps_high_first = rules.trump_order()[::-1]
        #: Per card: its place in the engine's order of cheapest cards to give away.
        self.cheapness = rules.game.cheapness

    def power(self, card: Card, led: int) -> int:
        """The card's strength in a trick led in suit ``led`` (0 when it cannot win)."""
        return card_power(self.rules, card, led)

    def rank_power(self, card: Card) -> int:
        """The card's strength within its own suit (trumps by the trump order)."""
        return self.trump[card] or card.rank


@dataclass(frozen=True)
class Situation:
    """What matters about the hand in progress, from my seat."""

    my_bid: Bid | None
    partner: int | None
    partner_bid: Bid | None
    team_need: int
    opponents_need: int
    tricks_left: int
    clean_nil_partner: bool
    clean_nil_opponents: tuple[int, ...]
    #: Bags my side may still take before the next bag penalty.
    bag_room: int = 10
    #: The opponents' contract (their bids, Nil aside), for what setting them is worth.
    opponents_contract: int = 0
    #: The rules' bag penalty, in points.
    bag_penalty: int = 100


class HeuristicBot(Bot):
    """Counts tricks to bid; plays by plan: nil, cover, set, make or duck."""

    name = "heuristic"

    # ------------------------------------------------------------------ bidding

    def choose_blind_nil(self, view: BotView) -> bool:
        if view.partner is None:
            return False
        partner_bid = view.bids[view.partner]
        if partner_bid is not None and partner_bid.is_nil:
            return False
        behind = max(view.scores) - view.scores[view.my_side]
        return behind >= max(200, view.rules.blind_nil_deficit)

    def bid(self, view: BotView) -> Noted[int]:
        """The bid, with its sealed note: the count of tricks and what changed it."""
        return Noted(*self.reasoned_bid(view))

    def reasoned_bid(self, view: BotView) -> tuple[int, str]:
        """The bid, and why in words (its note: the count of tricks and what changed it)."""
        legal = view.legal_bids
        hand = view.hand
        powers = Powers(view.rules)
        sources = trick_sources(hand, view.rules, powers)
        estimate = estimate_tricks(hand, view.rules, powers)
        counted = estimate
        reasons: list[str] = []
        partner_bid = view.bids[view.partner] if view.partner is not None else None
        if 0 in legal and self._wants_nil(view, estimate, powers, partner_bid):
            reasons.append("low cards that can duck, and a partner who can cover")
            return 0, bid_note(0, counted, sources, reasons)
        others = sum(bid.tricks for seat, bid in enumerate(view.bids) if bid and seat != view.seat)
        room = view.rules.hand_size - others
        if estimate > room - 1:  # the table has bid most tricks: they will be fought over
            estimate = max(1.0, room - 1 + (estimate - room + 1) / 3)
            reasons.append(f"the others bid {others}: trimmed to {estimate:.1f}")
        if partner_bid is not None and partner_bid.is_nil:
            estimate += 0.5  # covering costs my partner's high cards, and wins a few of mine
            reasons.append("partner bid Nil: half a trick more for covering")
        bags = view.bags[view.my_side]
        lean = 0.3 if bags >= view.rules.bag_limit - 3 else 0.0  # near the limit: bid it all
        if lean:
            reasons.append(f"{bags} bags: leaning up")
        wanted = max(1, math.floor(estimate + 0.5 + lean))
        tricks = nearest_legal_bid(wanted, legal)
        if tricks != wanted:
            reasons.append(f"{wanted} is not a legal bid")
        return tricks, bid_note(tricks, counted, sources, reasons)

    def _wants_nil(
        self, view: BotView, estimate: float, powers: Powers, partner_bid: Bid | None
    ) -> bool:
        if partner_bid is not None and (partner_bid.is_nil or partner_bid.tricks < 3):
            return False  # no double Nil, and a weak partner cannot cover
        limit = 1.0 if view.partner is not None else 0.6
        return estimate <= limit and nil_shape(view.hand, powers)

    def pass_cards(self, view: BotView) -> list[Card]:
        count = view.rules.blind_nil_pass_cards
        my_bid = view.bids[view.seat]
        ordered = cheapest_cards(view.rules, view.hand)
        if my_bid is not None and my_bid.is_nil:
            return ordered[-count:]  # the Nil bidder gives away its most dangerous cards
        return ordered[:count]

    # ------------------------------------------------------------------ play

    def play(self, view: BotView) -> Card:
        legal = sorted(view.legal_cards)
        if len(legal) == 1:
            return legal[0]
        powers = Powers(view.rules)
        situation = situation_of(view)
        plan = choose_plan(view, situation)
        if not view.current_trick:
            return self._lead(view, legal, powers, plan, situation)
        return self._follow(view, legal, powers, plan, situation)

    def _lead(
        self,
        view: BotView,
        legal: list[Card],
        powers: Powers,
        plan: Plan,
        situation: Situation,
    ) -> Card:
        out = view.cards_still_out()
        if plan in (Plan.NIL, Plan.DUCK, Plan.SET):
            # Low cards, from suits the others still hold (a void lets them discard or ruff).
            return min(
                legal, key=lambda card: (powers.rank_power(card), -suit_length(view.hand, card))
            )
        bosses = [card for card in legal if is_boss(card, out, powers)]
        side_bosses = [card for card in bosses if effective_suit(card) != SPADES]
        safe = [card for card in side_bosses if not opponents_void(view, effective_suit(card))]
        if safe:
            return max(safe, key=powers.rank_power)
        spade_bosses = [card for card in bosses if effective_suit(card) == SPADES]
        if spade_bosses and plan is Plan.MAKE:
            return max(spade_bosses, key=powers.rank_power)
        if plan is Plan.COVER and side_bosses:
            return max(side_bosses, key=powers.rank_power)
        # Otherwise lead low from the longest side suit, keeping trumps to ruff.
        side = [card for card in legal if effective_suit(card) != SPADES] or legal
        return min(side, key=lambda card: (-suit_length(view.hand, card), powers.rank_power(card)))

    def _follow(
        self,
        view: BotView,
        legal: list[Card],
        powers: Powers,
        plan: Plan,
        situation: Situation,
    ) -> Card:
        trick = view.current_trick
        led = effective_suit(trick[0][1])
        best_seat, best_card = max(trick, key=lambda play: powers.power(play[1], led))
        best_power = powers.power(best_card, led)
        winners = [card for card in legal if powers.power(card, led) > best_power]
        losers = [card for card in legal if powers.power(card, led) <= best_power]
        still_to_play = seats_after(view, len(trick))

        def cheapest(cards: Sequence[Card]) -> Card:
            # A card that cannot win first, then the engine's giving-away order.
            return min(
                cards, key=lambda card: (powers.power(card, led) > 0, powers.cheapness[card])
            )

        def highest(cards: Sequence[Card]) -> Card:
            return max(cards, key=lambda card: (powers.power(card, led), powers.rank_power(card)))

        def discard(cards: Sequence[Card]) -> Card:
            # Away from the trick: shed the highest side card (a danger later), keeping trumps.
            off = [card for card in cards if effective_suit(card) != SPADES] or list(cards)
            return max(off, key=lambda card: (card.rank, -suit_length(view.hand, card)))

        if plan is Plan.NIL:
            if losers:
                return highest(losers)
            return nil_forced_to_win(view, winners, still_to_play, led, powers)
        if plan is Plan.COVER:
            partner = situation.partner
            partner_played = any(seat == partner for seat, _ in trick)
            if partner_played and best_seat == partner and winners:
                return cheapest(winners) if not still_to_play else highest(winners)
            if not partner_played and winners:
                return highest(winners)  # go high, so my partner can stay under
            return cheapest(losers) if losers else cheapest(winners)
        if plan is Plan.SET:
            nil_seats = situation.clean_nil_opponents
            if best_seat in nil_seats and losers:
                return highest(losers)  # stay under the Nil bidder's card
            if any(seat in nil_seats for seat in still_to_play) and losers:
                return highest(losers) if len(losers) > 1 else losers[0]
            if losers:
                return discard(losers) if not following(losers, led) else cheapest(losers)
            return cheapest(winners)
        if plan is Plan.DUCK:
            if losers:
                return highest(losers)
            return highest(winners) if not still_to_play else cheapest(winners)
        # Plan.MAKE
        partner = situation.partner
        sure = [card for card in winners if holds(view, card, still_to_play, led, powers)]
        if partner is not None and best_seat == partner:
            if holds(view, best_card, still_to_play, led, powers) or not sure:
                return cheapest(losers) if losers else cheapest(winners)
            return cheapest(sure)
        if sure:
            return cheapest(sure)
        if winners and (not still_to_play or len(trick) >= 2 or not following(winners, led)):
            return cheapest(winners)  # last or third to play, or a ruff: worth trying
        if losers:
            return cheapest(losers) if following(losers, led) else shed_low(losers)
        return cheapest(winners)


def nil_forced_to_win(
    view: BotView, winners: Sequence[Card], still_to_play: Sequence[Seat], led: int, powers: Powers
) -> Card:
    """A Nil bidder's card when every legal card beats the winning one. With seats still to
    play, the lowest winner leaves the most room for a later card to take the trick (a partner
    covering, or an opponent with nothing lower); when even it surely wins, or nobody is left
    to play, the trick is lost anyway: shed the most dangerous card, the highest."""
    lowest = min(winners, key=lambda card: (powers.power(card, led), powers.rank_power(card)))
    if still_to_play and not holds(view, lowest, still_to_play, led, powers):
        return lowest
    return max(winners, key=lambda card: (powers.power(card, led), powers.rank_power(card)))


def shed_low(cards: Sequence[Card]) -> Card:
    """A discard that keeps my winners and trumps: the lowest side card, from a short suit."""
    off = [card for card in cards if effective_suit(card) != SPADES] or list(cards)
    return min(off, key=lambda card: (card.rank, suit_length(cards, card)))


# ---------------------------------------------------------------------- hand evaluation


def estimate_tricks(hand: Sequence[Card], rules: Rules, powers: Powers) -> float:
    """The tricks a hand should take with an average partner (Nil aside)."""
    total = 0.0
    for _, tricks in trick_sources(hand, rules, powers):
        total += tricks
    return total


def trick_sources(hand: Sequence[Card], rules: Rules, powers: Powers) -> list[tuple[str, float]]:
    """Where :func:`estimate_tricks` finds its tricks, in words: ``("AS", 1.0)`` for a sure
    trump, ``("AH", 1.0)`` for an ace, ``("ruffs", 1.6)`` for the spare trumps and short suits
    (the estimate is the sum, in this order)."""
    trumps = sorted(
        (card for card in hand if powers.trump[card]), key=powers.rank_power, reverse=True
    )
    deck_trumps = [number for number in powers.trumps_high_first if rules.deck_mask >> number & 1]
    sources: list[tuple[str, float]] = []
    top = 0
    for held_index, card in enumerate(trumps):
        higher = deck_trumps.index(card)  # trumps in the deck above this one
        if higher <= held_index:
            sources.append((str(card), 1.0))  # every higher trump is mine: a sure trick
            top += 1
        elif higher == held_index + 1 and len(trumps) > higher:
            sources.append((str(card), 0.75))  # a guarded king of trumps
            top += 1
        elif higher == held_index + 2 and len(trumps) > higher:
            sources.append((str(card), 0.5))
            top += 1
    spare = len(trumps) - top
    shortness = 0.0
    for suit in (Suit.CLUBS, Suit.DIAMONDS, Suit.HEARTS):
        cards = sorted((card for card in hand if card.suit == suit), key=lambda c: -c.rank)
        length = len(cards)
        by_rank = {card.rank: card for card in cards}
        ruffed_soon = length >= 6
        if 14 in by_rank:
            sources.append((str(by_rank[14]), 0.6 if ruffed_soon else 1.0))
        if 13 in by_rank and length >= 2:
            king = 0.3 if ruffed_soon else (0.85 if 14 in by_rank else 0.7)
            sources.append((str(by_rank[13]), king))
        if 12 in by_rank and length >= 3 and not ruffed_soon:
            sources.append((str(by_rank[12]), 0.45 if by_rank.keys() & {13, 14} else 0.25))
        shortness += {0: 2.0, 1: 1.0, 2: 0.4}.get(length, 0.0)
    ruffing = 0.8 * min(spare, shortness)
    length_tricks = 0.7 * max(0, len(trumps) - 3)  # the 4th and later trumps take tricks
    if ruffing >= min(length_tricks, spare):
        sources.append(("ruffs with spare trumps", ruffing))
    else:
        sources.append(("long trumps", min(length_tricks, spare)))
    return sources


def bid_note(
    bid: int, estimate: float, sources: Sequence[tuple[str, float]], reasons: Sequence[str]
) -> str:
    """The heuristic's sealed note for a bid: the count and where it came from, e.g. ``bid 4:
    counted 4.1 (AS 1, KS 0.75, AH 1, KH 0.85, ruffs with spare trumps 0.5)``."""
    counted = ", ".join(f"{name} {value:g}" for name, value in sources if value) or "nothing"
    words = "Nil" if bid == 0 else f"bid {bid}"
    note = f"{words}: counted {estimate:.1f} ({counted})"
    return "; ".join([note, *reasons])


def nil_shape(hand: Sequence[Card], powers: Powers) -> bool:
    """True for a hand of low cards that can duck every trick: no aces or high trumps, few
    spades, and every king or queen guarded by low cards of its suit."""
    trumps = [card for card in hand if powers.trump[card]]
    if len(trumps) > 3:
        return False
    if any(powers.trump[card] >= powers.trump[Card.parse("JS")] for card in trumps):
        return False
    if (
        len(trumps) == 3
        and max(powers.rank_power(card) for card in trumps) >= powers.trump[Card.parse("9S")]
    ):
        return False
    for suit in (Suit.CLUBS, Suit.DIAMONDS, Suit.HEARTS):
        cards = [card for card in hand if card.suit == suit]
        ranks = sorted((card.rank for card in cards), reverse=True)
        if 14 in ranks:
            return False
        if 13 in ranks and len(ranks) < 4:
            return False
        if 12 in ranks and len(ranks) < 3:
            return False
        if ranks and ranks[-1] >= 9:
            return False  # no low card to duck with
    return True


def nearest_legal_bid(wanted: int, legal: Sequence[int]) -> int:
    """``wanted`` if legal, else the closest legal number (never Nil by accident)."""
    numbers = [bid for bid in legal if bid > 0] or list(legal)
    return min(numbers, key=lambda bid: (abs(bid - wanted), -bid))


# ---------------------------------------------------------------------- the hand in progress


def situation_of(view: BotView) -> Situation:
    rules = view.rules
    bids = view.bids
    tricks = view.tricks_won
    mine = view.sides[view.my_side]
    tricks_left = rules.hand_size - len(view.tricks)

    def need(seats: Sequence[Seat]) -> int:
        # (Tricks are taken only once everyone has bid, so every seat here has a bid.)
        contract = sum(bid.tricks for seat in seats if (bid := bids[seat]) is not None)
        return contract - counting_tricks(rules, seats, bids, tricks)

    def clean_nil(seat: int) -> bool:
        bid = bids[seat]
        return bid is not None and bid.is_nil and tricks[seat] == 0

    partner = view.partner
    opponents = view.opponents()
    opponents_contract = max(
        (
            sum(bid.tricks for seat in side if (bid := bids[seat]) is not None)
            for side in view.sides
            if not set(side) & set(mine)
        ),
        default=0,
    )
    team_need = need(mine)
    return Situation(
        my_bid=bids[view.seat],
        partner=partner,
        partner_bid=bids[partner] if partner is not None else None,
        team_need=team_need,
        opponents_need=max(
            (need(side) for side in view.sides if not set(side) & set(mine)), default=0
        ),
        tricks_left=tricks_left,
        clean_nil_partner=partner is not None and clean_nil(partner),
        clean_nil_opponents=tuple(seat for seat in opponents if clean_nil(seat)),
        # (the overtricks already taken this hand are bags too)
        bag_room=rules.bag_limit - view.bags[view.my_side] - max(0, -team_need),
        opponents_contract=opponents_contract,
        bag_penalty=rules.bag_penalty,
    )


def choose_plan(view: BotView, situation: Situation) -> Plan:
    my_bid = situation.my_bid
    if my_bid is not None and my_bid.is_nil:
        return Plan.NIL
    if situation.clean_nil_partner:
        return Plan.COVER
    if situation.clean_nil_opponents and situation.team_need < situation.tricks_left - 1:
        return Plan.SET
    if situation.team_need > 0:
        return Plan.MAKE
    # Contract made. Keep taking tricks only while that can still set the opponents, and the
    # bags it takes are worth it: a set costs them twice their contract's points, a bag penalty
    # costs us the penalty.
    if situation.opponents_need > 0 and situation.tricks_left - situation.opponents_need <= 1:
        to_set = situation.tricks_left - situation.opponents_need + 1  # tricks we must take
        set_worth = 20 * situation.opponents_contract
        if to_set < situation.bag_room or set_worth > situation.bag_penalty:
            return Plan.MAKE
    return Plan.DUCK


# ---------------------------------------------------------------------- card facts


def suit_length(hand: Sequence[Card], card: Card) -> int:
    suit = effective_suit(card)
    return sum(1 for other in hand if effective_suit(other) == suit)


def is_boss(card: Card, out: Sequence[Card], powers: Powers) -> bool:
    """True when no card still out of the same suit ranks above ``card``."""
    suit = effective_suit(card)
    mine = powers.rank_power(card)
    return not any(
        effective_suit(other) == suit and powers.rank_power(other) > mine for other in out
    )


def opponents_void(view: BotView, suit: int) -> bool:
    return any(view.is_void(seat, Suit(suit)) for seat in view.opponents())


def following(cards: Sequence[Card], led: int) -> bool:
    return bool(cards) and effective_suit(cards[0]) == led


def seats_after(view: BotView, played: int) -> list[Seat]:
    """The seats still to play to this trick after me."""
    return list(view.seating.order_after(view.seat)[: view.player_count - played - 1])


def holds(
    view: BotView, card: Card, still_to_play: Sequence[int], led: int, powers: Powers
) -> bool:
    """True when ``card`` will win the trick whatever the seats still to play hold (as far as
    this seat can tell: a seat void in the led suit may trump)."""
    if not still_to_play:
        return True
    power = powers.power(card, led)
    for other in view.cards_still_out():
        if other == card or powers.power(other, led) <= power:
            continue
        other_suit = effective_suit(other)
        for seat in still_to_play:
            if view.is_void(seat, Suit(other_suit)):
                continue
            if other_suit != led and not view.is_void(seat, Suit(led)):
                continue  # they must follow the led suit while they hold it (unknown: assume so)
            return False
    return True
