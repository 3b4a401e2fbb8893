"""Scripted hands: a preset deal and a legal play script that give chosen bids and trick counts.

``scripted_hand(bids, tricks)`` builds, for the default 4-player deck, a deal in which every
seat's tricks are fixed in advance, whoever leads first:

- tricks 1-9 each use four cards of one non-spade suit (three tricks per suit), one per seat;
  the trick's winner holds the highest, and everyone else can follow;
- trick 10 uses the four cards left over (the 2♣, 2♦, 2♥ and 2♠). The 2♠ is held by that
  trick's winner, who is never trick 9's winner, so trick 10 is led with a non-spade that the
  other three are void in, and the 2♠ wins it and breaks spades;
- tricks 11-13 are spade tricks, every seat holding three spades.

A single seat taking all 13 tricks gets all thirteen spades instead (the others one suit each).
The script says which card each seat plays to each trick, so :func:`play_hand` simply follows
``state.turn``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from spades.engine import (
    BLIND,
    LOOK,
    Action,
    Bid,
    Card,
    MakeBid,
    MatchState,
    Phase,
    PlayCard,
    Rules,
    apply,
    parse_cards,
    seated_match,
)
from spades.engine.cards import CARDS, iter_cards
from spades.engine.events import Event, HandScored, MatchEnded
from spades.engine.shuffle import first_dealer

SEATS = 4
TRICKS = 13


def suit_cards(suit: int) -> list[Card]:
    """The thirteen cards of a suit, lowest first."""
    return [CARDS[suit * 13 + rank] for rank in range(13)]


@dataclass(frozen=True)
class ScriptedHand:
    """One hand: each seat's bid, its cards, and the card it plays to each trick."""

    bids: tuple[Bid, ...]
    tricks: tuple[int, ...]
    deal: tuple[tuple[Card, ...], ...]
    #: ``plays[trick][seat]`` is the card ``seat`` plays to that trick (0-based trick index).
    plays: tuple[tuple[Card, ...], ...]
    winners: tuple[int, ...]


def _winner_order(tricks: Sequence[int]) -> list[int]:
    """Who wins tricks 1..13, with trick 10's winner different from trick 9's."""
    winners = [seat for seat in range(SEATS) for _ in range(tricks[seat])]
    if winners[9] == winners[8]:
        other = next(index for index, seat in enumerate(winners) if seat != winners[8])
        winners[9], winners[other] = winners[other], winners[9]
    return winners


def scripted_hand(bids: Sequence[Bid | int], tricks: Sequence[int]) -> ScriptedHand:
    """A deal and play script for four seats with these bids and trick counts (summing to 13)."""
    if len(bids) != SEATS or len(tricks) != SEATS:
        raise ValueError("give one bid and one trick count per seat")
    if sum(tricks) != TRICKS or min(tricks) < 0:
        raise ValueError(f"trick counts must be non-negative and sum to 13, not {tricks}")
    the_bids = tuple(bid if isinstance(bid, Bid) else Bid(bid) for bid in bids)
    if max(tricks) == TRICKS:
        return _one_seat_takes_all(the_bids, tuple(tricks))

    winners = _winner_order(tricks)
    plays: list[list[Card]] = []
    # Tricks 1-9: ranks 3..A of clubs, diamonds and hearts, four consecutive ranks per trick.
    for suit in range(3):
        cards = suit_cards(suit)[1:]
        for block in range(3):
            plays.append(_trick_cards(cards[block * 4 : block * 4 + 4], winners[len(plays)]))
    # Trick 10: the four twos, the 2♠ to the winner.
    winner = winners[9]
    twos = [suit_cards(suit)[0] for suit in range(3)]
    trick: list[Card] = []
    for seat in range(SEATS):
        trick.append(suit_cards(3)[0] if seat == winner else twos.pop())
    plays.append(trick)
    # Tricks 11-13: the other spades.
    spades = suit_cards(3)[1:]
    for block in range(3):
        plays.append(_trick_cards(spades[block * 4 : block * 4 + 4], winners[10 + block]))
    return _hand(the_bids, tuple(tricks), plays, winners)


def _trick_cards(cards: Sequence[Card], winner: int) -> list[Card]:
    """Four cards of a suit, one per seat, the highest to ``winner``."""
    lower = list(cards[:3])
    return [cards[3] if seat == winner else lower.pop() for seat in range(SEATS)]


def _one_seat_takes_all(bids: tuple[Bid, ...], tricks: tuple[int, ...]) -> ScriptedHand:
    # The winner holds every spade and trumps or leads spades; the others hold one suit each.
    winner = tricks.index(TRICKS)
    others = [seat for seat in range(SEATS) if seat != winner]
    plays = []
    for index in range(TRICKS):
        trick = [CARDS[0]] * SEATS
        trick[winner] = suit_cards(3)[index]
        for suit, seat in enumerate(others):
            trick[seat] = suit_cards(suit)[index]
        plays.append(trick)
    return _hand(bids, tricks, plays, [winner] * TRICKS)


