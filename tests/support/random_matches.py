"""Random legal matches under many rule sets (engine events, no server), for the tests of
records and of analysis: ``play`` one, and ``VARIANTS``, the rule sets and options the record
tests play once per run (tests/records/conftest.py)."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from spades.engine import (
    BLIND,
    CLAIM_EXTENSION,
    CONCEDE,
    LOOK,
    Bid,
    Rules,
    apply,
    legal_actions,
    reclaim,
    seated_match,
    substitute,
    time_out,
)
from spades.engine import events as ev
from spades.engine.shuffle import deal

SEED = bytes(range(32))

Play = Callable[..., list[ev.Event]]


def play(
    rules: Rules,
    seed: bytes = SEED,
    *,
    rng_seed: int = 0,
    timeout_rate: float = 0.0,
    extension_rate: float = 0.0,
    concede_after: int | None = None,
    stop_after: int | None = None,
    preset_deals: Sequence[Any] = (),
    substitute_after: int = 0,
    reclaim_rate: float = 0.0,
) -> list[ev.Event]:
    """The events of a match of random legal actions (Blind Nil taken most times it is offered
    and the partner has not taken it), with some extensions claimed, some turns left to the
    clock, an optional concession after ``concede_after`` actions, or stopped unfinished after
    ``stop_after`` actions. With ``substitute_after``, a seat whose turns timed out that many
    times in a row gets a substitute, and a substituted seat's player takes it back at
    ``reclaim_rate`` per action."""
    rng = random.Random(rng_seed)
    # Claims change nothing in the play, so they draw from their own generator.
    extension_rng = random.Random(-rng_seed)
    substitution_rng = random.Random(rng_seed + 1000)
    state, events = seated_match(rules, seed, preset_deals=preset_deals)
    actions = 0
    while not state.is_over and (stop_after is None or actions < stop_after):
        if substitute_after:
            for seat in range(rules.players):
                if state.timeout_streaks[seat] >= substitute_after:
                    state, produced = substitute(state, seat, ev.SubstitutionReason.TIMEOUTS)
                    events.extend(produced)
                elif (
                    state.substitutions[seat] is not None
                    and substitution_rng.random() < reclaim_rate
                ):
                    state, produced = reclaim(state, seat)
                    events.extend(produced)
        if state.turn is not None and extension_rng.random() < extension_rate:
            state, produced = apply(state, state.seat_to_act(), CLAIM_EXTENSION)
            events.extend(produced)
        if concede_after is not None and actions >= concede_after:
            state, produced = apply(state, rng.randrange(rules.players), CONCEDE)
        elif rng.random() < timeout_rate:
            state, produced = time_out(state)
        else:
            legal = legal_actions(state, state.seat_to_act())
            action = rng.choice(legal)
            if BLIND in legal:
                partner = state.partner(state.seat_to_act())
                partner_blind = partner is not None and (state.bids[partner] or Bid(1)).blind
                # One Blind Nil per team, so that its card pass happens.
                action = BLIND if not partner_blind and rng.random() < 0.8 else LOOK
            state, produced = apply(state, state.seat_to_act(), action)
        events.extend(produced)
        actions += 1
    return events


def _preset_first_hand(rules: Rules) -> list[list[int]]:
    # Any legal deal will do: the shuffle of another seed.
    deck = list(range(52))
    return deal(bytes(32), 1, deck, rules.players, rules.hand_size)


#: name -> (rules, keyword arguments for play)
VARIANTS: dict[str, tuple[Rules, dict[str, Any]]] = {
    "default": (Rules(max_hands=2), {}),
    "blind nil with card pass": (
        Rules(blind_nil=True, blind_nil_deficit=0, blind_nil_pass_cards=2, max_hands=4),
        {"rng_seed": 1},
    ),
    "blind nil pass with timeouts": (
        Rules(blind_nil=True, blind_nil_deficit=0, blind_nil_pass_cards=2, max_hands=4),
        # The clock makes a card pass here.
        {"rng_seed": 3, "timeout_rate": 0.3, "extension_rate": 0.2},
    ),
    "cutthroat with jokers": (Rules(players=3, jokers=True, max_hands=3), {"rng_seed": 3}),
    "cutthroat blind nil": (
        Rules(players=3, blind_nil=True, blind_nil_deficit=0, max_hands=3),
        {"rng_seed": 4, "timeout_rate": 0.1, "extension_rate": 0.1},
    ),
    "jokers, counter-clockwise, spades any time": (
        Rules(
            jokers=True,
            direction=Rules().direction.COUNTER_CLOCKWISE,
            spades_must_be_broken=False,
            max_hands=2,
        ),
        {"rng_seed": 5},
    ),
    "2C leads, board 4, nil tricks count": (
        Rules(
            two_of_clubs_leads=True,
            minimum_team_bid=4,
            nil_tricks_count_for_partner=True,
            max_hands=2,
        ),
        {"rng_seed": 6},
    ),
    "no nil, small bags, mercy": (
        Rules(
            nil_allowed=False,
            target_score=100,
            bag_limit=3,
            bag_penalty=50,
            loss_threshold=-150,
            max_hands=6,
        ),
        {"rng_seed": 7},
    ),
    "short clock, timeouts": (
        Rules(max_hands=2, clock=Rules().clock.__class__(turn_millis=50, extension_millis=0)),
        {"rng_seed": 8, "timeout_rate": 0.5},
    ),
    "substitutes after two timeouts": (
        Rules(max_hands=3),
        {"rng_seed": 11, "timeout_rate": 0.4, "substitute_after": 2, "reclaim_rate": 0.03},
    ),
    "concession": (
        Rules(blind_nil=True, blind_nil_deficit=0),
        {"rng_seed": 9, "concede_after": 90},
    ),
    "preset first deal": (
        Rules(max_hands=2),
        {"rng_seed": 10, "preset_deals": [_preset_first_hand(Rules())]},
    ),
}
