"""The Spades rules engine: pure, deterministic, and fast enough for search.

>>> from spades.engine import Rules, legal_actions, seated_match
>>> state, events = seated_match(Rules(), seed=bytes(32))
>>> len(legal_actions(state, state.seat_to_act()))  # the first bidder may bid Nil or 1..13
14

One concept per module: ``cards`` and ``actions`` (the vocabulary), ``rules`` (the variations)
compiled into a ``game`` (deck, trump power, ``seating``), ``tricks`` (``Play``, the suit a
card follows), ``events`` (what happened), ``state`` (a match folded from its events),
``legal`` (what a seat may do, and why not), ``commands`` (what an action causes), ``acting``
(both as the calls a table or a bot makes: ``apply``, ``act``, ``legal_actions``, ...),
``deals`` and ``shuffle`` (the cards of each hand), ``cheapest`` and ``automatic`` (the cards to
give away, the clock's action), ``scoring`` (a hand's result) and ``views`` (what each viewer
may know). Everything public is importable from ``spades.engine``.
"""

# `compiled` first: it chooses between the mypyc build and the sources before either loads.
from spades.engine import compiled, events
from spades.engine.acting import (
    act,
    apply,
    apply_seat,
    automatic_action,
    close,
    leave_seat,
    legal_actions,
    reclaim,
    substitute,
    time_out,
)
from spades.engine.actions import (
    BID,
    BLIND,
    CLAIM_EXTENSION,
    CONCEDE,
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
    pass_cards,
)
from spades.engine.automatic import automatic_choice
from spades.engine.cards import CARDS, Card, Suit, card, cards_of, format_cards, parse_cards
from spades.engine.cheapest import cheapest_cards
from spades.engine.commands import decide, new_match, seated_match
from spades.engine.errors import IllegalAction, InvalidRules
from spades.engine.game import Game, card_power, trump_power
from spades.engine.legal import may_claim_extension, may_concede, pass_choice
from spades.engine.rules import Clock, Direction, Rules
from spades.engine.scoring import counting_tricks, match_end, score_side
from spades.engine.seating import SEAT_NAMES, Seat, Seating, seat_name
from spades.engine.shuffle import SHUFFLE_VERSION, commitment, new_seed
from spades.engine.state import MatchState, Phase
from spades.engine.tricks import CompletedTrick, Play, effective_suit
from spades.engine.views import SeatView, Viewer, redact, view, visible_legal_actions

__all__ = [
    "BID",
    "BLIND",
    "CARDS",
    "CLAIM_EXTENSION",
    "CONCEDE",
    "LOOK",
    "PLAY",
    "SEAT_NAMES",
    "SHUFFLE_VERSION",
    "Action",
    "Bid",
    "Card",
    "ChooseBlindNil",
    "ClaimExtension",
    "Clock",
    "CompletedTrick",
    "Concede",
    "Direction",
    "Game",
    "IllegalAction",
    "InvalidRules",
    "MakeBid",
    "MatchState",
    "PassCards",
    "Phase",
    "Play",
    "PlayCard",
    "Rules",
    "Seat",
    "SeatView",
    "Seating",
    "Suit",
    "Viewer",
    "act",
    "apply",
    "apply_seat",
    "automatic_action",
    "automatic_choice",
    "card",
    "card_power",
    "cards_of",
    "cheapest_cards",
    "close",
    "commitment",
    "compiled",
    "counting_tricks",
    "decide",
    "effective_suit",
    "events",
    "format_cards",
    "leave_seat",
    "legal_actions",
    "match_end",
    "may_claim_extension",
    "may_concede",
    "new_match",
    "new_seed",
    "parse_cards",
    "pass_cards",
    "pass_choice",
    "reclaim",
    "redact",
    "score_side",
    "seat_name",
    "seated_match",
    "substitute",
    "time_out",
    "trump_power",
    "view",
    "visible_legal_actions",
]
