"""The match: a state folded from events, the legal actions, and applying an action.

A :class:`MatchState` changes only by folding events (:meth:`MatchState.evolve`). Applying an
action checks it against the rules, then emits the events it causes, folding each one as it
goes, so the events always rebuild exactly the state that produced them.

>>> state, events = new_match(Rules(), seed=bytes(32))
>>> for seat in range(4):
...     state, _ = state.apply_seat(seat, f"bot {seat}", bot=True)
>>> state.phase, state.turn == state.next_seat(state.dealer)
(<Phase.BIDDING: 'bidding'>, True)
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from typing import Any, Final, TypeVar

from spades.engine import events as ev
from spades.engine.actions import (
    BID,
    BLIND,
    LOOK,
    PLAY,
    Action,
    Bid,
    ChooseBlindNil,
    ClaimExtension,
    Concede,
    MakeBid,
    PassCards,
    PlayCard,
)
from spades.engine.cards import (
    CARDS,
    LITTLE_JOKER,
    SUIT_MASKS,
    TRUMP_MASK,
    Card,
    Suit,
    cards_of,
    iter_cards,
)
from spades.engine.errors import IllegalAction, InvalidRules
from spades.engine.rules import TWO_OF_CLUBS, Rules
from spades.engine.scoring import score_side
from spades.engine.shuffle import SHUFFLE_VERSION, commitment, deal, first_dealer, new_seed

SEAT_NAMES: Final = ("North", "East", "South", "West")
_T = TypeVar("_T")
_SUIT_NAMES: Final = ("clubs", "diamonds", "hearts", "spades")
_SUIT_SINGULAR: Final = ("a club", "a diamond", "a heart", "a spade")
#: The cards that must be followed when a card of each effective suit leads (jokers are spades).
_FOLLOW_MASKS: Final = (SUIT_MASKS[0], SUIT_MASKS[1], SUIT_MASKS[2], TRUMP_MASK)


class Phase(Enum):
    """Where a match is."""

    WAITING_FOR_PLAYERS = "waiting for players"
    BLIND_NIL_CHOICE = "blind nil choice"
    BIDDING = "bidding"
    PASSING = "passing"
    PLAYING = "playing"
    ENDED = "ended"


def effective_suit(card: int) -> int:
    """The suit a card counts as: its own, or spades for a joker."""
    return Suit.SPADES if card >= LITTLE_JOKER else card // 13


@dataclass(frozen=True, slots=True)
class CompletedTrick:
    """A finished trick: who led, the cards in play order, and who won."""

    leader: int
    cards: tuple[Card, ...]
    winner: int


class _Tables:
    """Facts derived once per rule set for the hot paths."""

    def __init__(self, rules: Rules) -> None:
        self.players = rules.players
        self.step = rules.step
        self.hand_size = rules.hand_size
        self.deck = list(iter_cards(rules.deck_mask))
        self.sides = rules.sides
        self.side_of = [0] * rules.players
        for index, side in enumerate(self.sides):
            for seat in side:
                self.side_of[seat] = index
        self.trump_power = [0] * 54
        for order, number in enumerate(rules.trump_order()):
            self.trump_power[number] = 100 + order


@lru_cache(maxsize=64)
def _tables(rules: Rules) -> _Tables:
    return _Tables(rules)


def _power_in_trick(trump_power: list[int], number: int, led: int) -> int:
    # A trump beats every other suit; otherwise only the led suit can win, by rank.
    return trump_power[number] or (number % 13 + 1 if number // 13 == led else 0)


def trump_power(rules: Rules, card: int) -> int:
    """A card's strength as a trump under ``rules`` (higher wins), or 0 for a non-trump."""
    return _tables(rules).trump_power[card]


def card_power(rules: Rules, card: int, led: int) -> int:
    """A card's strength in a trick whose led suit is ``led`` (see :func:`effective_suit`):
    the card with the highest power wins the trick; 0 means it cannot win it."""
    return _power_in_trick(_tables(rules).trump_power, card, led)


def seat_name(seat: int) -> str:
    return SEAT_NAMES[seat]


