"""The engine's shortcuts for speed say exactly what the plain definitions say.

The hot paths read constants and interned values of their own (the compiled build reads a
module's own constants without a lookup) and answer "is this bid legal" without listing the
bids; each is checked here against the definition it stands for, on every input it can get.
"""

from __future__ import annotations

import hashlib
import random
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spades.engine import (
    BID,
    PLAY,
    Bid,
    IllegalAction,
    Rules,
    Suit,
    act,
    cards_of,
    effective_suit,
    legal_actions,
    seated_match,
)
from spades.engine import events as ev
from spades.engine.cards import LITTLE_JOKER
from spades.engine.commands import sorted_cards
from spades.engine.legal import is_legal_bid, legal_bids, plays_of
from spades.engine.shuffle import SHUFFLE_VERSION, RandomStream
from tests.support.rules import SEARCH_PHASES


def test_a_card_follows_its_own_suit_and_a_joker_follows_spades() -> None:
    for number in range(54):
        expected = Suit.SPADES if number >= LITTLE_JOKER else number // 13
        assert effective_suit(number) == expected


@settings(max_examples=200, deadline=None, phases=SEARCH_PHASES)
@given(st.integers(min_value=0, max_value=(1 << 54) - 1))
def test_the_cards_of_a_mask_a_byte_at_a_time_are_the_cards_of_the_mask(mask: int) -> None:
    assert sorted_cards(mask) == tuple(cards_of(mask))


@settings(max_examples=40, deadline=None, phases=SEARCH_PHASES)
@given(
    minimum=st.integers(min_value=0, max_value=13),
    nil_allowed=st.booleans(),
    seed=st.binary(min_size=32, max_size=32),
    choices=st.integers(min_value=0, max_value=2**32),
)
def test_a_bid_is_legal_exactly_when_the_legal_bids_list_it(
    minimum: int, nil_allowed: bool, seed: bytes, choices: int
) -> None:
    rules = Rules(minimum_team_bid=minimum, nil_allowed=nil_allowed)
    rng = random.Random(choices)
    state, _ = seated_match(rules, seed=seed)
    for _ in range(4):  # the four bids of the first hand, each checked for every number
        seat = state.seat_to_act()
        listed = legal_bids(state, seat)
        for tricks in range(-1, 20):
            assert is_legal_bid(state, seat, tricks) == (tricks in listed), tricks
        assert legal_actions(state, seat) == [BID[tricks] for tricks in listed]
        refused = [n for n in range(19) if n not in listed]
        if refused:
            before = state.clone()
            try:
                act(state, seat, BID[rng.choice(refused)])
            except IllegalAction:
                pass
            else:
                raise AssertionError("an unlisted bid was accepted")
            assert state.bids == before.bids and state.turn == before.turn
        chosen = rng.choice(listed)
        # The interned event is the event the bid would make anew.
        assert act(state, seat, BID[chosen]) == [ev.BidMade(seat, Bid(chosen))]
        assert state.bids[seat] == Bid(chosen)


@settings(max_examples=200, deadline=None, phases=SEARCH_PHASES)
@given(st.integers(min_value=0, max_value=(1 << 54) - 1))
def test_the_plays_of_a_mask_a_byte_at_a_time_are_the_cards_of_the_mask(mask: int) -> None:
    assert plays_of(mask) == [PLAY[number] for number in cards_of(mask)]


@pytest.mark.parametrize("reserved", [0, 1, 8, 9, 51, 53, 70, 200])
def test_a_stream_that_reserves_its_words_reads_the_documented_words(reserved: int) -> None:
    seed = b"\x5a" * 32
    prefix = SHUFFLE_VERSION.encode() + seed + struct.pack(">I", 7)
    documented = [
        word
        for block in range(12)
        for word in struct.unpack(">8I", hashlib.sha256(prefix + struct.pack(">I", block)).digest())
    ]
    stream = RandomStream(seed, 7)
    stream.reserve(reserved)
    read = [stream.uniform(2**16) for _ in range(40)]  # (no word is rejected for 2**16)
    stream.reserve(reserved)
    read += [stream.uniform(2**16) for _ in range(56)]
    assert read == [word % 2**16 for word in documented[:96]]
