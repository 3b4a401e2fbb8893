"""A position the solver can take: every hand known, the trick in progress, who plays next.

A :class:`Position` is read from an engine :class:`~spades.engine.MatchState` during play
(:meth:`Position.of`), with the cards its player to act may play as the engine's
:func:`~spades.engine.legal.play_mask` says, and what the hand's score needs (bids, tricks
taken so far, the bags each side carried into the hand). A state the solver cannot take
raises :class:`UnsolvablePosition`, naming the problem.
"""

from __future__ import annotations

from dataclasses import dataclass

from spades.engine import Bid, MatchState, Phase, Play, Rules, seat_name
from spades.engine.legal import play_mask


class UnsolvablePosition(ValueError):
    """The state is not one the solver can take (not in play, or a hand is hidden)."""


@dataclass(frozen=True)
class Position:
    """A double-dummy position: what the solver searches from (make one with :meth:`of`)."""

    rules: Rules
    #: Each seat's cards, as the engine's bitmask.
    hands: tuple[int, ...]
    #: The trick in progress, in play order.
    trick: tuple[Play, ...]
    to_play: int
    spades_broken: bool
    #: The tricks each seat has taken this hand.
    tricks_won: tuple[int, ...]
    bids: tuple[Bid, ...]
    #: The bags each side carried into this hand (per side, as the engine lists sides).
    bags: tuple[int, ...]
    #: The cards the player to act may play (the engine's rule), as a bitmask.
    legal: int

    @classmethod
    def of(cls, state: MatchState) -> Position:
        """The position of ``state``, which must be in play with every hand known."""
        if state.phase is not Phase.PLAYING:
            raise UnsolvablePosition(
                f"the solver needs a hand in play, and this match is at {state.phase.value!r}"
            )
        seat = state.turn
        if seat is None:
            raise UnsolvablePosition("no one is to play a card now")
        bids: list[Bid] = []
        for other, bid in enumerate(state.bids):
            if bid is None:
                raise UnsolvablePosition(f"{seat_name(other)} has not bid")
            bids.append(bid)
        for other, hand in enumerate(state.hands):
            if hand.bit_count() != state.card_count(other):
                raise UnsolvablePosition(
                    f"{seat_name(other)}'s cards are hidden in this state: the solver needs "
                    "every hand (double dummy)"
                )
        return cls(
            rules=state.rules,
            hands=tuple(state.hands),
            trick=tuple(state.trick),
            to_play=seat,
            spades_broken=state.spades_broken,
            tricks_won=tuple(state.tricks_won),
            bids=tuple(bids),
            bags=tuple(state.bags),
            legal=play_mask(state, seat),
        )

    @property
    def leader(self) -> int:
        """The seat that led (or leads) the trick in progress."""
        return self.trick[0].seat if self.trick else self.to_play

    @property
    def tricks_left(self) -> int:
        """The tricks still to be won, the one in progress included."""
        return (self.hands[self.leader]).bit_count() + (1 if self.trick else 0)

    def side_of(self, seat: int) -> tuple[int, ...]:
        """The seats that score with ``seat`` (itself alone in cutthroat)."""
        return self.rules.sides[self.rules.seating.side_of(seat)]

    def tricks_taken_by_side(self, seat: int) -> int:
        """The tricks ``seat``'s side has taken so far this hand."""
        return sum(self.tricks_won[other] for other in self.side_of(seat))
