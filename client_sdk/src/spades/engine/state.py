"""The match state: everything a table's events determine, and folding one event into it.

A :class:`MatchState` changes only by folding events (:meth:`MatchState.evolve`), each through
the one evolver registered for its type in :data:`EVOLVERS`, so a state rebuilt from a table's
events is exactly the state that produced them. This module knows nothing of acting: what a
seat may do is in :mod:`spades.engine.legal`, deciding an action's events in
:mod:`spades.engine.commands`, and :mod:`spades.engine.acting` offers both as the calls a table
or a bot makes (both build on this module, never the other way round).

>>> from spades.engine import Rules, seated_match
>>> state, events = seated_match(Rules(), seed=bytes(32))
>>> folded = MatchState.from_events(events)
>>> folded.phase, folded.turn == folded.next_seat(folded.dealer), folded.hands == state.hands
(<Phase.BIDDING: 'bidding'>, True, True)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from enum import Enum
from typing import Any, Final, TypeVar

from spades.engine import events as ev
from spades.engine.actions import Bid
from spades.engine.cards import Card, cards_of, mask_of
from spades.engine.errors import IllegalAction
from spades.engine.game import Game
from spades.engine.rules import TWO_OF_CLUBS, Rules
from spades.engine.seating import Seat, Seating
from spades.engine.tricks import PLAYS, CompletedTrick, Play
from spades.reasons import Reason

_T = TypeVar("_T")


class Phase(Enum):
    """Where a match is."""

    WAITING_FOR_PLAYERS = "waiting for players"
    BLIND_NIL_CHOICE = "blind nil choice"
    BIDDING = "bidding"
    PASSING = "passing"
    PLAYING = "playing"
    ENDED = "ended"


class MatchState:
    """Everything about a match that its events determine.

    Create one with :func:`~spades.engine.commands.new_match` or :meth:`from_events`; act on
    it with :mod:`spades.engine.acting` (``apply`` returns a new state, ``act`` changes this one
    in place, for search together with :meth:`clone`).
    """

    __slots__ = (
        "automatic_for",
        "automatic_play",
        "bags",
        "bids",
        "blind_pending",
        "completed_tricks",
        "counts_before_play",
        "dealer",
        "end",
        "extension_claimed",
        "game",
        "hand_number",
        "hand_results",
        "hands",
        "leader",
        "passes_pending",
        "phase",
        "played",
        "players",
        "preset_deals",
        "rules",
        "scores",
        "seed",
        "seed_commitment",
        "spades_broken",
        "substitutions",
        "timeout_streaks",
        "timeouts",
        "trick",
        "tricks_won",
        "turn",
        "visible",
    )

    rules: Rules
    game: Game
    seed: bytes | None
    seed_commitment: bytes
    preset_deals: tuple[tuple[tuple[Card, ...], ...], ...]
    players: list[tuple[str, bool] | None]
    phase: Phase
    hand_number: int
    #: None before the first hand.
    dealer: Seat | None
    #: Each seat's cards as a bitmask (0 for a hand this state may not see).
    hands: list[int]
    visible: list[bool]
    #: Per seat: the cards it held when play began (dealt, then moved by the Blind Nil pass);
    #: known from the events' card counts even when the cards are hidden.
    counts_before_play: tuple[int, ...]
    blind_pending: tuple[Seat, ...]
    bids: list[Bid | None]
    passes_pending: tuple[tuple[Seat, Seat], ...]
    #: The seat to act, None when no one is.
    turn: Seat | None
    #: The seat that leads (or led) the current trick; None when a view cannot know it yet.
    leader: Seat | None
    #: The current trick's plays, in order.
    trick: list[Play]
    tricks_won: list[int]
    completed_tricks: tuple[CompletedTrick, ...]
    spades_broken: bool
    played: int
    scores: list[int]
    bags: list[int]
    hand_results: tuple[ev.HandScored, ...]
    timeouts: int
    #: Per seat: its turns timed out in a row (its own action, a substitution or a reclaim
    #: ends a run; an automatic action does not).
    timeout_streaks: tuple[int, ...]
    #: The seat whose automatic action comes next (right after its TurnTimedOut), else None.
    automatic_for: Seat | None
    #: Per seat: why a substitute plays it, or None while its player does.
    substitutions: tuple[ev.SubstitutionReason | None, ...]
    #: Bitmask of the seats with a timeout or a substitute this hand (HandScored.automatic_play).
    automatic_play: int
    #: True while the latest event is the seat on turn claiming its extension.
    extension_claimed: bool
    end: ev.MatchEnded | None

    def __init__(self) -> None:
        """An empty state, before its TableCreated event; use :func:`new_match` instead."""
        self.phase = Phase.WAITING_FOR_PLAYERS
        self.turn = None
        self.end = None
        self.extension_claimed = False

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_events(cls, events: Iterable[ev.Event]) -> MatchState:
        """Fold a table's events, starting with its TableCreated."""
        state = cls()
        for event in events:
            state.evolve(event)
        return state

    def clone(self) -> MatchState:
        """An independent copy, cheap enough for search."""
        # Every slot, spelled out (a loop of getattr/setattr costs ~3x more, and apply clones
        # once per action); the lists are copied, everything else is immutable and shared.
        other = MatchState.__new__(MatchState)
        other.automatic_for = self.automatic_for
        other.automatic_play = self.automatic_play
        other.bags = self.bags[:]
        other.bids = self.bids[:]
        other.blind_pending = self.blind_pending
        other.completed_tricks = self.completed_tricks
        other.counts_before_play = self.counts_before_play
        other.dealer = self.dealer
        other.end = self.end
        other.extension_claimed = self.extension_claimed
        other.game = self.game
        other.hand_number = self.hand_number
        other.hand_results = self.hand_results
        other.hands = self.hands[:]
        other.leader = self.leader
        other.passes_pending = self.passes_pending
        other.phase = self.phase
        other.played = self.played
        other.players = self.players[:]
        other.preset_deals = self.preset_deals
        other.rules = self.rules
        other.scores = self.scores[:]
        other.seed = self.seed
        other.seed_commitment = self.seed_commitment
        other.spades_broken = self.spades_broken
        other.substitutions = self.substitutions
        other.timeout_streaks = self.timeout_streaks
        other.timeouts = self.timeouts
        other.trick = self.trick[:]
        other.tricks_won = self.tricks_won[:]
        other.turn = self.turn
        other.visible = self.visible[:]
        return other

    # ------------------------------------------------------------------ questions

    @property
    def seating(self) -> Seating:
        return self.game.seating

    @property
    def players_count(self) -> int:
        return self.game.players

    def next_seat(self, seat: Seat) -> Seat:
        """The seat after ``seat`` in the direction of play."""
        return self.game.seating.next(seat)

    def partner(self, seat: Seat) -> Seat | None:
        """The partner's seat, or None in cutthroat."""
        return self.game.seating.partner(seat)

    def side_of(self, seat: Seat) -> int:
        """The index of the scoring side the seat belongs to."""
        return self.game.seating.side_of(seat)

    @property
    def is_over(self) -> bool:
        return self.phase is Phase.ENDED

    def seat_to_act(self) -> Seat:
        """The seat on turn, for a loop that plays a match out; raises
        :class:`~spades.engine.errors.IllegalAction` when no one is to act (see :attr:`turn`)."""
        if self.turn is None:
            raise IllegalAction(Reason.NO_ONE_TO_ACT, "no one is to act now")
        return self.turn

    def hand_of(self, seat: Seat) -> list[Card]:
        """The cards a seat holds (whether or not it may see them yet)."""
        return cards_of(self.hands[seat])

    def card_count(self, seat: Seat) -> int:
        """How many cards ``seat`` holds now (known even where the cards are hidden)."""
        played = len(self.completed_tricks)
        for play in self.trick:
            if play.seat == seat:
                played += 1
        return self.counts_before_play[seat] - played

    def current_trick(self) -> list[Play]:
        """The cards on the table, each with the seat that played it."""
        return list(self.trick)

    # ------------------------------------------------------------------ folding events

    def evolve(self, event: ev.Event) -> None:
        """Fold one event into this state (the only way a state changes)."""
        self.extension_claimed = False
        EVOLVERS[type(event)](self, event)


