"""Worlds a seat cannot tell apart: complete states that agree with everything it knows.

A search bot cannot see the other hands, so it imagines them: :func:`sample_world` deals the
cards the seat has not seen to the seats that may hold them, uniformly among every deal that
agrees with the seat's view: its own cards, every card played, the cards it passed or was
passed in the Blind Nil pass (the seat's folded state keeps those in the right hands), the suits
a seat showed void in by not following, and the spades lead that shows a seat held nothing
else. The result is an ordinary :class:`~spades.engine.MatchState`, ready to play out with
``legal_actions``, ``act`` and ``clone`` (:class:`Line` keeps a stack for playing forward and
back); the hands after this one are dealt from a seed drawn from ``rng``.

Uniform means counting: the number of deals with ``k`` cards of each suit per holder is a
product of binomials, so the sampler picks the suit counts with exactly that weight (a table
computed once per view) and then shuffles within each suit. Rejection sampling would be
simpler, but a few voids make most shuffles fail.

>>> import random
>>> from spades.bot import BotView
>>> from spades.engine import Rules, seated_match
>>> state, _ = seated_match(Rules(), seed=bytes(32))
>>> north = BotView(state, 0)
>>> world = sample_world(north, random.Random(1))
>>> world.hands[0] == state.hands[0], sum(hand.bit_count() for hand in world.hands)
(True, 52)
"""

from __future__ import annotations

import random
from bisect import bisect_right
from functools import cache
from itertools import accumulate
from math import factorial
from typing import Final

from spades.bot.view import BotView
from spades.engine import (
    Action,
    MatchState,
    Phase,
    PlayCard,
    Suit,
    act,
    cards_of,
    effective_suit,
)
from spades.engine import events as ev
from spades.engine.rules import TWO_OF_CLUBS

_SUITS: Final = tuple(Suit)
_FACTORIALS: Final = tuple(factorial(n) for n in range(55))
_IN_HAND: Final = (Phase.BLIND_NIL_CHOICE, Phase.BIDDING, Phase.PASSING, Phase.PLAYING)


class Holders:
    """Who may hold the cards a seat has not seen: each hidden seat (and, when the deck is not
    dealt out, the undealt cards), how many it holds, and the suits it cannot hold."""

    def __init__(self, view: BotView) -> None:
        if view.phase not in _IN_HAND:
            raise ValueError(f"there are no hidden hands to sample {view.phase.value!r}")
        state = view.state  # the seat's folded state: other hands hold only the cards it knows
        rules = view.rules
        self.view = view
        self.known = list(state.hands)
        sizes = list(hand_sizes(view))
        if not state.visible[view.seat]:
            self.known[view.seat] = 0  # not looked yet (Blind Nil): the seat's own hand is hidden
        seen = view.played_cards.union(*(cards_of(mask) for mask in self.known))
        self.pool = [card for card in cards_of(rules.deck_mask) if card not in seen]
        #: One entry per holder: its seat (-1 for the undealt cards) and how many it lacks.
        self.seats: list[int] = []
        self.missing: list[int] = []
        voids = inferred_voids(view)
        self.void_suits: list[frozenset[int]] = []
        for seat in range(rules.players):
            lacking = sizes[seat] - self.known[seat].bit_count()
            if lacking:
                self.seats.append(seat)
                self.missing.append(lacking)
                self.void_suits.append(frozenset(voids[seat]))
        undealt = len(self.pool) - sum(self.missing)
        if undealt:
            self.seats.append(-1)
            self.missing.append(undealt)
            self.void_suits.append(frozenset())
        self.by_suit = [[card for card in self.pool if effective_suit(card) == s] for s in _SUITS]
        # Per (suit, room left per holder): the deals of the remaining suits, and the ways
        # to split this suit with their cumulative weights (computed once per view).
        self.memo: dict[tuple[int, tuple[int, ...]], int] = {}
        self.choices: dict[
            tuple[int, tuple[int, ...]], tuple[list[tuple[int, ...]], list[int]]
        ] = {}
        self.allowed = [
            tuple(index for index, void in enumerate(self.void_suits) if suit not in void)
            for suit in _SUITS
        ]

    @property
    def unconstrained(self) -> bool:
        return not any(self.void_suits)

    def count(self) -> int:
        """How many deals of the hidden cards agree with the view."""
        return _ways(self, 0, tuple(self.missing))

    def deal(self, rng: random.Random) -> list[int]:
        """One deal of the hidden cards, uniformly among those that agree: a card mask per
        holder, in the order of ``seats``."""
        masks = [0] * len(self.seats)
        if self.unconstrained:
            cards = self.pool[:]
            rng.shuffle(cards)
            start = 0
            for index, lacking in enumerate(self.missing):
                for number in cards[start : start + lacking]:
                    masks[index] |= 1 << number
                start += lacking
            return masks
        room = tuple(self.missing)
        for suit in _SUITS:
            key = (suit, room)
            choices = self.choices.get(key)
            if choices is None:
                splits = _splits(self, suit, room)
                choices = self.choices[key] = (
                    [split for split, _ in splits],
                    list(accumulate(ways for _, ways in splits)),
                )
            options, bounds = choices
            if not bounds:
                raise ValueError("no deal of the hidden cards agrees with this view")
            split = options[bisect_right(bounds, rng.randrange(bounds[-1]))]
            cards = self.by_suit[suit][:]
            rng.shuffle(cards)
            start = 0
            for index, taken in enumerate(split):
                for number in cards[start : start + taken]:
                    masks[index] |= 1 << number
                start += taken
            room = tuple(r - t for r, t in zip(room, split, strict=True))
        return masks