class MatchState:
    """Everything about a match that its events determine.

    Create one with :func:`new_match` or :meth:`from_events`. :meth:`apply` returns a new
    state and leaves this one as it was; :meth:`act` changes this state in place (for
    search, together with :meth:`clone`).
    """

    __slots__ = (
        "automatic_for",
        "automatic_play",
        "bags",
        "bids",
        "blind_pending",
        "completed_tricks",
        "dealer",
        "end",
        "extension_claimed",
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
        "tables",
        "timeout_streaks",
        "timeouts",
        "trick",
        "tricks_won",
        "turn",
        "visible",
    )

    rules: Rules
    tables: _Tables
    seed: bytes | None
    seed_commitment: bytes
    preset_deals: tuple[tuple[tuple[Card, ...], ...], ...]
    players: list[tuple[str, bool] | None]
    phase: Phase
    hand_number: int
    dealer: int
    hands: list[int]
    visible: list[bool]
    blind_pending: tuple[int, ...]
    bids: list[Bid | None]
    passes_pending: tuple[tuple[int, int], ...]
    turn: int
    leader: int
    trick: list[int]
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
    #: The seat whose automatic action comes next (right after its TurnTimedOut), else -1.
    automatic_for: int
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
        self.turn = -1
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
        other.dealer = self.dealer
        other.end = self.end
        other.extension_claimed = self.extension_claimed
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
        other.tables = self.tables
        other.timeout_streaks = self.timeout_streaks
        other.timeouts = self.timeouts
        other.trick = self.trick[:]
        other.tricks_won = self.tricks_won[:]
        other.turn = self.turn
        other.visible = self.visible[:]
        return other

    # ------------------------------------------------------------------ questions

    @property
    def players_count(self) -> int:
        return self.tables.players

    def next_seat(self, seat: int) -> int:
        """The seat after ``seat`` in the direction of play."""
        return (seat + self.tables.step) % self.tables.players

    def partner(self, seat: int) -> int | None:
        """The partner's seat, or None in cutthroat."""
        return (seat + 2) % 4 if self.tables.players == 4 else None

    def side_of(self, seat: int) -> int:
        """The index of the scoring side the seat belongs to."""
        return self.tables.side_of[seat]

    @property
    def is_over(self) -> bool:
        return self.phase is Phase.ENDED

    def hand_of(self, seat: int) -> list[Card]:
        """The cards a seat holds (whether or not it may see them yet)."""
        return cards_of(self.hands[seat])

    def current_trick(self) -> list[tuple[int, Card]]:
        """The cards on the table, each with the seat that played it."""
        seat = self.leader
        plays = []
        for number in self.trick:
            plays.append((seat, CARDS[number]))
            seat = (seat + self.tables.step) % self.tables.players
        return plays

    def legal_actions(self, seat: int) -> list[Action]:
        """What ``seat`` may do now: empty when it is not its turn. Conceding is always open
        during a match and is not listed."""
        if seat != self.turn:
            return []
        phase = self.phase
        if phase is Phase.PLAYING:
            mask = self._legal_play_mask(seat)
            plays: list[Action] = []
            chunk = 0
            while mask:
                if mask & 0xFF:
                    plays += _PLAYS_BY_BYTE[chunk][mask & 0xFF]
                mask >>= 8
                chunk += 1
            return plays
        if phase is Phase.BIDDING:
            return [BID[tricks] for tricks in self._legal_bids(seat)]
        if phase is Phase.BLIND_NIL_CHOICE:
            return [BLIND, LOOK] if self._blind_nil_open(seat) else [LOOK]
        if phase is Phase.PASSING:
            hand = cards_of(self.hands[seat])
            count = self.rules.blind_nil_pass_cards
            return [PassCards(combo) for combo in itertools.combinations(hand, count)]
        return []

    def legal_play_mask(self, seat: int) -> int:
        """The cards ``seat`` may play now as a bitmask (0 when it is not its turn to play)."""
        if seat != self.turn or self.phase is not Phase.PLAYING:
            return 0
        return self._legal_play_mask(seat)

    def _legal_play_mask(self, seat: int) -> int:
        hand = self.hands[seat]
        if self.trick:
            follow = hand & _FOLLOW_MASKS[effective_suit(self.trick[0])]
            return follow or hand
        if self._must_lead_two_of_clubs(seat):
            return 1 << TWO_OF_CLUBS
        if self.spades_broken or not self.rules.spades_must_be_broken:
            return hand
        return (hand & ~TRUMP_MASK) or hand

    def _must_lead_two_of_clubs(self, seat: int) -> bool:
        return (
            self.rules.two_of_clubs_leads
            and not self.completed_tricks
            and bool(self.hands[seat] & (1 << TWO_OF_CLUBS))
        )

    def _blind_nil_open(self, seat: int) -> bool:
        # With a minimum team bid, one Blind Nil per team: the partner must then reach it.
        if not self.rules.minimum_team_bid:
            return True
        partner_bid = self.bids[(seat + 2) % 4]
        return partner_bid is None or not partner_bid.is_nil

    def _legal_bids(self, seat: int) -> list[int]:
        rules = self.rules
        lowest_number = 1
        nil_ok = rules.nil_allowed
        minimum = rules.minimum_team_bid
        if minimum and self.tables.players == 4:
            partner_bid = self.bids[(seat + 2) % 4]
            if partner_bid is not None:
                lowest_number = max(1, minimum - partner_bid.tricks)
                nil_ok = nil_ok and partner_bid.tricks >= minimum
        numbers = list(range(lowest_number, self.tables.hand_size + 1))
        return [0, *numbers] if nil_ok else numbers

    def automatic_action(self) -> Action:
        """What the clock does for the seat whose time ran out (RULES.md section 3)."""
        seat = self.turn
        if seat < 0:
            raise IllegalAction("no one is to act, so no turn can time out")
        if self.phase is Phase.BLIND_NIL_CHOICE:
            return LOOK
        if self.phase is Phase.BIDDING:
            bids = self._legal_bids(seat)
            return BID[1] if 1 in bids else BID[min(b for b in bids if b > 0)]
        lowest_first = sorted(iter_cards(self.hands[seat]), key=self._automatic_order)
        if self.phase is Phase.PASSING:
            count = self.rules.blind_nil_pass_cards
            return PassCards(tuple(sorted(CARDS[n] for n in lowest_first[:count])))
        legal = self._legal_play_mask(seat)
        return PLAY[next(n for n in lowest_first if legal >> n & 1)]

    def _automatic_order(self, number: int) -> tuple[int, int, int]:
        # Lowest rank first, any other suit before a spade; suit breaks ties.
        power = self.tables.trump_power[number]
        if power:
            return (1, power, 0)
        return (0, number % 13, number // 13)

    # ------------------------------------------------------------------ acting

    def apply(self, seat: int, action: Action) -> tuple[MatchState, list[ev.Event]]:
        """The state after ``seat`` takes ``action``, and the events it caused.

        Raises :class:`IllegalAction` with the reason, leaving this state unchanged.
        """
        new = self.clone()
        return new, new.act(seat, action)

    def act(self, seat: int, action: Action) -> list[ev.Event]:
        """Like :meth:`apply` but changes this state in place (it stays as it was on error)."""
        if type(action) is PlayCard and seat == self.turn and self.phase is Phase.PLAYING:
            out: list[ev.Event] = []  # the hot path of search and random play
            self._play(seat, action.card, out)
            return out
        self._check_seat(seat)
        if isinstance(action, Concede):
            return self._concede(seat)
        self._check_turn(seat)
        out = []
        phase = self.phase
        if isinstance(action, ClaimExtension):
            self._claim_extension(seat, out)
            return out
        if isinstance(action, PlayCard) and phase is Phase.PLAYING:
            self._play(seat, action.card, out)
        elif isinstance(action, MakeBid) and phase is Phase.BIDDING:
            self._bid(seat, action.tricks, out)
        elif isinstance(action, ChooseBlindNil) and phase is Phase.BLIND_NIL_CHOICE:
            self._choose_blind(seat, action.blind, out)
        elif isinstance(action, PassCards) and phase is Phase.PASSING:
            self._pass(seat, action.cards, out)
        else:
            raise IllegalAction(f"it is time for {_PHASE_WANTS[phase]}, not to {action}")
        return out

    def _claim_extension(self, seat: int, out: list[ev.Event]) -> None:
        if not self.rules.clock.extension_millis:
            raise IllegalAction("this table's clock has no extension")
        if self.extension_claimed:
            raise IllegalAction("you have already claimed this turn's extension")
        self._emit(ev.ExtensionClaimed(seat), out)

    def time_out(self) -> tuple[MatchState, list[ev.Event]]:
        """The state after the clock acts for the seat on turn: TurnTimedOut, then its events."""
        action = self.automatic_action()
        new = self.clone()
        seat = new.turn
        out: list[ev.Event] = []
        new._emit(ev.TurnTimedOut(seat, action), out)
        out.extend(new.act(seat, action))
        return new, out

    def substitute(
        self, seat: int, reason: ev.SubstitutionReason
    ) -> tuple[MatchState, list[ev.Event]]:
        """The state after a substitute takes over ``seat`` (one already substituted may get a
        new substitute). When to do it is the server's policy, not a rule."""
        self._check_seat(seat)
        self._check_in_play()
        new = self.clone()
        out: list[ev.Event] = []
        new._emit(ev.SeatSubstituted(seat, reason), out)
        return new, out

    def reclaim(self, seat: int) -> tuple[MatchState, list[ev.Event]]:
        """The state after the player of ``seat`` takes it back from its substitute."""
        self._check_seat(seat)
        self._check_in_play()
        if self.substitutions[seat] is None:
            raise IllegalAction(f"{seat_name(seat)} is not played by a substitute")
        new = self.clone()
        out: list[ev.Event] = []
        new._emit(ev.SeatReclaimed(seat), out)
        return new, out

    def _check_in_play(self) -> None:
        if self.phase is Phase.WAITING_FOR_PLAYERS:
            raise IllegalAction("the match has not started: seats are still free")
        if self.phase is Phase.ENDED:
            raise IllegalAction("the match is over")

    def close(self) -> tuple[MatchState, list[ev.Event]]:
        """The state after the operator closes the table: the match ends and no side wins."""
        if self.phase is Phase.ENDED:
            raise IllegalAction("the match is already over")
        new = self.clone()
        out: list[ev.Event] = []
        new._end(ev.EndReason.CLOSED, (), out)
        return new, out

    def apply_seat(
        self, seat: int, name: str, *, bot: bool = False
    ) -> tuple[MatchState, list[ev.Event]]:
        """The state after a player takes ``seat``; the last seat taken deals the first hand."""
        self._check_seat(seat)
        if self.phase is not Phase.WAITING_FOR_PLAYERS:
            raise IllegalAction("the match has already started")
        if self.players[seat] is not None:
            raise IllegalAction(f"{seat_name(seat)} is already taken")
        new = self.clone()
        out: list[ev.Event] = []
        new._emit(ev.SeatTaken(seat, name, bot), out)
        if all(player is not None for player in new.players):
            new._start_hand(out)
        return new, out

    def leave_seat(self, seat: int) -> tuple[MatchState, list[ev.Event]]:
        """The state after a player leaves ``seat`` before the match starts."""
        self._check_seat(seat)
        if self.phase is not Phase.WAITING_FOR_PLAYERS:
            raise IllegalAction("the match has started; a player can only concede now")
        if self.players[seat] is None:
            raise IllegalAction(f"{seat_name(seat)} is empty")
        new = self.clone()
        out: list[ev.Event] = []
        new._emit(ev.SeatLeft(seat), out)
        return new, out

    def _check_seat(self, seat: int) -> None:
        if not 0 <= seat < self.tables.players:
            raise IllegalAction(f"there is no seat {seat} at a {self.tables.players}-player table")

    def _check_turn(self, seat: int) -> None:
        if self.phase is Phase.ENDED:
            raise IllegalAction("the match is over")
        if self.phase is Phase.WAITING_FOR_PLAYERS:
            raise IllegalAction("the match has not started: seats are still free")
        if seat != self.turn:
            raise IllegalAction(f"it is {seat_name(self.turn)}'s turn, not {seat_name(seat)}'s")

    def _emit(self, event: ev.Event, out: list[ev.Event]) -> None:
        out.append(event)
        self.evolve(event)

    def _choose_blind(self, seat: int, blind: bool, out: list[ev.Event]) -> None:
        if blind and not self._blind_nil_open(seat):
            raise IllegalAction(
                "your partner bid Blind Nil, so your team needs your bid to reach the "
                f"minimum of {self.rules.minimum_team_bid}: look at your cards"
            )
        self._emit(ev.BlindNilChosen(seat, blind), out)
        if blind:
            self._emit(ev.BidMade(seat, Bid.BLIND_NIL), out)
            self._after_bidding_step(out)
        else:
            self._emit(ev.CardsShown(seat, tuple(cards_of(self.hands[seat]))), out)

    def _bid(self, seat: int, tricks: int, out: list[ev.Event]) -> None:
        if tricks not in self._legal_bids(seat):
            raise IllegalAction(self._why_bid_is_illegal(seat, tricks))
        self._emit(ev.BidMade(seat, Bid(tricks)), out)
        self._after_bidding_step(out)

    def _why_bid_is_illegal(self, seat: int, tricks: int) -> str:
        size = self.tables.hand_size
        if not 0 <= tricks <= size:
            return f"a bid is a number of tricks from 0 (Nil) to {size}"
        if tricks == 0 and not self.rules.nil_allowed:
            return "Nil is not allowed at this table"
        minimum = self.rules.minimum_team_bid
        partner_bid = self.bids[(seat + 2) % 4] if self.tables.players == 4 else None
        if tricks == 0 and partner_bid is not None:
            return (
                f"Nil is open only when your partner's bid reaches the table minimum of "
                f"{minimum}, and your partner bid {partner_bid}"
            )
        return (
            f"your team must bid at least {minimum}: your partner bid {partner_bid}, "
            f"so you must bid at least {minimum - (partner_bid.tricks if partner_bid else 0)}"
        )

    def _after_bidding_step(self, out: list[ev.Event]) -> None:
        # Blind Nil bidders see their cards when bidding (and any pass to them) is over.
        if self.phase is Phase.PLAYING:
            for seat in range(self.tables.players):
                if not self.visible[seat]:
                    self._emit(ev.CardsShown(seat, tuple(cards_of(self.hands[seat]))), out)

    def _pass(self, seat: int, cards: Sequence[int], out: list[ev.Event]) -> None:
        count = self.rules.blind_nil_pass_cards
        mask = 0
        for number in cards:
            mask |= 1 << number
        if len(cards) != count or mask.bit_count() != count:
            raise IllegalAction(f"pass exactly {count} different cards")
        if mask & ~self.hands[seat]:
            missing = next(n for n in cards if not self.hands[seat] >> n & 1)
            raise IllegalAction(f"you do not hold the {CARDS[missing].symbol}")
        receiver = self.passes_pending[0][1]
        self._emit(ev.CardsPassed(seat, receiver, tuple(sorted(cards_of(mask))), count), out)
        if not self.visible[receiver]:
            self._emit(ev.CardsShown(receiver, tuple(cards_of(self.hands[receiver]))), out)
        self._after_bidding_step(out)

    def _play(self, seat: int, card: int, out: list[ev.Event]) -> None:
        hand = self.hands[seat]
        if not 0 <= card < 54 or not hand >> card & 1:
            shown = CARDS[card].symbol if 0 <= card < 54 else str(card)
            raise IllegalAction(f"you do not hold the {shown}")
        if not self._legal_play_mask(seat) >> card & 1:
            raise IllegalAction(self._why_play_is_illegal(seat, card))
        self._emit(_CARD_PLAYED[seat][card], out)
        if len(self.trick) == self.tables.players:
            winner, winning_card = self._trick_winner()
            self._emit(ev.TrickWon(len(self.completed_tricks) + 1, winner, winning_card), out)
            if len(self.completed_tricks) == self.tables.hand_size:
                self._finish_hand(out)

    def _why_play_is_illegal(self, seat: int, card: int) -> str:
        if self.trick:
            led = effective_suit(self.trick[0])
            return f"you hold {_SUIT_SINGULAR[led]}, so you must follow {_SUIT_NAMES[led]}"
        if self._must_lead_two_of_clubs(seat):
            return "the holder of the 2♣ must lead it to the first trick"
        return "spades are not broken yet, and you hold another suit to lead"

    def _trick_winner(self) -> tuple[int, Card]:
        trick = self.trick
        led = effective_suit(trick[0])
        trump_power = self.tables.trump_power
        best_index = 0
        best_power = -1
        for index, number in enumerate(trick):
            power = _power_in_trick(trump_power, number, led)
            if power > best_power:
                best_power = power
                best_index = index
        winner = (self.leader + best_index * self.tables.step) % self.tables.players
        return winner, CARDS[trick[best_index]]

    def _finish_hand(self, out: list[ev.Event]) -> None:
        bids = {seat: bid for seat, bid in enumerate(self.bids) if bid is not None}
        tricks = dict(enumerate(self.tricks_won))
        sides = tuple(
            score_side(self.rules, side, bids, tricks, self.scores[index], self.bags[index])
            for index, side in enumerate(self.tables.sides)
        )
        automatic = self.automatic_play
        seats = tuple(seat for seat in range(self.tables.players) if automatic >> seat & 1)
        self._emit(ev.HandScored(self.hand_number, sides, seats), out)
        reason = self._end_reason()
        if reason is not None:
            top = max(self.scores)
            leaders = [index for index, score in enumerate(self.scores) if score == top]
            if len(leaders) == 1:
                self._end(reason, self.tables.sides[leaders[0]], out)
                return
        self._start_hand(out)

    def _end_reason(self) -> ev.EndReason | None:
        rules = self.rules
        if max(self.scores) >= rules.target_score:
            return ev.EndReason.TARGET_SCORE
        if rules.loss_threshold is not None and min(self.scores) <= rules.loss_threshold:
            return ev.EndReason.LOSS_THRESHOLD
        if rules.max_hands is not None and self.hand_number >= rules.max_hands:
            return ev.EndReason.MAX_HANDS
        return None

    def _concede(self, seat: int) -> list[ev.Event]:
        if self.phase is Phase.WAITING_FOR_PLAYERS:
            raise IllegalAction("the match has not started, so there is nothing to concede")
        if self.phase is Phase.ENDED:
            raise IllegalAction("the match is over")
        out: list[ev.Event] = []
        loser = self.tables.side_of[seat]
        others = [index for index in range(len(self.tables.sides)) if index != loser]
        top = max(self.scores[index] for index in others)
        winners = tuple(
            seat
            for index in others
            if self.scores[index] == top
            for seat in self.tables.sides[index]
        )
        self._emit(ev.Conceded(seat), out)
        self._end(ev.EndReason.CONCESSION, winners, out)
        return out

    def _end(self, reason: ev.EndReason, winners: tuple[int, ...], out: list[ev.Event]) -> None:
        self._emit(ev.MatchEnded(reason, tuple(sorted(winners)), tuple(self.scores)), out)
        if self.seed is not None:
            self._emit(ev.SeedRevealed(self.seed), out)

    def _start_hand(self, out: list[ev.Event]) -> None:
        if self.seed is None:
            raise IllegalAction("this state has no seed (it is a view), so it cannot deal")
        tables = self.tables
        number = self.hand_number + 1
        if number == 1:
            dealer = first_dealer(self.seed, tables.players)
        else:
            dealer = (self.dealer + tables.step) % tables.players
        eligible = self._blind_nil_eligible(dealer)
        self._emit(ev.HandStarted(number, dealer, eligible), out)
        hands: Sequence[Sequence[int]]
        if number <= len(self.preset_deals):
            hands = self.preset_deals[number - 1]
        else:
            hands = deal(self.seed, number, tables.deck, tables.players, tables.hand_size)
        for seat, cards in enumerate(hands):
            shown = tuple(sorted(CARDS[n] for n in cards))
            self._emit(ev.CardsDealt(seat, shown, len(shown), seat in eligible), out)

    def _blind_nil_eligible(self, dealer: int) -> tuple[int, ...]:
        rules = self.rules
        if not rules.blind_nil:
            return ()
        tables = self.tables
        order = [(dealer + tables.step * k) % tables.players for k in range(1, tables.players + 1)]
        eligible = []
        for seat in order:
            side = tables.side_of[seat]
            best_other = max(s for index, s in enumerate(self.scores) if index != side)
            if best_other - self.scores[side] >= rules.blind_nil_deficit:
                eligible.append(seat)
        return tuple(eligible)

    # ------------------------------------------------------------------ folding events

    def evolve(self, event: ev.Event) -> None:
        """Fold one event into this state (the only way a state changes)."""
        self.extension_claimed = False
        _EVOLVERS[type(event)](self, event)

    def _on_table_created(self, event: ev.TableCreated) -> None:
        rules = event.rules
        tables = _tables(rules)
        self.rules = rules
        self.tables = tables
        self.seed = event.seed
        self.seed_commitment = event.seed_commitment
        self.preset_deals = event.preset_deals or ()
        self.players = [None] * tables.players
        self.phase = Phase.WAITING_FOR_PLAYERS
        self.hand_number = 0
        self.dealer = -1
        self.hands = [0] * tables.players
        self.visible = [False] * tables.players
        self.blind_pending = ()
        self.bids = [None] * tables.players
        self.passes_pending = ()
        self.turn = -1
        self.leader = -1
        self.trick = []
        self.tricks_won = [0] * tables.players
        self.completed_tricks = ()
        self.spades_broken = False
        self.played = 0
        self.scores = [0] * len(tables.sides)
        self.bags = [0] * len(tables.sides)
        self.hand_results = ()
        self.timeouts = 0
        self.timeout_streaks = (0,) * tables.players
        self.automatic_for = -1
        self.substitutions = (None,) * tables.players
        self.automatic_play = 0
        self.end = None

    def _on_seat_taken(self, event: ev.SeatTaken) -> None:
        self.players[event.seat] = (event.name, event.bot)

    def _on_seat_left(self, event: ev.SeatLeft) -> None:
        self.players[event.seat] = None

    def _on_hand_started(self, event: ev.HandStarted) -> None:
        players = self.tables.players
        self.hand_number = event.hand_number
        self.dealer = event.dealer
        self.hands = [0] * players
        self.visible = [False] * players
        self.blind_pending = event.blind_nil_eligible
        self.bids = [None] * players
        self.passes_pending = ()
        self.trick = []
        self.tricks_won = [0] * players
        self.completed_tricks = ()
        self.spades_broken = False
        self.played = 0
        self.automatic_play = sum(
            1 << seat for seat, reason in enumerate(self.substitutions) if reason is not None
        )
        self.phase = Phase.BLIND_NIL_CHOICE if event.blind_nil_eligible else Phase.BIDDING
        self._advance()

    def _on_cards_dealt(self, event: ev.CardsDealt) -> None:
        if event.cards is not None:
            self.hands[event.seat] = _mask(event.cards)
        self.visible[event.seat] = not event.face_down

    def _on_blind_nil_chosen(self, event: ev.BlindNilChosen) -> None:
        if self.timeout_streaks[event.seat]:
            self._seat_acted(event.seat)
        self.blind_pending = tuple(seat for seat in self.blind_pending if seat != event.seat)
        self._advance()

    def _on_cards_shown(self, event: ev.CardsShown) -> None:
        if event.cards is not None:
            self.hands[event.seat] = _mask(event.cards)
        self.visible[event.seat] = True

    def _on_bid_made(self, event: ev.BidMade) -> None:
        if self.timeout_streaks[event.seat]:
            self._seat_acted(event.seat)
        self.bids[event.seat] = event.bid
        self._advance()

    def _on_cards_passed(self, event: ev.CardsPassed) -> None:
        if self.timeout_streaks[event.from_seat]:
            self._seat_acted(event.from_seat)
        if event.cards is not None:
            mask = _mask(event.cards)
            self.hands[event.from_seat] &= ~mask
            self.hands[event.to_seat] |= mask
        self.passes_pending = self.passes_pending[1:]
        self._advance()

    def _on_card_played(self, event: ev.CardPlayed) -> None:
        card = event.card
        if self.timeout_streaks[event.seat]:
            self._seat_acted(event.seat)
        if not self.trick:
            # The seat that plays first led (a fold of redacted events may not know who holds
            # the 2♣ that must lead, but it sees who played).
            self.leader = event.seat
        self.hands[event.seat] &= ~(1 << card)
        self.played |= 1 << card
        self.trick.append(card)
        if self.tables.trump_power[card]:
            self.spades_broken = True
        if len(self.trick) == self.tables.players:
            self.turn = -1
        else:
            self.turn = (event.seat + self.tables.step) % self.tables.players

    def _on_trick_won(self, event: ev.TrickWon) -> None:
        self.tricks_won[event.winner] += 1
        done = CompletedTrick(self.leader, tuple(CARDS[n] for n in self.trick), event.winner)
        self.completed_tricks = (*self.completed_tricks, done)
        self.trick = []
        self.leader = event.winner
        self.turn = -1 if len(self.completed_tricks) == self.tables.hand_size else event.winner

    def _on_hand_scored(self, event: ev.HandScored) -> None:
        for index, side in enumerate(event.sides):
            self.scores[index] = side.total_score
            self.bags[index] = side.total_bags
        self.hand_results = (*self.hand_results, event)

    def _on_turn_timed_out(self, event: ev.TurnTimedOut) -> None:
        self.timeouts += 1
        seat = event.seat
        self.timeout_streaks = _with(self.timeout_streaks, seat, self.timeout_streaks[seat] + 1)
        self.automatic_for = seat
        self.automatic_play |= 1 << seat

    def _seat_acted(self, seat: int) -> None:
        """A seat on a run of timeouts acted: its automatic action, or its own (ends the run)."""
        if self.automatic_for == seat:
            self.automatic_for = -1
        else:
            self.timeout_streaks = _with(self.timeout_streaks, seat, 0)

    def _on_seat_substituted(self, event: ev.SeatSubstituted) -> None:
        seat = event.seat
        self.substitutions = _with(self.substitutions, seat, event.reason)
        self.timeout_streaks = _with(self.timeout_streaks, seat, 0)
        self.automatic_play |= 1 << seat

    def _on_seat_reclaimed(self, event: ev.SeatReclaimed) -> None:
        self.substitutions = _with(self.substitutions, event.seat, None)
        self.timeout_streaks = _with(self.timeout_streaks, event.seat, 0)

    def _on_extension_claimed(self, event: ev.ExtensionClaimed) -> None:
        self.extension_claimed = True

    def _on_conceded(self, event: ev.Conceded) -> None:
        pass

    def _on_match_ended(self, event: ev.MatchEnded) -> None:
        self.phase = Phase.ENDED
        self.turn = -1
        self.end = event

    def _on_seed_revealed(self, event: ev.SeedRevealed) -> None:
        self.seed = event.seed

    def _advance(self) -> None:
        """Work out whose turn it is (and move to the next phase) from the folded facts."""
        tables = self.tables
        if self.phase is Phase.BLIND_NIL_CHOICE:
            if self.blind_pending:
                self.turn = self.blind_pending[0]
                return
            self.phase = Phase.BIDDING
        if self.phase is Phase.BIDDING:
            seat = self.dealer
            for _ in range(tables.players):
                seat = (seat + tables.step) % tables.players
                if self.bids[seat] is None:
                    self.turn = seat
                    return
            self.passes_pending = self._passes_due()
            self.phase = Phase.PASSING
        if self.phase is Phase.PASSING:
            if self.passes_pending:
                self.turn = self.passes_pending[0][0]
                return
            self.phase = Phase.PLAYING
            self.leader = self._first_leader()
            self.turn = self.leader

    def _passes_due(self) -> tuple[tuple[int, int], ...]:
        # For each team with one Blind Nil bidder: the partner passes first, then the bidder
        # sees the cards and passes back. Teams go in bidding order.
        if not self.rules.blind_nil_pass_cards:
            return ()
        passes: list[tuple[int, int]] = []
        seat = self.dealer
        for _ in range(self.tables.players):
            seat = (seat + self.tables.step) % self.tables.players
            bid = self.bids[seat]
            partner_bid = self.bids[(seat + 2) % 4]
            if bid is not None and bid.blind and not (partner_bid and partner_bid.blind):
                passes += [((seat + 2) % 4, seat), (seat, (seat + 2) % 4)]
        return tuple(passes)

    def _first_leader(self) -> int:
        if self.rules.two_of_clubs_leads:
            for seat, hand in enumerate(self.hands):
                if hand >> TWO_OF_CLUBS & 1:
                    return seat
            if self.seed is None:
                # A view that cannot see the 2♣ cannot know who leads (-1: no one it can name);
                # the first card played names the leader.
                return -1
        return (self.dealer + self.tables.step) % self.tables.players


def _with(values: tuple[_T, ...], index: int, value: _T) -> tuple[_T, ...]:
    """``values`` with the item at ``index`` replaced (per-seat facts are immutable tuples, so
    a clone shares them)."""
    return (*values[:index], value, *values[index + 1 :])


def _mask(cards: Iterable[int]) -> int:
    mask = 0
    for number in cards:
        mask |= 1 << number
    return mask


#: The play actions of every byte of a card mask, so listing legal plays needs no bit loop.
_PLAYS_BY_BYTE: Final = tuple(
    tuple(
        tuple(PLAY[8 * chunk + bit] for bit in range(8) if byte >> bit & 1 and 8 * chunk + bit < 54)
        for byte in range(256)
    )
    for chunk in range(7)
)

#: Every possible CardPlayed event, interned (events are immutable; plays are the hot path).
_CARD_PLAYED: Final = tuple(
    tuple(ev.CardPlayed(seat, CARDS[number]) for number in range(54)) for seat in range(4)
)

_PHASE_WANTS: Final = {
    Phase.WAITING_FOR_PLAYERS: "players to sit down",
    Phase.BLIND_NIL_CHOICE: "the Blind Nil choice (bid Blind Nil or look)",
    Phase.BIDDING: "bidding",
    Phase.PASSING: "the Blind Nil card pass",
    Phase.PLAYING: "playing a card",
    Phase.ENDED: "nothing: the match is over",
}

_EVOLVERS: Final[dict[type, Any]] = {
    ev.TableCreated: MatchState._on_table_created,
    ev.SeatTaken: MatchState._on_seat_taken,
    ev.SeatLeft: MatchState._on_seat_left,
    ev.HandStarted: MatchState._on_hand_started,
    ev.CardsDealt: MatchState._on_cards_dealt,
    ev.BlindNilChosen: MatchState._on_blind_nil_chosen,
    ev.CardsShown: MatchState._on_cards_shown,
    ev.BidMade: MatchState._on_bid_made,
    ev.CardsPassed: MatchState._on_cards_passed,
    ev.CardPlayed: MatchState._on_card_played,
    ev.TrickWon: MatchState._on_trick_won,
    ev.HandScored: MatchState._on_hand_scored,
    ev.TurnTimedOut: MatchState._on_turn_timed_out,
    ev.ExtensionClaimed: MatchState._on_extension_claimed,
    ev.SeatSubstituted: MatchState._on_seat_substituted,
    ev.SeatReclaimed: MatchState._on_seat_reclaimed,
    ev.Conceded: MatchState._on_conceded,
    ev.MatchEnded: MatchState._on_match_ended,
    ev.SeedRevealed: MatchState._on_seed_revealed,
}


def new_match(
    rules: Rules | None = None,
    seed: bytes | None = None,
    preset_deals: Sequence[Sequence[Iterable[int]]] = (),
) -> tuple[MatchState, list[ev.Event]]:
    """A new match waiting for players, and its TableCreated event. A fresh seed by default.

    ``preset_deals`` gives the first hands' cards (one list of cards per seat); each must deal
    the rule set's deck out as the shuffle would (the hand sizes, no card twice).
    """
    rules = rules or Rules()
    seed = new_seed() if seed is None else seed
    deals = tuple(
        _check_preset_deal(rules, number, hands) for number, hands in enumerate(preset_deals, 1)
    )
    created = ev.TableCreated(rules, commitment(seed), SHUFFLE_VERSION, seed, deals)
    state = MatchState()
    state.evolve(created)
    return state, [created]


def _check_preset_deal(
    rules: Rules, number: int, hands: Sequence[Iterable[int]]
) -> tuple[tuple[Card, ...], ...]:
    cards = tuple(tuple(sorted(CARDS[n] for n in hand)) for hand in hands)
    where = f"preset deal {number}"
    if len(cards) != rules.players:
        raise InvalidRules(where, f"deal one hand to each of the {rules.players} seats")
    seen = 0
    for seat, hand in enumerate(cards):
        mask = _mask(hand)
        if len(hand) != rules.hand_size or mask.bit_count() != rules.hand_size:
            raise InvalidRules(
                where, f"{SEAT_NAMES[seat]} must get {rules.hand_size} different cards"
            )
        if mask & ~rules.deck_mask:
            raise InvalidRules(where, f"{SEAT_NAMES[seat]} holds a card this deck does not have")
        if mask & seen:
            raise InvalidRules(where, "a card is dealt twice")
        seen |= mask
    return cards


def seated_match(
    rules: Rules | None = None,
    seed: bytes | None = None,
    names: Sequence[str] | None = None,
    preset_deals: Sequence[Sequence[Iterable[int]]] = (),
) -> tuple[MatchState, list[ev.Event]]:
    """A new match with every seat taken (by bots named after their seats), first hand dealt."""
    state, events = new_match(rules, seed, preset_deals)
    for seat in range(state.players_count):
        name = names[seat] if names else SEAT_NAMES[seat]
        state, more = state.apply_seat(seat, name, bot=True)
        events.extend(more)
    return state, events
