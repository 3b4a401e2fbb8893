"""The shuffle: deterministic from the seed, documented, and plausibly uniform."""

from __future__ import annotations

import hashlib
import struct
from collections import Counter

from spades.engine import SHUFFLE_VERSION, Rules, commitment, new_seed, seated_match
from spades.engine.cards import iter_cards
from spades.engine.events import CardsDealt, HandStarted
from spades.engine.shuffle import RandomStream, deal, first_dealer, shuffled_deck

DECK = list(range(52))


def test_the_same_seed_deals_the_same_cards() -> None:
    seed = bytes(range(32))
    assert deal(seed, 1, DECK, 4, 13) == deal(seed, 1, DECK, 4, 13)
    assert first_dealer(seed, 4) == first_dealer(seed, 4)
    first, _ = seated_match(Rules(), seed)
    second, _ = seated_match(Rules(), seed)
    assert first.hands == second.hands and first.dealer == second.dealer


def test_different_hands_and_seeds_deal_differently() -> None:
    seed = bytes(range(32))
    assert deal(seed, 1, DECK, 4, 13) != deal(seed, 2, DECK, 4, 13)
    assert deal(seed, 1, DECK, 4, 13) != deal(bytes(32), 1, DECK, 4, 13)


def test_the_stream_is_the_documented_sha256_construction() -> None:
    seed = bytes(32)
    block = hashlib.sha256(
        SHUFFLE_VERSION.encode() + seed + struct.pack(">I", 1) + struct.pack(">I", 0)
    ).digest()
    words = struct.unpack(">8I", block)
    stream = RandomStream(seed, 1)
    # 2**32 is divisible by 2**k, so no word is rejected for a power-of-two bound.
    assert [stream.uniform(2**16) for _ in range(8)] == [w % 2**16 for w in words]


def test_fisher_yates_as_documented() -> None:
    seed = b"\x42" * 32
    stream = RandomStream(seed, 3)
    expected = list(DECK)
    for index in range(len(expected) - 1, 0, -1):
        other = stream.uniform(index + 1)
        expected[index], expected[other] = expected[other], expected[index]
    assert shuffled_deck(seed, 3, DECK) == expected
    hands = deal(seed, 3, DECK, 4, 13)
    assert hands == [expected[s * 13 : s * 13 + 13] for s in range(4)]


def test_a_deal_is_a_permutation_of_the_deck() -> None:
    for rules in (Rules(), Rules(jokers=True), Rules(players=3), Rules(players=3, jokers=True)):
        deck = list(iter_cards(rules.deck_mask))
        hands = deal(b"\x07" * 32, 1, deck, rules.players, rules.hand_size)
        dealt = [c for hand in hands for c in hand]
        assert len(dealt) == rules.players * rules.hand_size == len(set(dealt))
        assert set(dealt) <= set(deck)


def test_the_engine_deals_what_the_shuffle_says() -> None:
    seed = b"\x09" * 32
    _, events = seated_match(Rules(), seed)
    started = next(e for e in events if isinstance(e, HandStarted))
    assert started.dealer == first_dealer(seed, 4)
    dealt = [sorted(e.cards or ()) for e in events if isinstance(e, CardsDealt)]
    assert dealt == [sorted(hand) for hand in deal(seed, 1, DECK, 4, 13)]


def test_uniformity_sanity() -> None:
    # 4000 shuffles: every card lands in position 0 about 1/52 of the time, every seat deals
    # about a quarter of first hands, and uniform(3) is balanced.
    runs = 4000
    first_positions: Counter[int] = Counter()
    dealers: Counter[int] = Counter()
    for index in range(runs):
        seed = index.to_bytes(32, "big")
        first_positions[shuffled_deck(seed, 1, DECK)[0]] += 1
        dealers[first_dealer(seed, 4)] += 1
    expected = runs / 52
    assert set(first_positions) == set(DECK)
    chi_square = sum((first_positions[c] - expected) ** 2 / expected for c in DECK)
    assert chi_square < 100  # 51 degrees of freedom: p < 1e-5 above about 100
    assert all(abs(count - runs / 4) < 5 * (runs * 3 / 16) ** 0.5 for count in dealers.values())
    stream = RandomStream(b"\x01" * 32, 1)
    thirds = Counter(stream.uniform(3) for _ in range(3000))
    assert all(900 < thirds[value] < 1100 for value in range(3))


def test_seeds_and_commitments() -> None:
    seed = new_seed()
    assert len(seed) == 32 and seed != new_seed()
    assert commitment(seed) == hashlib.sha256(seed).digest()
    state, _ = seated_match(Rules(), seed)
    assert state.seed_commitment == commitment(seed)
