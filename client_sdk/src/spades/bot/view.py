"""What a bot sees: one seat's picture of a match, folded from the events the seat may see.

The SDK folds the seat's redacted events with the engine (:class:`SeatTracker`), so the
picture follows every rule the engine knows, without a second implementation; a
:class:`BotView` is a friendly, read-only face on it with the helpers bots want. Imagining the
hands a seat cannot see builds on a view: :func:`spades.bot.worlds.sample_world`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from functools import cached_property

from spades.engine import (
    SEAT_NAMES,
    Action,
    Bid,
    Card,
    CompletedTrick,
    MakeBid,
    MatchState,
    Phase,
    Play,
    PlayCard,
    Rules,
    Seat,
    Seating,
    SeatView,
    Suit,
    cards_of,
    effective_suit,
    may_claim_extension,
    may_concede,
    view,
)
from spades.engine import events as ev


class BotView:
    """One seat's view of the match at one moment (built by the SDK; do not build it yourself).

    Seats are ints (0 North, 1 East, 2 South, 3 West); scores and bags are per side, in the
    order of ``rules.sides`` (North-South first).
    """

    def __init__(
        self,
        state: MatchState,
        seat: int,
        legal_actions: Sequence[Action] | None = None,
        deadline: datetime | None = None,
    ) -> None:
        self._state = state
        self._seat_view: SeatView = view(state, seat)
        self.seat = seat
        self.legal_actions: tuple[Action, ...] = (
            tuple(legal_actions) if legal_actions is not None else self._seat_view.legal_actions
        )
        #: When this turn's time runs out (timezone-aware, UTC, from the prompt); None when
        #: the table runs no clock or it is not this seat's turn. See :meth:`time_left`.
        self.deadline = deadline

    def time_left(self, now: datetime | None = None) -> float | None:
        """Seconds until :attr:`deadline` (0 once it has passed), None when there is none.

        >>> from datetime import datetime, timedelta, timezone
        >>> from spades.engine import seated_match
        >>> state, _ = seated_match(Rules(), seed=bytes(32))
        >>> start = datetime(2026, 1, 1, tzinfo=timezone.utc)
        >>> BotView(state, 1, None, start + timedelta(seconds=2.5)).time_left(start)
        2.5
        >>> BotView(state, 1).time_left() is None
        True
        """
        if self.deadline is None:
            return None
        now = now or datetime.now(UTC)
        return max(0.0, (self.deadline - now).total_seconds())

    # ------------------------------------------------------------------ the match

    @property
    def rules(self) -> Rules:
        return self._seat_view.rules

    @property
    def phase(self) -> Phase:
        return self._seat_view.phase

    @property
    def hand_number(self) -> int:
        return self._seat_view.hand_number

    @property
    def dealer(self) -> Seat | None:
        """The hand's dealer, None before the first hand."""
        return self._seat_view.dealer

    @property
    def turn(self) -> Seat | None:
        """The seat to act, None when no one is."""
        return self._seat_view.turn

    @property
    def players(self) -> tuple[tuple[str, bool] | None, ...]:
        """(name, is a bot) per seat."""
        return self._seat_view.players

    @property
    def seat_name(self) -> str:
        return SEAT_NAMES[self.seat]

    @property
    def player_count(self) -> int:
        return self.rules.players

    @property
    def seating(self) -> Seating:
        """The table's seat order, partners and sides (the engine's)."""
        return self.rules.seating

    @property
    def partner(self) -> Seat | None:
        """The partner's seat, or None in cutthroat."""
        return self.seating.partner(self.seat)

    @property
    def sides(self) -> tuple[tuple[Seat, ...], ...]:
        return self.seating.sides

    def side_of(self, seat: Seat) -> int:
        """The index (into ``scores`` and ``bags``) of the side ``seat`` plays for."""
        return self.seating.side_of(seat)

    @property
    def my_side(self) -> int:
        return self.seating.side_of(self.seat)

    def opponents(self) -> tuple[Seat, ...]:
        """The seats not on my side."""
        return self.seating.opponents(self.seat)

    def next_seat(self, seat: Seat) -> Seat:
        return self.seating.next(seat)

    # ------------------------------------------------------------------ the hand

    @property
    def hand(self) -> tuple[Card, ...]:
        """My cards (empty before I have looked at them)."""
        return self._seat_view.hand or ()

    @property
    def bids(self) -> tuple[Bid | None, ...]:
        """Each seat's bid this hand (None while it has not bid)."""
        return self._seat_view.bids

    @property
    def current_trick(self) -> tuple[Play, ...]:
        """The trick in progress as plays (seat, card), in play order."""
        return self._seat_view.current_trick

    @property
    def led_suit(self) -> Suit | None:
        """The suit the current trick must follow (jokers count as spades)."""
        trick = self.current_trick
        return Suit(effective_suit(trick[0][1])) if trick else None

    @property
    def tricks(self) -> tuple[CompletedTrick, ...]:
        """The finished tricks of this hand."""
        return self._seat_view.completed_tricks

    @property
    def tricks_won(self) -> tuple[int, ...]:
        """Tricks each seat has taken this hand."""
        return self._seat_view.tricks_won

    @property
    def spades_broken(self) -> bool:
        return self._seat_view.spades_broken

    @property
    def scores(self) -> tuple[int, ...]:
        return self._seat_view.scores

    @property
    def bags(self) -> tuple[int, ...]:
        return self._seat_view.bags

    @property
    def hand_results(self) -> tuple[ev.HandScored, ...]:
        return self._seat_view.hand_results

    @property
    def end(self) -> ev.MatchEnded | None:
        return self._seat_view.end

    @property
    def extension_claimed(self) -> bool:
        """True once the seat on turn has claimed this turn's extension."""
        return self._state.extension_claimed

    @property
    def may_concede(self) -> bool:
        """True when I may concede the match now: on my turn of a match being played (the
        engine's rule, as the server's prompt flag says)."""
        return bool(self.legal_actions) and may_concede(self._state)

    @property
    def may_claim_extension(self) -> bool:
        """True when I may claim this turn's one extension of the clock: my turn has a
        deadline, the rules give an extension, and it is not claimed yet."""
        return self.deadline is not None and may_claim_extension(self._state, self.seat)

    @property
    def legal_bids(self) -> list[int]:
        """The numbers I may bid now (0 is Nil); empty when it is not my turn to bid."""
        return [action.tricks for action in self.legal_actions if isinstance(action, MakeBid)]

    @property
    def legal_cards(self) -> list[Card]:
        """The cards I may play now; empty when it is not my turn to play."""
        return [action.card for action in self.legal_actions if isinstance(action, PlayCard)]

    # ------------------------------------------------------------------ what has been seen

    @cached_property
    def played_cards(self) -> frozenset[Card]:
        """Every card played this hand, in finished tricks and the trick in progress."""
        played = {play.card for trick in self.tricks for play in trick.plays}
        played.update(play.card for play in self.current_trick)
        return frozenset(played)

    @cached_property
    def _still_out(self) -> tuple[Card, ...]:
        seen = set(self.hand) | self.played_cards
        return tuple(card for card in cards_of(self.rules.deck_mask) if card not in seen)

    def cards_still_out(self) -> list[Card]:
        """Cards of this deck that are in no one's sight: not in my hand and not played yet."""
        return list(self._still_out)

    @cached_property
    def _voids(self) -> dict[int, frozenset[Suit]]:
        found: dict[Seat, set[Suit]] = {seat: set() for seat in self.seating.seats}
        for trick in (*(done.plays for done in self.tricks), self.current_trick):
            if not trick:
                continue
            led = effective_suit(trick[0].card)
            for seat, card in trick[1:]:
                if effective_suit(card) != led:
                    found[seat].add(Suit(led))
        return {seat: frozenset(suits) for seat, suits in found.items()}

    def voids(self) -> dict[int, frozenset[Suit]]:
        """The suits each seat has shown void in this hand (jokers count as spades)."""
        return dict(self._voids)

    def is_void(self, seat: int, suit: Suit) -> bool:
        return suit in self._voids[seat]

    def hand_sizes(self) -> tuple[int, ...]:
        """How many cards each seat holds now (empty before the first deal)."""
        return self._seat_view.hand_sizes

    @property
    def state(self) -> MatchState:
        """A copy of the engine state behind this view, for simulation: other seats' hands
        are empty (unknown to this seat)."""
        return self._state.clone()

    def __repr__(self) -> str:
        cards = " ".join(str(card) for card in sorted(self.hand, reverse=True))
        return (
            f"<BotView {self.seat_name} hand {self.hand_number} {self.phase.value}: "
            f"[{cards}] legal={len(self.legal_actions)}>"
        )


class SeatTracker:
    """Folds the events a seat may see into an engine state, and makes views of it.

    Redacted events carry None where a card is hidden; the engine skips those, so the folded
    state is exactly what the seat may know (other hands are empty).
    """

    def __init__(self, seat: int) -> None:
        self.seat = seat
        self.state = MatchState()
        #: The sequence of the last event folded (0 for none).
        self.sequence = 0

    @property
    def started(self) -> bool:
        return self.sequence > 0

    def fold(self, event: ev.Event, sequence: int | None = None) -> None:
        """Fold the next event the seat sees."""
        self.state.evolve(event)  # (the engine names a trick's leader by its first card)
        self.sequence = sequence if sequence is not None else self.sequence + 1

    def view(
        self, legal_actions: Sequence[Action] | None = None, deadline: datetime | None = None
    ) -> BotView:
        return BotView(self.state, self.seat, legal_actions, deadline)
