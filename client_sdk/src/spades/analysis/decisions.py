"""The decisions of a finished match, read from its record: every card played, with the whole
table before it (for double dummy) and what the seat that played it could see (for the worlds
it could not tell apart).

The record is replayed through the engine (:func:`spades.records.replay_steps`), so a record
the engine does not reproduce, event for event, is refused before anything is judged; its
deals are checked against the seed commitment first (:func:`spades.records.verify`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from spades.engine import Action, Bid, Card, MatchState, Phase, legal_actions, redact
from spades.engine import events as ev
from spades.records.record import events_of
from spades.records.replay import replay_steps
from spades.records.verify import verify
from spades.v1 import record_pb2

#: A seat's letter in the analysis: 0 is North ("N").
SEAT_LETTERS = "NESW"


class Unanalysable(ValueError):
    """The record cannot be analysed (not finished, or its seed hidden), and why."""


@dataclass(frozen=True, slots=True)
class PlayDecision:
    """One card played: where, by whom, and the states to judge it from."""

    #: The hand's number and the trick's within it, both counted from 1.
    hand: int
    trick: int
    seat: int
    card: Card
    #: The whole table just before the card (every hand known).
    state: MatchState
    #: The seat's own picture just before the card: its folded view (others' hands empty).
    seat_state: MatchState
    #: The actions the seat could choose from (its legal cards).
    legal: tuple[Action, ...]
    #: True when the clock played the card for the seat (its time ran out).
    timed_out: bool

    @property
    def opens_hand(self) -> bool:
        """True for the hand's first card (the position of the hand's par)."""
        return self.trick == 1 and not self.state.trick


def play_decisions(record: record_pb2.GameRecord) -> Iterator[PlayDecision]:
    """Every card played in the finished match of ``record``, in order.

    Raises :class:`Unanalysable` for an unfinished match, a
    :class:`~spades.records.VerificationError` for deals that are not the seed's, and a
    :class:`~spades.records.ReplayError` for a record the engine does not reproduce.
    """
    if not any(isinstance(event, ev.MatchEnded) for event in events_of(record)):
        raise Unanalysable(
            "the match in this record is not finished (a live table is never analysed)"
        )
    verify(record)
    trackers: list[MatchState] = []
    for step in replay_steps(record):
        before = step.before
        played = [event for event in step.events if isinstance(event, ev.CardPlayed)]
        if before is not None and played and before.phase is Phase.PLAYING:
            event = played[0]
            seat = event.seat
            yield PlayDecision(
                hand=before.hand_number,
                trick=len(before.completed_tricks) + 1,
                seat=seat,
                card=event.card,
                state=before.clone(),
                seat_state=trackers[seat].clone(),
                legal=tuple(legal_actions(before, seat)),
                timed_out=any(isinstance(e, ev.TurnTimedOut) for e in step.events),
            )
        if not trackers:
            trackers = [MatchState() for _ in range(step.after.rules.players)]
        for done in step.events:
            for seat, tracker in enumerate(trackers):
                tracker.evolve(redact(done, seat))


@dataclass(frozen=True, slots=True)
class HandPlay:
    """One hand's bids (None for a seat that did not bid) and the tricks each seat took."""

    hand: int
    bids: tuple[Bid | None, ...]
    tricks_won: tuple[int, ...]


def hands_played(record: record_pb2.GameRecord) -> list[HandPlay]:
    """Each hand of the record with its bids and tricks, in order."""
    events = events_of(record)
    created = events[0]
    assert isinstance(created, ev.TableCreated)
    players = created.rules.players
    hands: list[HandPlay] = []
    bids: list[Bid | None] = []
    tricks: list[int] = []
    number = 0

    def close() -> None:
        if number:
            hands.append(HandPlay(number, tuple(bids), tuple(tricks)))

    for event in events:
        if isinstance(event, ev.HandStarted):
            close()
            number, bids, tricks = event.hand_number, [None] * players, [0] * players
        elif isinstance(event, ev.BidMade):
            bids[event.seat] = event.bid
        elif isinstance(event, ev.TrickWon):
            tricks[event.winner] += 1
    close()
    return hands
