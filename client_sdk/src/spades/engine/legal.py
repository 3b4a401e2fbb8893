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

from spades.engine.actions import BID, BLIND, LOOK, PLAY, Action, MakeBid, PassCards
from spades.engine.cards import SUIT_MASKS, TRUMP_MASK, Card, cards_of
from spades.engine.errors import IllegalAction
from spades.engine.rules import MAX_HAND_SIZE, PASS_SIZE, TWO_OF_CLUBS
from spades.engine.seating import Seat, seat_name
from spades.engine.state import MatchState, Phase
from spades.engine.tricks import effective_suit
from spades.reasons import Reason

_SUIT_NAMES: Final = ("clubs", "diamonds", "hearts", "spades")
_SUIT_SINGULAR: Final = ("a club", "a diamond", "a heart", "a spade")
#: The cards that must be followed when a card of each effective suit leads (jokers are spades).
_FOLLOW_MASKS: Final[tuple[int, ...]] = (SUIT_MASKS[0], SUIT_MASKS[1], SUIT_MASKS[2], TRUMP_MASK)

# Constants of this module (the compiled build reads them without a lookup in another module).
_PLAYING: Final = Phase.PLAYING
_TRUMP_MASK: Final = TRUMP_MASK
_TWO_OF_CLUBS: Final = TWO_OF_CLUBS

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
    turn = state.turn
    if turn is None or seat != turn:
        return []
    phase = state.phase
    if phase is _PLAYING:
        return plays_of(play_mask(state, seat))
    if phase is Phase.BIDDING:
        lowest, nil_ok = _bid_range(state, seat)
        bids: list[Action] = [BID[0]] if nil_ok else []
        bids += BID[lowest : state.game.hand_size + 1]
        return bids
    if phase is Phase.BLIND_NIL_CHOICE:
        return [BLIND, LOOK] if blind_nil_open(state, seat) else [LOOK]
    if phase is Phase.PASSING:
        hand = cards_of(state.hands[seat])
        count = state.rules.blind_nil_pass_cards
        return [PassCards(combo) for combo in itertools.combinations(hand, count)]
    return []


def pass_choice(state: MatchState, seat: Seat) -> tuple[int, list[Card]] | None:
    """The card pass ``seat`` must make now, as (how many, of which cards): a prompt says
    "choose 2 of these 13" instead of listing every combination. None when it is not to pass.

    >>> from spades.engine import Rules, seated_match
    >>> state, _ = seated_match(Rules(), seed=bytes(32))
    >>> pass_choice(state, state.seat_to_act()) is None  # bidding, not passing
    True
    """
    if seat != state.turn or state.phase is not Phase.PASSING:
        return None
    return state.rules.blind_nil_pass_cards, cards_of(state.hands[seat])


def may_claim_extension(state: MatchState, seat: Seat) -> bool:
    """Whether ``seat`` may claim its turn's one extension of the clock now."""
    return (
        seat == state.turn
        and state.phase not in (Phase.ENDED, Phase.WAITING_FOR_PLAYERS)
        and bool(state.rules.clock.extension_millis)
        and not state.extension_claimed
    )


def may_concede(state: MatchState) -> bool:
    """Whether a seated player may concede now: while the match is being played."""
    return state.phase not in (Phase.ENDED, Phase.WAITING_FOR_PLAYERS)


def play_mask(state: MatchState, seat: Seat) -> int:
    """The cards ``seat`` may play, as a bitmask, when it is its turn to play."""
    hand = state.hands[seat]
    if state.trick:
        follow = hand & _FOLLOW_MASKS[effective_suit(state.trick[0].card)]
        return follow or hand
    if must_lead_two_of_clubs(state, seat):
        return 1 << _TWO_OF_CLUBS
    if state.spades_broken or not state.game.spades_must_be_broken:
        return hand
    return (hand & ~_TRUMP_MASK) or hand


