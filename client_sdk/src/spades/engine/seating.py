"""Who sits where: the order of play, partners and scoring sides, for 4 or 3 players.

Seats are ints (0 North, 1 East, 2 South, 3 West; a cutthroat table has seats 0..2). Every
question about seat order (who plays next, who partners whom, which side a seat scores for,
the order of bidding) is answered here, once, so no other module does seat arithmetic.

>>> seating = Seating(players=4, step=1)
>>> seating.next(3), seating.partner(1), seating.side_of(2), seating.order_after(1)
(0, 3, 0, (2, 3, 0, 1))
>>> cutthroat = Seating(players=3, step=-1)
>>> cutthroat.next(0), cutthroat.partner(0), cutthroat.sides
(2, None, ((0,), (1,), (2,)))
"""

from __future__ import annotations

from typing import Final

#: A seat number: 0 North, 1 East, 2 South, 3 West.
Seat = int

SEAT_NAMES: Final[tuple[str, ...]] = ("North", "East", "South", "West")


def seat_name(seat: Seat) -> str:
    """The seat's compass name (``0`` is ``"North"``)."""
    return SEAT_NAMES[seat]


class Seating:
    """The seats of one table and their order of play (``step`` +1 clockwise, -1 counter).

    Four players sit as two partnerships (North-South, East-West); three play cutthroat, each
    for themselves. The answers are computed once, so asking is a tuple lookup.
    """

    __slots__ = (
        "_next",
        "_opponents",
        "_order_after",
        "_partner",
        "_side_of",
        "players",
        "seats",
        "sides",
        "step",
    )

    def __init__(self, players: int, step: int) -> None:
        self.players = players
        self.step = step
        self.seats: tuple[Seat, ...] = tuple(range(players))
        self._next = tuple((seat + step) % players for seat in self.seats)
        partnership = players == 4
        self._partner: tuple[Seat | None, ...] = tuple(
            (seat + 2) % 4 if partnership else None for seat in self.seats
        )
        #: The scoring sides: North-South and East-West, or each player alone.
        self.sides: tuple[tuple[Seat, ...], ...] = (
            ((0, 2), (1, 3)) if partnership else tuple((seat,) for seat in self.seats)
        )
        self._side_of = tuple(
            next(index for index, side in enumerate(self.sides) if seat in side)
            for seat in self.seats
        )
        self._order_after = tuple(
            tuple((seat + step * k) % players for k in range(1, players + 1)) for seat in self.seats
        )
        self._opponents = tuple(
            tuple(other for other in self.seats if self._side_of[other] != self._side_of[seat])
            for seat in self.seats
        )

    def next(self, seat: Seat) -> Seat:
        """The seat that plays after ``seat``."""
        return self._next[seat]

    def partner(self, seat: Seat) -> Seat | None:
        """The partner's seat, or None in cutthroat."""
        return self._partner[seat]

    def side_of(self, seat: Seat) -> int:
        """The index (into :attr:`sides`, scores and bags) of the side ``seat`` plays for."""
        return self._side_of[seat]

    def order_after(self, seat: Seat) -> tuple[Seat, ...]:
        """Every seat in order of play, starting after ``seat`` and ending with it (the
        bidding order after a dealer, the rest of a trick after a card)."""
        return self._order_after[seat]

    def opponents(self, seat: Seat) -> tuple[Seat, ...]:
        """The seats not on ``seat``'s side, in seat order."""
        return self._opponents[seat]

    def seat_at(self, first: Seat, position: int) -> Seat:
        """The seat ``position`` places after ``first`` in order of play (0 is ``first``)."""
        return (first + self.step * position) % self.players

    def __reduce__(self) -> tuple[type[Seating], tuple[int, int]]:
        # Spelled out so the mypyc build (a native class) pickles like the source.
        return Seating, (self.players, self.step)

    def __repr__(self) -> str:
        return f"Seating(players={self.players}, step={self.step})"