# ---------------------------------------------------------------------- the evolvers

#: How each event type folds into a state: the one place an event changes a state.
EVOLVERS: Final[dict[type, Callable[[MatchState, Any], None]]] = {}

_E = TypeVar("_E")


def _evolver(
    kind: type[_E],
) -> Callable[[Callable[[MatchState, _E], None]], Callable[[MatchState, _E], None]]:
    def register(fold: Callable[[MatchState, _E], None]) -> Callable[[MatchState, _E], None]:
        EVOLVERS[kind] = fold
        return fold

    return register


@_evolver(ev.TableCreated)
def _table_created(state: MatchState, event: ev.TableCreated) -> None:
    rules = event.rules
    game = rules.game
    players = game.players
    state.rules = rules
    state.game = game
    state.seed = event.seed
    state.seed_commitment = event.seed_commitment
    state.preset_deals = event.preset_deals or ()
    state.players = [None] * players
    state.phase = Phase.WAITING_FOR_PLAYERS
    state.hand_number = 0
    state.dealer = None
    state.hands = [0] * players
    state.visible = [False] * players
    state.counts_before_play = (0,) * players
    state.blind_pending = ()
    state.bids = [None] * players
    state.passes_pending = ()
    state.turn = None
    state.leader = None
    state.trick = []
    state.tricks_won = [0] * players
    state.completed_tricks = ()
    state.spades_broken = False
    state.played = 0
    state.scores = [0] * len(game.sides)
    state.bags = [0] * len(game.sides)
    state.hand_results = ()
    state.timeouts = 0
    state.timeout_streaks = (0,) * players
    state.automatic_for = None
    state.substitutions = (None,) * players
    state.automatic_play = 0
    state.end = None


