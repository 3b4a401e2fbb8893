"""MatchState.clone spells out every slot for speed; this keeps it honest."""

from __future__ import annotations

from spades.engine import MatchState, Rules, seated_match


def test_clone_copies_every_slot_and_shares_no_list() -> None:
    state, _ = seated_match(Rules(), seed=bytes(32))
    other = state.clone()
    # The mypyc build keeps a native class's attributes in __mypyc_attrs__, not __slots__.
    attributes = vars(MatchState)
    names: tuple[str, ...] = attributes.get("__slots__") or attributes["__mypyc_attrs__"]
    assert len(names) == 32
    for name in names:
        assert getattr(other, name) == getattr(state, name), name
        if isinstance(getattr(state, name), list):
            assert getattr(other, name) is not getattr(state, name), name