def _splits(
    holders: Holders, suit: int, room: tuple[int, ...]
) -> list[tuple[tuple[int, ...], int]]:
    """Each way to hand out this suit's hidden cards within ``room`` (counts per holder), with
    the number of whole deals that start with it (the later suits included)."""
    allowed = holders.allowed[suit]
    cards = len(holders.by_suit[suit])
    found: list[tuple[tuple[int, ...], int]] = []
    for parts in _compositions(cards, len(allowed)):
        split = [0] * len(room)
        for holder, taken in zip(allowed, parts, strict=True):
            if taken > room[holder]:
                break
            split[holder] = taken
        else:
            after = tuple(r - t for r, t in zip(room, split, strict=True))
            rest = _ways(holders, suit + 1, after)
            if rest:
                orderings = _FACTORIALS[cards]
                for taken in parts:
                    orderings //= _FACTORIALS[taken]
                found.append((tuple(split), orderings * rest))
    return found


@cache
def _compositions(total: int, parts: int) -> tuple[tuple[int, ...], ...]:
    """Every way to write ``total`` as ``parts`` counts in order (none when parts is 0)."""
    if parts <= 1:
        return ((total,),) if parts == 1 else (() if total else ((),))
    return tuple(
        (first, *rest)
        for first in range(total + 1)
        for rest in _compositions(total - first, parts - 1)
    )


def _ways(holders: Holders, suit: int, room: tuple[int, ...]) -> int:
    """Deals of the suits from ``suit`` on that fill exactly ``room`` (memoized per view)."""
    if suit == len(_SUITS):
        return 0 if any(room) else 1
    key = (suit, room)
    found = holders.memo.get(key)
    if found is None:
        found = holders.memo[key] = sum(ways for _, ways in _splits(holders, suit, room))
    return found


def hand_sizes(view: BotView) -> tuple[int, ...]:
    """How many cards each seat holds now, the Blind Nil pass included (the first card pass
    of a pair leaves the passer short and the bidder long until the pass back): the engine
    counts them so (cards dealt, moved by the pass, minus those played)."""
    return tuple(view.hand_sizes())