@_evolver(ev.SeatTaken)
def _seat_taken(state: MatchState, event: ev.SeatTaken) -> None:
    state.players[event.seat] = (event.name, event.bot)


@_evolver(ev.SeatLeft)
def _seat_left(state: MatchState, event: ev.SeatLeft) -> None:
    state.players[event.seat] = None


@_evolver(ev.HandStarted)
def _hand_started(state: MatchState, event: ev.HandStarted) -> None:
    players = state.game.players
    state.hand_number = event.hand_number
    state.dealer = event.dealer
    state.hands = [0] * players
    state.visible = [False] * players
    state.counts_before_play = (0,) * players
    state.blind_pending = event.blind_nil_eligible
    state.bids = [None] * players
    state.passes_pending = ()
    state.trick = []
    state.tricks_won = [0] * players
    state.completed_tricks = ()
    state.spades_broken = False
    state.played = 0
    state.automatic_play = sum(
        1 << seat for seat, reason in enumerate(state.substitutions) if reason is not None
    )
    state.phase = Phase.BLIND_NIL_CHOICE if event.blind_nil_eligible else Phase.BIDDING
    _advance(state)


@_evolver(ev.CardsDealt)
def _cards_dealt(state: MatchState, event: ev.CardsDealt) -> None:
    fold_cards_dealt(state, event, None if event.cards is None else mask_of(event.cards))


def fold_cards_dealt(state: MatchState, event: ev.CardsDealt, mask: int | None) -> None:
    """The evolver of CardsDealt, given the mask of ``event.cards`` (the deal of commands
    calls it directly: it has the mask already)."""
    if mask is not None:
        state.hands[event.seat] = mask
    state.visible[event.seat] = not event.face_down
    state.counts_before_play = _with(state.counts_before_play, event.seat, event.card_count)


