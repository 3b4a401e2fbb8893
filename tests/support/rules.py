"""Rules for the property tests: Hypothesis's settings for them, a strategy drawing any valid rule
set, and the rulebook's trump and following restated independently of the engine."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import Phase as SearchPhase
from hypothesis import strategies as st

from spades.engine import Direction, Rules

LITTLE_JOKER = 52
BIG_JOKER = 53
SPADES = 3


#: No "explain" phase: it replays a failure hundreds of times for little extra insight.
SEARCH_PHASES = (SearchPhase.explicit, SearchPhase.reuse, SearchPhase.generate, SearchPhase.shrink)


PROPERTY_SETTINGS = settings(
    max_examples=60,
    deadline=None,
    phases=SEARCH_PHASES,
    suppress_health_check=[HealthCheck.too_slow],
)


@st.composite
def rule_sets(draw: st.DrawFn) -> Rules:
    """Any valid rule set, with a hand limit so that every match ends soon."""
    players = draw(st.sampled_from([3, 4]))
    partners = players == 4
    jokers = draw(st.booleans())
    nil_allowed = draw(st.sampled_from([True, True, False]))
    blind_nil = nil_allowed and draw(st.booleans())
    return Rules(
        players=players,
        target_score=draw(st.sampled_from([100, 200, 500])),
        nil_allowed=nil_allowed,
        nil_tricks_count_for_partner=partners and nil_allowed and draw(st.booleans()),
        blind_nil=blind_nil,
        blind_nil_deficit=draw(st.sampled_from([0, 0, 100])) if blind_nil else 100,
        blind_nil_pass_cards=draw(st.sampled_from([0, 2])) if blind_nil and partners else 0,
        two_of_clubs_leads=not jokers and draw(st.booleans()),
        jokers=jokers,
        minimum_team_bid=draw(st.sampled_from([0, 0, 4, 9])) if partners else 0,
        bag_limit=draw(st.sampled_from([10, 10, 3])),
        bag_penalty=draw(st.sampled_from([100, 50])),
        spades_must_be_broken=draw(st.booleans()),
        loss_threshold=draw(st.sampled_from([None, -100, -200])),
        max_hands=draw(st.integers(1, 3)),
        direction=draw(st.sampled_from(list(Direction))),
    )


def is_trump(number: int) -> bool:
    return number >= LITTLE_JOKER or number // 13 == SPADES


def suit_for_following(number: int) -> int:
    return SPADES if number >= LITTLE_JOKER else number // 13
