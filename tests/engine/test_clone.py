"""MatchState.clone spells out every slot for speed; this keeps it honest."""

from __future__ import annotations

from spades.engine import MatchState, Rules, seated_match


def test_clone_copies_every_slot_and_shares_no_list() -> None:
    state, _ = seated_match(Rules(), seed=bytes(32))
    other = state.clone()
    for name in MatchState.__slots__:
        assert getattr(other, name) == getattr(state, name), name
        if isinstance(getattr(state, name), list):
            assert getattr(other, name) is not getattr(state, name), name