def must_lead_two_of_clubs(state: MatchState, seat: Seat) -> bool:
    return (
        state.game.two_of_clubs_leads
        and not state.completed_tricks
        and bool(state.hands[seat] & (1 << _TWO_OF_CLUBS))
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
    lowest, nil_ok = _bid_range(state, seat)
    numbers = list(range(lowest, state.game.hand_size + 1))
    return [0, *numbers] if nil_ok else numbers


def is_legal_bid(state: MatchState, seat: Seat, tricks: int) -> bool:
    """Whether ``tricks`` is in :func:`legal_bids` (without making the list: every bid asks)."""
    lowest, nil_ok = _bid_range(state, seat)
    if tricks == 0:
        return nil_ok
    return lowest <= tricks <= state.game.hand_size


def _bid_range(state: MatchState, seat: Seat) -> tuple[int, bool]:
    """The lowest number of tricks ``seat`` may bid (above Nil), and whether Nil is open."""
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
    return lowest_number, nil_ok


# ---------------------------------------------------------------------- refusal reasons
# Each refusal is decided here once, with its reason code (spades.reasons) and its words.


def bid_refusal(state: MatchState, seat: Seat, tricks: int) -> IllegalAction:
    """Why ``seat`` may not bid ``tricks`` now (``tricks`` not in :func:`legal_bids`)."""
    size = state.game.hand_size
    if not 0 <= tricks <= size:
        return IllegalAction(
            Reason.BID_OUT_OF_RANGE,
            f"a bid is a number of tricks from 0 (Nil) to {size}",
            field="bid.tricks",
        )
    if tricks == 0 and not state.rules.nil_allowed:
        return IllegalAction(Reason.NIL_NOT_ALLOWED, "Nil is not allowed at this table")
    minimum = state.rules.minimum_team_bid
    partner = state.game.seating.partner(seat)
    partner_bid = state.bids[partner] if partner is not None else None
    if tricks == 0 and partner_bid is not None:
        return IllegalAction(
            Reason.NIL_NOT_ALLOWED,
            f"Nil is open only when your partner's bid reaches the table minimum of "
            f"{minimum}, and your partner bid {partner_bid}",
        )
    return IllegalAction(
        Reason.BID_BELOW_TEAM_MINIMUM,
        f"your team must bid at least {minimum}: your partner bid {partner_bid}, "
        f"so you must bid at least {minimum - (partner_bid.tricks if partner_bid else 0)}",
    )


def play_refusal(state: MatchState, seat: Seat, card: int) -> IllegalAction:
    """Why ``seat`` may not play ``card``, a card it holds (not in :func:`play_mask`)."""
    if state.trick:
        led = effective_suit(state.trick[0].card)
        return IllegalAction(
            Reason.MUST_FOLLOW_SUIT,
            f"you hold {_SUIT_SINGULAR[led]}, so you must follow {_SUIT_NAMES[led]}",
        )
    if must_lead_two_of_clubs(state, seat):
        return IllegalAction(
            Reason.MUST_LEAD_TWO_OF_CLUBS, "the holder of the 2♣ must lead it to the first trick"
        )
    return IllegalAction(
        Reason.SPADES_NOT_BROKEN, "spades are not broken yet, and you hold another suit to lead"
    )


def turn_refusal(state: MatchState, seat: Seat) -> IllegalAction:
    """Why a seat that is not on turn may not act now."""
    if state.phase is Phase.ENDED:
        return IllegalAction(Reason.MATCH_OVER, "the match is over")
    if state.phase is Phase.WAITING_FOR_PLAYERS:
        return IllegalAction(
            Reason.MATCH_NOT_STARTED, "the match has not started: seats are still free"
        )
    if state.turn is None:
        return IllegalAction(Reason.NO_ONE_TO_ACT, "no one is to act now")
    return IllegalAction(
        Reason.NOT_YOUR_TURN, f"it is {seat_name(state.turn)}'s turn, not {seat_name(seat)}'s"
    )


def impossible(action: Action) -> IllegalAction | None:
    """Why no rule set could accept ``action`` whatever the state (a bid of more tricks than
    any hand holds, a card pass that is not two different cards), or None."""
    match action:
        case MakeBid(tricks=tricks) if not 0 <= tricks <= MAX_HAND_SIZE:
            return IllegalAction(
                Reason.IMPOSSIBLE_BID,
                f"a bid is at most {MAX_HAND_SIZE} tricks at any table",
                field="bid.tricks",
            )
        case PassCards(cards=cards) if len(cards) != PASS_SIZE or len(set(cards)) != PASS_SIZE:
            return IllegalAction(
                Reason.IMPOSSIBLE_PASS,
                f"pass exactly {PASS_SIZE} different cards",
                field="card_pass.cards",
            )
    return None


def plays_of(mask: int) -> list[Action]:
    """The play actions of the cards of a mask, lowest card first (a byte of the mask at a
    time: the table is small enough to stay in the cache, where one entry per suit's 8,192
    bit patterns measured no faster)."""
    plays: list[Action] = []
    chunk = 0
    while mask:
        if mask & 0xFF:
            plays += _PLAYS_BY_BYTE[chunk][mask & 0xFF]
        mask >>= 8
        chunk += 1
    return plays


#: The play actions of every byte of a card mask, so listing legal plays needs no bit loop.
_PLAYS_BY_BYTE: Final = tuple(
    tuple(
        tuple(PLAY[8 * chunk + bit] for bit in range(8) if byte >> bit & 1 and 8 * chunk + bit < 54)
        for byte in range(256)
    )
    for chunk in range(7)
)
