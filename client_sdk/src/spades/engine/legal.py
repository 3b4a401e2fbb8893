"""What a seat may do now, and why an action it tried is not allowed.

The rules of legality live here once: following suit (jokers are spades), breaking spades,
the 2♣ lead, the bids a minimum team bid leaves open, one Blind Nil per team. The refusal
reasons speak to the player ("you hold a heart, so you must follow hearts").

>>> from spades.engine import Rules, seated_match
>>> state, _ = seated_match(Rules(), seed=bytes(32))
>>> [str(action) for action in legal_actions(state, state.seat_to_act())][:3]
['bid nil', 'bid 1', 'bid 2']
"""

from __future__ import annotations

import itertools
from typing import Final

from spades.engine.actions import BID, BLIND, LOOK, PLAY, Action, PassCards
from spades.engine.cards import SUIT_MASKS, TRUMP_MASK, cards_of
from spades.engine.rules import TWO_OF_CLUBS
from spades.engine.seating import Seat, seat_name
from spades.engine.state import MatchState, Phase
from spades.engine.tricks import effective_suit

_SUIT_NAMES: Final = ("clubs", "diamonds", "hearts", "spades")
_SUIT_SINGULAR: Final = ("a club", "a diamond", "a heart", "a spade")
#: The cards that must be followed when a card of each effective suit leads (jokers are spades).
_FOLLOW_MASKS: Final = (SUIT_MASKS[0], SUIT_MASKS[1], SUIT_MASKS[2], TRUMP_MASK)

_PLAYING: Final = Phase.PLAYING  # (a constant: the compiled build reads it without a lookup)

#: What each phase waits for, to say why another kind of action is refused.
PHASE_WANTS: Final = {
    Phase.WAITING_FOR_PLAYERS: "players to sit down",
    Phase.BLIND_NIL_CHOICE: "the Blind Nil choice (bid Blind Nil or look)",
    Phase.BIDDING: "bidding",
    Phase.PASSING: "the Blind Nil card pass",
    Phase.PLAYING: "playing a card",
    Phase.ENDED: "nothing: the match is over",
}


def legal_actions(state: MatchState, seat: Seat) -> list[Action]:
    """What ``seat`` may do now: empty when it is not its turn. Conceding is always open
    during a match and is not listed."""
    if seat != state.turn:
        return []
    phase = state.phase
    if phase is _PLAYING:
        mask = play_mask(state, seat)
        plays: list[Action] = []
        chunk = 0
        while mask:
            if mask & 0xFF:
                plays += _PLAYS_BY_BYTE[chunk][mask & 0xFF]
            mask >>= 8
            chunk += 1
        return plays
    if phase is Phase.BIDDING:
        return [BID[tricks] for tricks in legal_bids(state, seat)]
    if phase is Phase.BLIND_NIL_CHOICE:
        return [BLIND, LOOK] if blind_nil_open(state, seat) else [LOOK]
    if phase is Phase.PASSING:
        hand = cards_of(state.hands[seat])
        count = state.rules.blind_nil_pass_cards
        return [PassCards(combo) for combo in itertools.combinations(hand, count)]
    return []


def play_mask(state: MatchState, seat: Seat) -> int:
    """The cards ``seat`` may play, as a bitmask, when it is its turn to play."""
    hand = state.hands[seat]
    if state.trick:
        follow = hand & _FOLLOW_MASKS[effective_suit(state.trick[0].card)]
        return follow or hand
    if must_lead_two_of_clubs(state, seat):
        return 1 << TWO_OF_CLUBS
    if state.spades_broken or not state.game.spades_must_be_broken:
        return hand
    return (hand & ~TRUMP_MASK) or hand


def must_lead_two_of_clubs(state: MatchState, seat: Seat) -> bool:
    return (
        state.game.two_of_clubs_leads
        and not state.completed_tricks
        and bool(state.hands[seat] & (1 << TWO_OF_CLUBS))
    )


def blind_nil_open(state: MatchState, seat: Seat) -> bool:
    """Whether ``seat`` may bid Blind Nil: with a minimum team bid, one Blind Nil per team
    (the partner must then reach the minimum)."""
    partner = state.game.seating.partner(seat)
    if not state.rules.minimum_team_bid or partner is None:
        return True
    partner_bid = state.bids[partner]
    return partner_bid is None or not partner_bid.is_nil


def legal_bids(state: MatchState, seat: Seat) -> list[int]:
    """The numbers of tricks ``seat`` may bid (0 is Nil)."""
    rules = state.rules
    lowest_number = 1
    nil_ok = rules.nil_allowed
    minimum = rules.minimum_team_bid
    partner = state.game.seating.partner(seat)
    if minimum and partner is not None:
        partner_bid = state.bids[partner]
        if partner_bid is not None:
            lowest_number = max(1, minimum - partner_bid.tricks)
            nil_ok = nil_ok and partner_bid.tricks >= minimum
    numbers = list(range(lowest_number, state.game.hand_size + 1))
    return [0, *numbers] if nil_ok else numbers


# ---------------------------------------------------------------------- refusal reasons


def why_bid_is_illegal(state: MatchState, seat: Seat, tricks: int) -> str:
    size = state.game.hand_size
    if not 0 <= tricks <= size:
        return f"a bid is a number of tricks from 0 (Nil) to {size}"
    if tricks == 0 and not state.rules.nil_allowed:
        return "Nil is not allowed at this table"
    minimum = state.rules.minimum_team_bid
    partner = state.game.seating.partner(seat)
    partner_bid = state.bids[partner] if partner is not None else None
    if tricks == 0 and partner_bid is not None:
        return (
            f"Nil is open only when your partner's bid reaches the table minimum of "
            f"{minimum}, and your partner bid {partner_bid}"
        )
    return (
        f"your team must bid at least {minimum}: your partner bid {partner_bid}, "
        f"so you must bid at least {minimum - (partner_bid.tricks if partner_bid else 0)}"
    )


def why_play_is_illegal(state: MatchState, seat: Seat, card: int) -> str:
    if state.trick:
        led = effective_suit(state.trick[0].card)
        return f"you hold {_SUIT_SINGULAR[led]}, so you must follow {_SUIT_NAMES[led]}"
    if must_lead_two_of_clubs(state, seat):
        return "the holder of the 2♣ must lead it to the first trick"
    return "spades are not broken yet, and you hold another suit to lead"


def why_not_your_turn(state: MatchState, seat: Seat) -> str:
    """Why a seat that is not on turn may not act now."""
    if state.phase is Phase.ENDED:
        return "the match is over"
    if state.phase is Phase.WAITING_FOR_PLAYERS:
        return "the match has not started: seats are still free"
    if state.turn is None:
        return "no one is to act now"
    return f"it is {seat_name(state.turn)}'s turn, not {seat_name(seat)}'s"


#: The play actions of every byte of a card mask, so listing legal plays needs no bit loop.
_PLAYS_BY_BYTE: Final = tuple(
    tuple(
        tuple(PLAY[8 * chunk + bit] for bit in range(8) if byte >> bit & 1 and 8 * chunk + bit < 54)
        for byte in range(256)
    )
    for chunk in range(7)
)
