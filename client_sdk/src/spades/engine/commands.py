"""Commands: what an action causes, as events, checked against the rules.

:func:`decide` is pure: ``decide(state, seat, action)`` returns the events the action causes
and leaves ``state`` as it was. An action can cause several events, each decided on the state
the earlier ones leave (a card ends a trick, the trick ends the hand, the hand deals the next),
so deciding folds each event into a scratch copy as it goes; :func:`act` is decide and evolve
in one step, in place (for search), and :func:`spades.engine.acting.apply` does it on a copy,
returning it. Nothing here changes a state except by folding an event.

>>> from spades.engine import BID, Rules, seated_match
>>> state, _ = seated_match(Rules(), seed=bytes(32))
>>> [type(event).__name__ for event in decide(state, state.seat_to_act(), BID[3])]
['BidMade']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Concatenate, Final, ParamSpec

from spades.engine import events as ev
from spades.engine.actions import (
    Action,
    Bid,
    ChooseBlindNil,
    ClaimExtension,
    Concede,
    MakeBid,
    PassCards,
    PlayCard,
)
from spades.engine.automatic import automatic_choice
from spades.engine.cards import CARDS, Card, cards_of, mask_of
from spades.engine.deals import check_preset_deals, hands_of_deal
from spades.engine.errors import IllegalAction
from spades.engine.legal import (
    PHASE_WANTS,
    bid_refusal,
    blind_nil_open,
    impossible,
    is_legal_bid,
    legal_actions,
    play_mask,
    play_refusal,
    turn_refusal,
)
from spades.engine.rules import MAX_HAND_SIZE, Rules
from spades.engine.scoring import match_end, score_side
from spades.engine.seating import SEAT_NAMES, Seat, seat_name
from spades.engine.shuffle import SHUFFLE_VERSION, commitment, first_dealer, new_seed
from spades.engine.state import (
    MatchState,
    Phase,
    fold_bid,
    fold_cards_dealt,
    fold_play,
    fold_trick,
)
from spades.reasons import Reason

Events = list[ev.Event]
_P = ParamSpec("_P")


def decide(state: MatchState, seat: Seat, action: Action) -> Events:
    """The events ``seat`` taking ``action`` causes; ``state`` is left as it was.

    Raises :class:`IllegalAction` with the reason.
    """
    return act(state.clone(), seat, action)


def applied(
    state: MatchState,
    command: Callable[Concatenate[MatchState, _P], Events],
    *args: _P.args,
    **kwargs: _P.kwargs,
) -> tuple[MatchState, Events]:
    """The state after ``command`` (one of this module's in-place commands) on a copy of
    ``state``, and the events it caused; ``state`` is left as it was."""
    new = state.clone()
    return new, command(new, *args, **kwargs)


def act(state: MatchState, seat: Seat, action: Action) -> Events:
    """Decide and fold ``seat``'s ``action`` in place (``state`` stays as it was on error)."""
    out: Events
    turn = state.turn
    if turn is not None and seat == turn:
        # The hot paths of search and random play: a card or a bid on turn, in its phase (any
        # refusal is left to the general path below, which checks in the documented order).
        if type(action) is _PLAY_CARD and state.phase is _PLAYING:
            out = []
            _play(state, seat, action.card, out)
            return out
        if type(action) is _MAKE_BID and state.phase is _BIDDING:
            tricks = action.tricks
            if is_legal_bid(state, seat, tricks):
                out = []
                _bid_made(state, seat, tricks, out)
                return out
    _check_seat(state, seat)
    refusal = impossible(action)  # input no state could accept is refused first
    if refusal is not None:
        raise refusal
    if isinstance(action, Concede):
        return _concede(state, seat)
    if seat != state.turn or state.phase in (Phase.ENDED, Phase.WAITING_FOR_PLAYERS):
        raise turn_refusal(state, seat)
    out = []
    phase = state.phase
    match action:
        case ClaimExtension():
            _claim_extension(state, seat, out)
        case PlayCard(card=card) if phase is Phase.PLAYING:
            _play(state, seat, card, out)
        case MakeBid(tricks=tricks) if phase is Phase.BIDDING:
            _bid(state, seat, tricks, out)
        case ChooseBlindNil(blind=blind) if phase is Phase.BLIND_NIL_CHOICE:
            _choose_blind(state, seat, blind, out)
        case PassCards(cards=cards) if phase is Phase.PASSING:
            _pass(state, seat, cards, out)
        case _:
            raise IllegalAction(
                Reason.WRONG_PHASE, f"it is time for {PHASE_WANTS[phase]}, not to {action}"
            )
    return out


def automatic_action(state: MatchState) -> Action:
    """What the clock does for the seat whose time ran out (see :mod:`spades.engine.automatic`)."""
    seat = state.turn
    if seat is None:
        raise IllegalAction(Reason.NO_ONE_TO_ACT, "no one is to act, so no turn can time out")
    return automatic_choice(state.rules, legal_actions(state, seat))


def time_out(state: MatchState) -> Events:
    """The clock acts for the seat on turn: TurnTimedOut, then the automatic action's events."""
    action = automatic_action(state)
    seat = state.turn
    assert seat is not None  # (automatic_action refuses when no one is to act)
    out: Events = []
    _emit(state, ev.TurnTimedOut(seat, action), out)
    out.extend(act(state, seat, action))
    return out


def substitute(state: MatchState, seat: Seat, reason: ev.SubstitutionReason) -> Events:
    """A substitute takes over ``seat`` (when is the server's policy, not a rule)."""
    _check_seat(state, seat)
    _check_in_play(state)
    out: Events = []
    _emit(state, ev.SeatSubstituted(seat, reason), out)
    return out


def reclaim(state: MatchState, seat: Seat) -> Events:
    """The player of ``seat`` takes it back from its substitute."""
    _check_seat(state, seat)
    _check_in_play(state)
    if state.substitutions[seat] is None:
        raise IllegalAction(
            Reason.NOT_SUBSTITUTED, f"{seat_name(seat)} is not played by a substitute"
        )
    out: Events = []
    _emit(state, ev.SeatReclaimed(seat), out)
    return out


def close(state: MatchState) -> Events:
    """The operator closes the table: the match ends and no side wins."""
    if state.phase is Phase.ENDED:
        raise IllegalAction(Reason.MATCH_OVER, "the match is already over")
    out: Events = []
    _end(state, ev.EndReason.CLOSED, (), out)
    return out


def take_seat(state: MatchState, seat: Seat, name: str, bot: bool = False) -> Events:
    """A player takes ``seat``; the last seat taken deals the first hand."""
    _check_seat(state, seat)
    if state.phase is not Phase.WAITING_FOR_PLAYERS:
        raise IllegalAction(Reason.MATCH_STARTED, "the match has already started")
    if state.players[seat] is not None:
        raise IllegalAction(Reason.SEAT_TAKEN, f"{seat_name(seat)} is already taken")
    out: Events = []
    if seat < len(SEAT_NAMES) and name == SEAT_NAMES[seat] and (bot is True or bot is False):
        # A seat named after itself (seated_match's bots): the interned event.
        taken = _SEAT_TAKEN[seat][1 if bot else 0]
    else:
        taken = ev.SeatTaken(seat, name, bot)
    _emit(state, taken, out)
    if all(player is not None for player in state.players):
        _start_hand(state, out)
    return out


def leave_seat(state: MatchState, seat: Seat) -> Events:
    """A player leaves ``seat`` before the match starts."""
    _check_seat(state, seat)
    if state.phase is not Phase.WAITING_FOR_PLAYERS:
        raise IllegalAction(
            Reason.MATCH_STARTED, "the match has started; a player can only concede now"
        )
    if state.players[seat] is None:
        raise IllegalAction(Reason.SEAT_EMPTY, f"{seat_name(seat)} is empty")
    out: Events = []
    _emit(state, ev.SeatLeft(seat), out)
    return out


# ---------------------------------------------------------------------- starting a match


def new_match(
    rules: Rules | None = None,
    seed: bytes | None = None,
    preset_deals: Sequence[Sequence[Iterable[int]]] = (),
) -> tuple[MatchState, Events]:
    """A new match waiting for players, and its TableCreated event. A fresh seed by default.

    ``preset_deals`` gives the first hands' cards (one list of cards per seat); each must deal
    the rule set's deck out as the shuffle would (the hand sizes, no card twice).
    """
    rules = rules or Rules()
    seed = new_seed() if seed is None else seed
    deals = check_preset_deals(rules, preset_deals)
    created = ev.TableCreated(rules, commitment(seed), SHUFFLE_VERSION, seed, deals)
    state = MatchState()
    state.evolve(created)
    return state, [created]


def seated_match(
    rules: Rules | None = None,
    seed: bytes | None = None,
    names: Sequence[str] | None = None,
    preset_deals: Sequence[Sequence[Iterable[int]]] = (),
) -> tuple[MatchState, Events]:
    """A new match with every seat taken (by bots named after their seats), first hand dealt."""
    state, events = new_match(rules, seed, preset_deals)
    for seat in state.seating.seats:
        name = names[seat] if names else SEAT_NAMES[seat]
        events.extend(take_seat(state, seat, name, bot=True))
    return state, events


# ---------------------------------------------------------------------- the steps of an action


def _emit(state: MatchState, event: ev.Event, out: Events) -> None:
    out.append(event)
    state.evolve(event)


def _check_seat(state: MatchState, seat: Seat) -> None:
    players = state.game.players
    if not 0 <= seat < players:
        raise IllegalAction(
            Reason.NO_SUCH_SEAT, f"there is no seat {seat} at a {players}-player table"
        )


def _check_in_play(state: MatchState) -> None:
    if state.phase is Phase.WAITING_FOR_PLAYERS:
        raise IllegalAction(
            Reason.MATCH_NOT_STARTED, "the match has not started: seats are still free"
        )
    if state.phase is Phase.ENDED:
        raise IllegalAction(Reason.MATCH_OVER, "the match is over")


def _claim_extension(state: MatchState, seat: Seat, out: Events) -> None:
    if not state.rules.clock.extension_millis:
        raise IllegalAction(Reason.NO_EXTENSION, "this table's clock has no extension")
    if state.extension_claimed:
        raise IllegalAction(
            Reason.EXTENSION_ALREADY_CLAIMED, "you have already claimed this turn's extension"
        )
    _emit(state, ev.ExtensionClaimed(seat), out)


def _choose_blind(state: MatchState, seat: Seat, blind: bool, out: Events) -> None:
    if blind and not blind_nil_open(state, seat):
        raise IllegalAction(
            Reason.BLIND_NIL_NOT_OPEN,
            "your partner bid Blind Nil, so your team needs your bid to reach the "
            f"minimum of {state.rules.minimum_team_bid}: look at your cards",
        )
    _emit(state, ev.BlindNilChosen(seat, blind), out)
    if blind:
        _emit(state, ev.BidMade(seat, Bid.BLIND_NIL), out)
        _after_bidding_step(state, out)
    else:
        _emit(state, ev.CardsShown(seat, tuple(cards_of(state.hands[seat]))), out)


def _bid(state: MatchState, seat: Seat, tricks: int, out: Events) -> None:
    if not is_legal_bid(state, seat, tricks):
        raise bid_refusal(state, seat, tricks)
    _bid_made(state, seat, tricks, out)


def _bid_made(state: MatchState, seat: Seat, tricks: int, out: Events) -> None:
    # A legal bid: the interned event, folded by its evolver directly (what _emit would do).
    made = _BID_MADE[seat][tricks]
    out.append(made)
    state.extension_claimed = False
    fold_bid(state, seat, _BIDS[tricks])
    _after_bidding_step(state, out)


def _after_bidding_step(state: MatchState, out: Events) -> None:
    # Blind Nil bidders see their cards when bidding (and any pass to them) is over.
    if state.phase is Phase.PLAYING:
        for seat in state.seating.seats:
            if not state.visible[seat]:
                _emit(state, ev.CardsShown(seat, tuple(cards_of(state.hands[seat]))), out)


def _pass(state: MatchState, seat: Seat, cards: Sequence[int], out: Events) -> None:
    count = state.rules.blind_nil_pass_cards
    mask = mask_of(cards)
    if len(cards) != count or mask.bit_count() != count:
        raise IllegalAction(
            Reason.IMPOSSIBLE_PASS, f"pass exactly {count} different cards", field="card_pass.cards"
        )
    if mask & ~state.hands[seat]:
        missing = next(n for n in cards if not state.hands[seat] >> n & 1)
        raise IllegalAction(
            Reason.CARD_NOT_HELD,
            f"you do not hold the {CARDS[missing].symbol}",
            field="card_pass.cards",
        )
    receiver = state.passes_pending[0][1]
    _emit(state, ev.CardsPassed(seat, receiver, tuple(cards_of(mask)), count), out)
    if not state.visible[receiver]:
        _emit(state, ev.CardsShown(receiver, tuple(cards_of(state.hands[receiver]))), out)
    _after_bidding_step(state, out)


def _play(state: MatchState, seat: Seat, card: int, out: Events) -> None:
    hand = state.hands[seat]
    if not 0 <= card < 54 or not hand >> card & 1:
        shown = CARDS[card].symbol if 0 <= card < 54 else str(card)
        raise IllegalAction(Reason.CARD_NOT_HELD, f"you do not hold the {shown}", field="play_card")
    if not play_mask(state, seat) >> card & 1:
        raise play_refusal(state, seat, card)
    # The hot path of search and random play: the same evolvers evolve() would pick, called
    # directly (no lookup by event type), with what evolve() does first.
    played = _CARD_PLAYED[seat][card]
    out.append(played)
    state.extension_claimed = False
    fold_play(state, seat, card)
    game = state.game
    trick = state.trick
    if len(trick) == game.players:
        winner = game.trick_winner(trick)
        won = _trick_won(len(state.completed_tricks) + 1, winner.seat, winner.card)
        out.append(won)
        fold_trick(state, winner.seat)
        if len(state.completed_tricks) == game.hand_size:
            _finish_hand(state, out)


def _finish_hand(state: MatchState, out: Events) -> None:
    bids = {seat: bid for seat, bid in enumerate(state.bids) if bid is not None}
    tricks = dict(enumerate(state.tricks_won))
    sides = state.game.sides
    results = tuple(
        score_side(state.rules, side, bids, tricks, state.scores[index], state.bags[index])
        for index, side in enumerate(sides)
    )
    automatic = state.automatic_play
    seats = (
        tuple(seat for seat in state.seating.seats if automatic >> seat & 1) if automatic else ()
    )
    _emit(state, ev.HandScored(state.hand_number, results, seats), out)
    ended = match_end(state.rules, state.scores, state.hand_number)
    if ended is not None:
        reason, winner = ended
        _end(state, reason, sides[winner], out)
        return
    _start_hand(state, out)


def _concede(state: MatchState, seat: Seat) -> Events:
    if state.phase is Phase.WAITING_FOR_PLAYERS:
        raise IllegalAction(
            Reason.MATCH_NOT_STARTED, "the match has not started, so there is nothing to concede"
        )
    if state.phase is Phase.ENDED:
        raise IllegalAction(Reason.MATCH_OVER, "the match is over")
    out: Events = []
    sides = state.game.sides
    loser = state.seating.side_of(seat)
    others = [index for index in range(len(sides)) if index != loser]
    top = max(state.scores[index] for index in others)
    winners = tuple(seat for index in others if state.scores[index] == top for seat in sides[index])
    _emit(state, ev.Conceded(seat), out)
    _end(state, ev.EndReason.CONCESSION, winners, out)
    return out


def _end(state: MatchState, reason: ev.EndReason, winners: tuple[Seat, ...], out: Events) -> None:
    _emit(state, ev.MatchEnded(reason, tuple(sorted(winners)), tuple(state.scores)), out)
    if state.seed is not None:
        _emit(state, ev.SeedRevealed(state.seed), out)


def _start_hand(state: MatchState, out: Events) -> None:
    if state.seed is None:
        raise IllegalAction(
            Reason.NO_SEED, "this state has no seed (it is a view), so it cannot deal"
        )
    game = state.game
    number = state.hand_number + 1
    if number == 1 or state.dealer is None:
        dealer = first_dealer(state.seed, game.players)
    else:
        dealer = game.seating.next(state.dealer)
    eligible = _blind_nil_eligible(state, dealer)
    _emit(state, _hand_started(number, dealer, eligible), out)
    hands = hands_of_deal(game, state.seed, number, state.preset_deals)
    for seat, cards in enumerate(hands):
        mask = 0
        for card in cards:  # (mask_of, inlined: cards is not a compiled module)
            mask |= 1 << card
        shown = sorted_cards(mask)
        dealt = ev.CardsDealt(seat, shown, len(shown), seat in eligible)
        # What _emit does, with the mask the evolver would compute again from the cards.
        out.append(dealt)
        state.extension_claimed = False
        fold_cards_dealt(state, dealt, mask)


def _blind_nil_eligible(state: MatchState, dealer: Seat) -> tuple[Seat, ...]:
    rules = state.rules
    if not rules.blind_nil:
        return ()
    seating = state.game.seating
    eligible = []
    for seat in seating.order_after(dealer):
        side = seating.side_of(seat)
        best_other = max(s for index, s in enumerate(state.scores) if index != side)
        if best_other - state.scores[side] >= rules.blind_nil_deficit:
            eligible.append(seat)
    return tuple(eligible)


def _hand_started(number: int, dealer: Seat, eligible: tuple[Seat, ...]) -> ev.HandStarted:
    """The HandStarted event, interned for the first hands with no Blind Nil choice."""
    if eligible or number >= _INTERNED_HANDS:
        return ev.HandStarted(number, dealer, eligible)
    index = number * 4 + dealer
    started = _HAND_STARTED[index]
    if started is None:
        started = _HAND_STARTED[index] = ev.HandStarted(number, dealer, ())
    return started


def sorted_cards(mask: int) -> tuple[Card, ...]:
    """The cards of a bitmask as a tuple, lowest number first (``tuple(cards_of(mask))``,
    a byte of the mask at a time)."""
    found: list[Card] = []
    chunk = 0
    while mask:
        if mask & 0xFF:
            found += _CARDS_BY_BYTE[chunk][mask & 0xFF]
        mask >>= 8
        chunk += 1
    return tuple(found)


def _trick_won(number: int, seat: Seat, card: int) -> ev.TrickWon:
    """The TrickWon event, interned like CardPlayed (13 a hand on the hot path)."""
    index = ((number - 1) * 4 + seat) * 54 + card
    won = _TRICK_WON[index]
    if won is None:
        won = _TRICK_WON[index] = ev.TrickWon(number, seat, CARDS[card])
    return won


#: The HandStarted events (no Blind Nil choice) made so far, by hand number and dealer.
_INTERNED_HANDS: Final = 64
_HAND_STARTED: Final[list[ev.HandStarted | None]] = [None] * (_INTERNED_HANDS * 4)

#: The TrickWon events made so far, by trick number (1..18), seat and card.
_TRICK_WON: Final[list[ev.TrickWon | None]] = [None] * (18 * 4 * 54)

# Constants for the hot path (the compiled build reads them without a module lookup).
_PLAY_CARD: Final = PlayCard
_MAKE_BID: Final = MakeBid
_PLAYING: Final = Phase.PLAYING
_BIDDING: Final = Phase.BIDDING

#: Every bid of a number of tricks (0 is Nil), and its BidMade event by seat, interned.
_BIDS: Final = (Bid.NIL, *(Bid(tricks) for tricks in range(1, MAX_HAND_SIZE + 1)))
_BID_MADE: Final = tuple(tuple(ev.BidMade(seat, bid) for bid in _BIDS) for seat in range(4))
#: The SeatTaken events of seats named after themselves, by seat and whether a bot sits.
_SEAT_TAKEN: Final = tuple(
    (ev.SeatTaken(seat, SEAT_NAMES[seat], False), ev.SeatTaken(seat, SEAT_NAMES[seat], True))
    for seat in range(4)
)
#: The cards of every byte of a card mask, so a dealt hand's tuple needs no bit loop.
_CARDS_BY_BYTE: Final = tuple(
    tuple(
        tuple(
            CARDS[8 * chunk + bit] for bit in range(8) if byte >> bit & 1 and 8 * chunk + bit < 54
        )
        for byte in range(256)
    )
    for chunk in range(7)
)

#: Every possible CardPlayed event, interned (events are immutable; plays are the hot path).
_CARD_PLAYED: Final = tuple(
    tuple(ev.CardPlayed(seat, CARDS[number]) for number in range(54)) for seat in range(4)
)
