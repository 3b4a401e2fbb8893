"""Event.actor: the seat whose own action an event records, for every event type."""

from __future__ import annotations

import typing

from spades.engine import BID, PLAY, Bid, Rules, card
from spades.engine import events as ev

#: One event of every type, and the seat it must name as its actor (None: no seat acted).
EXAMPLES: list[tuple[ev.Event, int | None]] = [
    (ev.TableCreated(Rules(), b"c", "v1", None), None),
    (ev.SeatTaken(2, "bot", True), 2),
    (ev.SeatLeft(3), 3),
    (ev.HandStarted(1, 0, ()), None),
    (ev.CardsDealt(1, None, 13, False), None),
    (ev.BlindNilChosen(1, True), 1),
    (ev.CardsShown(1, None), None),
    (ev.BidMade(3, Bid(4)), 3),
    (ev.CardsPassed(2, 0, None, 2), 2),
    (ev.CardPlayed(0, card("QH")), 0),
    (ev.TrickWon(1, 2, card("AH")), None),
    (ev.HandScored(1, ()), None),
    (ev.TurnTimedOut(1, BID[1]), None),  # the clock acted, not the seat
    (ev.ExtensionClaimed(2), 2),
    (ev.SeatSubstituted(1, ev.SubstitutionReason.TIMEOUTS), None),
    (ev.SeatReclaimed(1), None),
    (ev.Conceded(3), 3),
    (ev.MatchEnded(ev.EndReason.CONCESSION, (0, 2), (0, 0)), None),
    (ev.SeedRevealed(b"s"), None),
]


def test_every_event_type_names_its_actor() -> None:
    assert {type(event) for event, _ in EXAMPLES} == set(typing.get_args(ev.Event))
    for event, actor in EXAMPLES:
        assert event.actor == actor, type(event).__name__


def test_the_actor_is_not_a_field() -> None:
    # It is derived, so it never reaches the wire or a redacted copy on its own.
    played = ev.CardPlayed(1, card("2C"))
    assert "actor" not in {field.name for field in ev.CardPlayed.__dataclass_fields__.values()}
    assert played == ev.CardPlayed(1, card("2C")) and PLAY[card("2C")].card == played.card
