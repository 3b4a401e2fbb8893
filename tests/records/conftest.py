"""Matches for the record tests: random legal play under many rule sets, played once per run
(tests/support/random_matches.py plays them)."""

from __future__ import annotations

import pytest

from spades.engine import Rules
from spades.engine import events as ev
from tests.support.random_matches import VARIANTS, Play, play


@pytest.fixture(scope="session")
def matches() -> dict[str, list[ev.Event]]:
    """Every variant's finished match, by name."""
    return {name: play(rules, **options) for name, (rules, options) in VARIANTS.items()}


@pytest.fixture(scope="session", params=sorted(VARIANTS))
def match(request: pytest.FixtureRequest, matches: dict[str, list[ev.Event]]) -> list[ev.Event]:
    """One variant's finished match (the tests using it run once per variant)."""
    return matches[request.param]


@pytest.fixture(scope="session")
def unfinished() -> list[ev.Event]:
    """A match stopped mid-hand, after Blind Nil bids, card passes and timeouts (one
    of them a card pass made by the clock)."""
    rules = Rules(blind_nil=True, blind_nil_deficit=0, blind_nil_pass_cards=2)
    return play(rules, rng_seed=3, timeout_rate=0.3, stop_after=150)


@pytest.fixture
def player() -> Play:
    return play