@_evolver(ev.BlindNilChosen)
def _blind_nil_chosen(state: MatchState, event: ev.BlindNilChosen) -> None:
    if state.timeout_streaks[event.seat]:
        _seat_acted(state, event.seat)
    state.blind_pending = tuple(seat for seat in state.blind_pending if seat != event.seat)
    _advance(state)


@_evolver(ev.CardsShown)
def _cards_shown(state: MatchState, event: ev.CardsShown) -> None:
    if event.cards is not None:
        state.hands[event.seat] = mask_of(event.cards)
    state.visible[event.seat] = True


@_evolver(ev.BidMade)
def _bid_made(state: MatchState, event: ev.BidMade) -> None:
    fold_bid(state, event.seat, event.bid)


def fold_bid(state: MatchState, seat: Seat, bid: Bid) -> None:
    """The evolver of BidMade, from the event's fields (the bid path of commands calls it
    directly: a decorated evolver is a Python-level call in the compiled build)."""
    if state.timeout_streaks[seat]:
        _seat_acted(state, seat)
    state.bids[seat] = bid
    _advance(state)


@_evolver(ev.CardsPassed)
def _cards_passed(state: MatchState, event: ev.CardsPassed) -> None:
    giver, receiver = event.from_seat, event.to_seat
    if state.timeout_streaks[giver]:
        _seat_acted(state, giver)
    if event.cards is not None:
        mask = mask_of(event.cards)
        state.hands[giver] &= ~mask
        state.hands[receiver] |= mask
    counts = state.counts_before_play
    counts = _with(counts, giver, counts[giver] - event.card_count)
    state.counts_before_play = _with(counts, receiver, counts[receiver] + event.card_count)
    state.passes_pending = state.passes_pending[1:]
    _advance(state)


@_evolver(ev.CardPlayed)
def _card_played(state: MatchState, event: ev.CardPlayed) -> None:
    fold_play(state, event.seat, event.card)


def fold_play(state: MatchState, seat: Seat, card: int) -> None:
    """The evolver of CardPlayed, from the event's fields (the play path of commands calls it
    directly, with plain ints: the hot path of search and random play)."""
    if state.timeout_streaks[seat]:
        _seat_acted(state, seat)
    trick = state.trick
    if not trick:
        # The seat that plays first led (a fold of redacted events may not know who holds
        # the 2♣ that must lead, but it sees who played).
        state.leader = seat
    bit = 1 << card
    hands = state.hands
    hands[seat] = hands[seat] & ~bit
    state.played |= bit
    trick.append(PLAYS[seat][card])
    game = state.game
    if game.trump_power[card]:
        state.spades_broken = True
    if len(trick) == game.players:
        state.turn = None
    else:
        state.turn = game.next_seat[seat]


@_evolver(ev.TrickWon)
def _trick_won(state: MatchState, event: ev.TrickWon) -> None:
    fold_trick(state, event.winner)


def fold_trick(state: MatchState, winner: Seat) -> None:
    """The evolver of TrickWon, from its winner (the play path of commands calls it directly)."""
    state.tricks_won[winner] += 1
    # (tuple.__new__ makes the named tuple without the Python-level __new__ it generates)
    completed = _new_tuple(CompletedTrick, (tuple(state.trick), winner))
    state.completed_tricks = (*state.completed_tricks, completed)
    state.trick = []
    state.leader = winner
    state.turn = None if len(state.completed_tricks) == state.game.hand_size else winner


@_evolver(ev.HandScored)
def _hand_scored(state: MatchState, event: ev.HandScored) -> None:
    for index, side in enumerate(event.sides):
        state.scores[index] = side.total_score
        state.bags[index] = side.total_bags
    state.hand_results = (*state.hand_results, event)


@_evolver(ev.TurnTimedOut)
def _turn_timed_out(state: MatchState, event: ev.TurnTimedOut) -> None:
    seat = event.seat
    state.timeouts += 1
    state.timeout_streaks = _with(state.timeout_streaks, seat, state.timeout_streaks[seat] + 1)
    state.automatic_for = seat
    state.automatic_play |= 1 << seat