def inferred_voids(view: BotView) -> dict[int, set[int]]:
    """The suits each seat cannot hold now: those it did not follow, and, for a seat that led
    a spade before spades were broken, every other suit (it was allowed to only when it held
    nothing else)."""
    voids: dict[int, set[int]] = {seat: set(suits) for seat, suits in view.voids().items()}
    rules = view.rules
    if not rules.spades_must_be_broken:
        return voids
    broken = False
    leads = [(trick.leader, trick.cards) for trick in view.tricks]
    if view.current_trick:
        leads.append((view.current_trick[0][0], tuple(card for _, card in view.current_trick)))
    for leader, cards in leads:
        if not broken and effective_suit(cards[0]) == Suit.SPADES:
            voids[leader].update((Suit.CLUBS, Suit.DIAMONDS, Suit.HEARTS))
        broken = broken or any(effective_suit(card) == Suit.SPADES for card in cards)
    return voids


def sample_world(view: BotView, rng: random.Random, holders: Holders | None = None) -> MatchState:
    """A complete state the seat of ``view`` cannot tell from the real one, drawn uniformly
    among all such states; pass the view's :class:`Holders` to sample many worlds cheaply."""
    holders = holders if holders is not None else Holders(view)
    prompted = any(isinstance(action, PlayCard) for action in view.legal_actions)
    for _ in range(MAX_REDEALS):
        world = _deal_world(view, holders, rng)
        # A seat prompted to lead the first trick knows it leads, though its view cannot say
        # who holds the 2♣: only the deals that make it the leader agree with what it knows
        # (drawing again until one does keeps the draw uniform among those).
        if not prompted or world.turn == view.seat:
            return world
    return world


#: Deals drawn at most for a world that agrees with the seat's prompt (one is nearly always
#: enough; a cutthroat leader without the 2♣ needs the 2♣ undealt, about one deal in 35).
MAX_REDEALS = 1000


def _deal_world(view: BotView, holders: Holders, rng: random.Random) -> MatchState:
    world = view.state
    hands = holders.known[:]
    for seat, mask in zip(holders.seats, holders.deal(rng), strict=True):
        if seat >= 0:
            hands[seat] |= mask
    world.hands = hands
    world.seed = rng.randbytes(32)  # the hands after this one: unknown to all, so any deal
    world.preset_deals = ()
    if world.phase is Phase.PLAYING and world.leader is None:
        # A view that cannot see the 2♣ cannot name the first leader; the world can. (The
        # engine's rule: the holder of the 2♣ leads, or the dealer's left if it is undealt.)
        holder = next((s for s, hand in enumerate(hands) if hand >> TWO_OF_CLUBS & 1), None)
        assert world.dealer is not None  # cards are being played: the hand was dealt
        world.leader = holder if holder is not None else world.next_seat(world.dealer)
        world.turn = world.leader
    return world


class Line:
    """Playing forward and back from a state: :meth:`push` plays an action, :meth:`pop`
    takes it back. Each step is a clone (the engine's states are cheap to copy), so the
    states on the stack never change.

    >>> from spades.engine import Rules, legal_actions, seated_match
    >>> state, _ = seated_match(Rules(), seed=bytes(32))
    >>> line = Line(state)
    >>> _ = line.push(legal_actions(state, state.turn)[0])
    >>> line.state.turn != state.turn, line.pop() is not state, line.state is state
    (True, True, True)
    """

    def __init__(self, state: MatchState) -> None:
        self._states = [state]

    @property
    def state(self) -> MatchState:
        return self._states[-1]

    @property
    def depth(self) -> int:
        """Actions played since the start."""
        return len(self._states) - 1

    def push(self, action: Action, seat: int | None = None) -> list[ev.Event]:
        """Play ``action`` for ``seat`` (the seat on turn by default); returns its events."""
        new = self.state.clone()
        events = act(new, new.seat_to_act() if seat is None else seat, action)
        self._states.append(new)
        return events

    def pop(self) -> MatchState:
        """Take the last action back; returns the state it had led to."""
        if len(self._states) == 1:
            raise IndexError("nothing to take back")
        return self._states.pop()