def _hand(
    bids: tuple[Bid, ...], tricks: tuple[int, ...], plays: list[list[Card]], winners: list[int]
) -> ScriptedHand:
    deal = tuple(tuple(sorted(trick[seat] for trick in plays)) for seat in range(SEATS))
    return ScriptedHand(bids, tricks, deal, tuple(tuple(t) for t in plays), tuple(winners))


def play_hand(state: MatchState, hand: ScriptedHand) -> tuple[MatchState, list[Event]]:
    """Play one scripted hand from its first decision to its HandScored (and what follows).

    Eligible seats choose Blind Nil when their scripted bid is Blind Nil, and look otherwise.
    """
    events: list[Event] = []
    hand_number = state.hand_number
    while state.hand_number == hand_number and not state.is_over:
        seat = state.seat_to_act()
        action: Action
        if state.phase is Phase.BLIND_NIL_CHOICE:
            action = BLIND if hand.bids[seat].blind else LOOK
        elif state.phase is Phase.BIDDING:
            action = MakeBid(hand.bids[seat].tricks)
        elif state.phase is Phase.PLAYING:
            action = PlayCard(hand.plays[len(state.completed_tricks)][seat])
        else:
            raise AssertionError(f"a scripted hand does not expect {state.phase}")
        state, more = apply(state, seat, action)
        events.extend(more)
    return state, events


def play_hands(
    hands: Sequence[ScriptedHand], rules: Rules | None = None, seed: bytes = bytes(32)
) -> tuple[MatchState, list[Event]]:
    """A seated match whose first hands are these, all played; returns the state and events."""
    state, events = seated_match(rules or Rules(), seed, preset_deals=[h.deal for h in hands])
    for hand in hands:
        state, more = play_hand(state, hand)
        events.extend(more)
    return state, events


def hand_scores(events: Sequence[Event]) -> list[HandScored]:
    """The HandScored events, in order."""
    return [event for event in events if isinstance(event, HandScored)]


def match_end(events: Sequence[Event]) -> MatchEnded | None:
    """The MatchEnded event, if the match ended."""
    return next((event for event in events if isinstance(event, MatchEnded)), None)


# ---------------------------------------------------------------- hand-built positions


def seed_with_dealer(dealer: int, players: int = 4) -> bytes:
    """A seed whose first dealer is ``dealer``."""
    for byte in range(256):
        seed = bytes([byte]) * 32
        if first_dealer(seed, players) == dealer:
            return seed
    raise AssertionError(f"no simple seed makes seat {dealer} deal")


def deal_with(hands: Mapping[int, str], rules: Rules | None = None) -> list[list[Card]]:
    """One hand's deal: the given seats hold the given cards ("AS KS 2C ..."), and the rest of
    the deck goes, lowest first, to fill every seat up to the hand size (the leftover card of
    plain cutthroat is the highest card not given)."""
    rules = rules or Rules()
    given = {seat: parse_cards(text) for seat, text in hands.items()}
    used = {number for cards in given.values() for number in cards}
    if len(used) != sum(len(cards) for cards in given.values()):
        raise ValueError("a card is given twice")
    spare = [CARDS[n] for n in iter_cards(rules.deck_mask) if n not in used]
    deal = []
    for seat in range(rules.players):
        cards = list(given.get(seat, []))
        while len(cards) < rules.hand_size:
            cards.append(spare.pop(0))
        deal.append(cards)
    return deal


def table(
    rules: Rules | None = None,
    hands: Mapping[int, str] | None = None,
    dealer: int = 0,
    more_deals: Sequence[Sequence[Sequence[int]]] = (),
) -> MatchState:
    """A seated match, first hand dealt by ``dealer`` with ``hands`` (see :func:`deal_with`)."""
    rules = rules or Rules()
    first = deal_with(hands or {}, rules)
    seed = seed_with_dealer(dealer, rules.players)
    state, _ = seated_match(rules, seed, preset_deals=[first, *more_deals])
    return state


def bid_round(state: MatchState, bids: Mapping[int, int] | None = None) -> MatchState:
    """Everyone on turn bids (``bids[seat]``, 3 by default; look at any Blind Nil choice) until
    play starts."""
    bids = bids or {}
    while state.phase in (Phase.BIDDING, Phase.BLIND_NIL_CHOICE):
        seat = state.seat_to_act()
        action: Action = (
            LOOK if state.phase is Phase.BLIND_NIL_CHOICE else MakeBid(bids.get(seat, 3))
        )
        state, _ = apply(state, seat, action)
    return state


def card_pass(rules: Rules, hands: Mapping[int, str]) -> MatchState:
    """West dealt ``hands``; North bid Blind Nil, the others looked and bid 3: South (North's
    partner) is on turn to pass."""
    state = table(rules, hands, dealer=3)
    state, _ = apply(state, 0, BLIND)
    for seat in (1, 2, 3):
        state, _ = apply(state, seat, LOOK)
    return bid_round(state)


def play(state: MatchState, *cards: str) -> MatchState:
    """Whoever is on turn plays each card in order."""
    for text in cards:
        state, _ = apply(state, state.seat_to_act(), PlayCard(Card.parse(text)))
    return state
