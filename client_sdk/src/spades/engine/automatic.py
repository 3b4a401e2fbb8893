"""The automatic action: what is played for a seat that did not answer in time or in rule.

RULES.md section 3: the clock's action for a seat whose time ran out is a bid of 1 (or the
lowest bid a minimum team bid allows), "look" at a Blind Nil choice, the cheapest cards for a
pass, and the cheapest legal card in play (the order of :mod:`spades.engine.cheapest`). The
server's clock takes it, and the SDK plays it in place of a bot's illegal answer, so a table
never waits and both replace a decision the same way.

>>> from spades.engine import Rules, legal_actions, seated_match
>>> state, _ = seated_match(Rules(), seed=bytes(32))
>>> str(automatic_choice(state.rules, legal_actions(state, state.seat_to_act())))
'bid 1'
"""

from __future__ import annotations

from collections.abc import Sequence

from spades.engine.actions import (
    BID,
    LOOK,
    PLAY,
    Action,
    ChooseBlindNil,
    MakeBid,
    PassCards,
    PlayCard,
)
from spades.engine.cheapest import cheapest_cards
from spades.engine.errors import IllegalAction
from spades.engine.rules import Rules
from spades.reasons import Reason


def automatic_choice(rules: Rules, legal: Sequence[Action]) -> Action:
    """The automatic action among ``legal``, a seat's legal actions at one prompt."""
    if not legal:
        raise IllegalAction(Reason.NO_AUTOMATIC_ACTION, "there is no legal action to choose from")
    match legal[0]:
        case ChooseBlindNil():
            return LOOK
        case MakeBid():
            bids = [action.tricks for action in legal if isinstance(action, MakeBid)]
            return BID[1] if 1 in bids else BID[min(tricks for tricks in bids if tricks > 0)]
        case PassCards(cards=first):
            # Every pass of the hand is legal, so together they name the hand.
            passes = [action.cards for action in legal if isinstance(action, PassCards)]
            hand = {card for cards in passes for card in cards}
            return PassCards(tuple(sorted(cheapest_cards(rules, hand)[: len(first)])))
        case PlayCard():
            cards = [action.card for action in legal if isinstance(action, PlayCard)]
            return PLAY[cheapest_cards(rules, cards)[0]]
    raise IllegalAction(Reason.NO_AUTOMATIC_ACTION, f"no automatic action answers {legal[0]}")
