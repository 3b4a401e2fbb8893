"""What each seat, and a spectator, may know: the one place hidden information is decided.

:func:`redact` gives the copy of an event a viewer may receive; :func:`view` gives a viewer's
whole picture of a match at this moment. A viewer is a seat number, or ``None`` for a
spectator, who sees only what is public.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Final

from spades.engine import events as ev
from spades.engine.actions import Action, Bid, PassCards
from spades.engine.cards import Card, cards_of
from spades.engine.legal import legal_actions
from spades.engine.rules import Rules
from spades.engine.seating import Seat, Seating
from spades.engine.state import MatchState, Phase
from spades.engine.tricks import CompletedTrick, Play

Viewer = Seat | None

#: The card pass exists only between partners, so a pass's seats sit at a partnership table.
_PARTNERSHIP: Final = Seating(players=4, step=1)


def redact(event: ev.Event, viewer: Viewer) -> ev.Event:
    """The event as ``viewer`` may see it; the same object when nothing in it is hidden."""
    match event:
        case ev.CardsDealt(seat=seat, face_down=face_down):
            return event if seat == viewer and not face_down else replace(event, cards=None)
        case ev.CardsShown(seat=seat):
            return event if seat == viewer else replace(event, cards=None)
        case ev.CardsPassed(from_seat=giver, to_seat=receiver):
            if viewer is not None and viewer in (giver, receiver):
                return event
            return replace(event, cards=None)
        case ev.TurnTimedOut(seat=seat, automatic_action=PassCards()):
            # A pass made by the clock is as private as one the player made.
            if viewer is not None and viewer in (seat, _PARTNERSHIP.partner(seat)):
                return event
            return replace(event, automatic_action=PassCards(()))
        case ev.TableCreated():
            return replace(event, seed=None, preset_deals=None)
    return event


@dataclass(frozen=True, slots=True)
class SeatView:
    """Everything one viewer may know about a match at one moment."""

    viewer: Viewer
    rules: Rules
    phase: Phase
    players: tuple[tuple[str, bool] | None, ...]
    hand_number: int
    #: None before the first hand.
    dealer: Seat | None
    #: The seat to act, None when no one is.
    turn: Seat | None
    #: The viewer's own cards; None for a spectator or while the seat has not looked yet.
    hand: tuple[Card, ...] | None
    #: How many cards each seat holds.
    hand_sizes: tuple[int, ...]
    bids: tuple[Bid | None, ...]
    blind_nil_pending: tuple[int, ...]
    #: The seat that leads the trick in progress (or led the last one) in the play phase;
    #: None in every other phase, and while this viewer cannot know who leads (the 2♣ it
    #: cannot see).
    leader: Seat | None
    current_trick: tuple[Play, ...]
    completed_tricks: tuple[CompletedTrick, ...]
    tricks_won: tuple[int, ...]
    spades_broken: bool
    scores: tuple[int, ...]
    bags: tuple[int, ...]
    hand_results: tuple[ev.HandScored, ...]
    legal_actions: tuple[Action, ...]
    seed_commitment: bytes
    #: Only once the match is over.
    seed: bytes | None
    end: ev.MatchEnded | None
    #: The seats a substitute (a house bot) plays now.
    substituted: tuple[int, ...] = ()


def visible_legal_actions(state: MatchState, seat: int) -> list[Action]:
    """The seat's legal actions, as far as it may know them: none that name a card it has not
    been shown (between the events of one action, a Blind Nil bidder can be on turn a moment
    before its cards are shown to it)."""
    if not state.visible[seat] and state.phase is not Phase.BLIND_NIL_CHOICE:
        return []
    return legal_actions(state, seat)


def view(state: MatchState, viewer: Viewer) -> SeatView:
    """What ``viewer`` (a seat, or None for a spectator) may know of ``state`` now."""
    hand: tuple[Card, ...] | None = None
    legal: tuple[Action, ...] = ()
    if viewer is not None:
        if state.visible[viewer]:
            hand = tuple(cards_of(state.hands[viewer]))
        legal = tuple(visible_legal_actions(state, viewer))
    hand_started = state.phase is not Phase.WAITING_FOR_PLAYERS
    return SeatView(
        viewer=viewer,
        rules=state.rules,
        phase=state.phase,
        players=tuple(state.players),
        hand_number=state.hand_number,
        dealer=state.dealer,
        turn=state.turn,
        hand=hand,
        hand_sizes=tuple(map(state.card_count, state.seating.seats)) if hand_started else (),
        bids=tuple(state.bids),
        blind_nil_pending=state.blind_pending,
        leader=state.leader if state.phase is Phase.PLAYING else None,
        current_trick=tuple(state.trick),
        completed_tricks=state.completed_tricks,
        tricks_won=tuple(state.tricks_won),
        spades_broken=state.spades_broken,
        scores=tuple(state.scores),
        bags=tuple(state.bags),
        hand_results=state.hand_results,
        legal_actions=legal,
        seed_commitment=state.seed_commitment,
        seed=state.seed if state.phase is Phase.ENDED else None,
        end=state.end,
        substituted=tuple(
            seat for seat, reason in enumerate(state.substitutions) if reason is not None
        ),
    )
