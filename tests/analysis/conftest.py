"""A finished match for the analysis tests: North plays a double-dummy best card every time
(it is shown every hand: the solver's own choice), the others take the clock's automatic
choice (the cheapest legal card), so the analysis has both perfect and poor play to judge."""

from __future__ import annotations

from pathlib import Path

import pytest

from spades.engine import (
    PLAY,
    PlayCard,
    Rules,
    apply,
    automatic_choice,
    legal_actions,
    seated_match,
)
from spades.engine import events as ev
from spades.records import build_record, save_record
from spades.solver import Objective, solve

SEED = bytes(range(32))
#: The seat that always plays a best card.
PERFECT_SEAT = 0


def perfect_north_match(seed: bytes = SEED) -> list[ev.Event]:
    """A one-hand match: North always plays a best card, the others the cheapest."""
    state, events = seated_match(Rules(max_hands=1), seed)
    for _ in range(500):  # bounded: a one-hand match has 56 actions
        if state.is_over:
            break
        seat = state.seat_to_act()
        legal = legal_actions(state, seat)
        action = automatic_choice(state.rules, legal)
        if seat == PERFECT_SEAT and isinstance(action, PlayCard):
            values = solve(state, Objective.POINTS)
            best = max(values, key=values.__getitem__)
            action = PLAY[best]
        state, produced = apply(state, seat, action)
        events.extend(produced)
    assert state.is_over
    return events


@pytest.fixture(scope="session")
def match_events() -> list[ev.Event]:
    return perfect_north_match()


@pytest.fixture(scope="session")
def record_file(match_events: list[ev.Event], tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("analysis") / "match.json"
    save_record(build_record(match_events, table_id="t-analysis"), path)
    return path