def _seat_acted(state: MatchState, seat: Seat) -> None:
    """A seat on a run of timeouts acted: its automatic action, or its own (ends the run)."""
    if state.automatic_for == seat:
        state.automatic_for = None
    else:
        state.timeout_streaks = _with(state.timeout_streaks, seat, 0)


@_evolver(ev.SeatSubstituted)
def _seat_substituted(state: MatchState, event: ev.SeatSubstituted) -> None:
    seat = event.seat
    state.substitutions = _with(state.substitutions, seat, event.reason)
    state.timeout_streaks = _with(state.timeout_streaks, seat, 0)
    state.automatic_play |= 1 << seat


@_evolver(ev.SeatReclaimed)
def _seat_reclaimed(state: MatchState, event: ev.SeatReclaimed) -> None:
    state.substitutions = _with(state.substitutions, event.seat, None)
    state.timeout_streaks = _with(state.timeout_streaks, event.seat, 0)


@_evolver(ev.ExtensionClaimed)
def _extension_claimed(state: MatchState, event: ev.ExtensionClaimed) -> None:
    state.extension_claimed = True


@_evolver(ev.Conceded)
def _conceded(state: MatchState, event: ev.Conceded) -> None:
    pass  # the MatchEnded that follows ends the match


@_evolver(ev.MatchEnded)
def _match_ended(state: MatchState, event: ev.MatchEnded) -> None:
    state.phase = Phase.ENDED
    state.turn = None
    state.end = event


@_evolver(ev.SeedRevealed)
def _seed_revealed(state: MatchState, event: ev.SeedRevealed) -> None:
    state.seed = event.seed


def _advance(state: MatchState) -> None:
    """Work out whose turn it is (and move to the next phase) from the folded facts."""
    if state.phase is Phase.BLIND_NIL_CHOICE:
        if state.blind_pending:
            state.turn = state.blind_pending[0]
            return
        state.phase = Phase.BIDDING
    seating = state.game.seating
    if state.phase is Phase.BIDDING:
        assert state.dealer is not None  # (a hand has started)
        for seat in seating.order_after(state.dealer):
            if state.bids[seat] is None:
                state.turn = seat
                return
        state.passes_pending = _passes_due(state)
        state.phase = Phase.PASSING
    if state.phase is Phase.PASSING:
        if state.passes_pending:
            state.turn = state.passes_pending[0][0]
            return
        state.phase = Phase.PLAYING
        state.leader = _first_leader(state)
        state.turn = state.leader


def _passes_due(state: MatchState) -> tuple[tuple[Seat, Seat], ...]:
    # For each team with one Blind Nil bidder: the partner passes first, then the bidder
    # sees the cards and passes back. Teams go in bidding order.
    if not state.rules.blind_nil_pass_cards or state.dealer is None:
        return ()
    seating = state.game.seating
    passes: list[tuple[Seat, Seat]] = []
    for seat in seating.order_after(state.dealer):
        partner = seating.partner(seat)
        if partner is None:
            continue
        bid = state.bids[seat]
        partner_bid = state.bids[partner]
        if bid is not None and bid.blind and not (partner_bid and partner_bid.blind):
            passes += [(partner, seat), (seat, partner)]
    return tuple(passes)


def _first_leader(state: MatchState) -> Seat | None:
    if state.rules.two_of_clubs_leads:
        for seat, hand in enumerate(state.hands):
            if hand >> TWO_OF_CLUBS & 1:
                return seat
        if state.seed is None:
            # A view that cannot see the 2♣ cannot know who leads (None: no one it can name);
            # the first card played names the leader.
            return None
    assert state.dealer is not None  # (a hand has started)
    return state.game.seating.next(state.dealer)


_new_tuple: Final = tuple.__new__


def _with(values: tuple[_T, ...], index: int, value: _T) -> tuple[_T, ...]:
    """``values`` with the item at ``index`` replaced (per-seat facts are immutable tuples, so
    a clone shares them)."""
    return (*values[:index], value, *values[index + 1 :])
