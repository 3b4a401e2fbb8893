"""docs/deals.md against the engine: its test vectors and its reference implementation.

The doc specifies the ``spades-shuffle-v1`` shuffle for re-implementers. This test reads the
vectors (the ```text blocks that start with ``seed:``) and runs the reference implementation
(the ```python block) straight from the doc, and checks that both agree with the engine, so the
doc cannot drift from the code.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from spades.engine import SEAT_NAMES, SHUFFLE_VERSION, Rules, seated_match
from spades.engine.cards import CARDS, format_cards, iter_cards
from spades.engine.shuffle import RandomStream, commitment, deal, first_dealer, shuffled_deck

DOC = Path(__file__).resolve().parents[1] / "docs" / "deals.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.DOTALL | re.MULTILINE)
RULE_SETS = {
    "4 players": Rules(),
    "4 players, jokers": Rules(jokers=True),
    "3 players": Rules(players=3),
    "3 players, jokers": Rules(players=3, jokers=True),
}


def _blocks(language: str) -> list[str]:
    return [body for lang, body in FENCE.findall(DOC.read_text()) if lang == language]


def _vectors() -> list[dict[str, str]]:
    vectors = []
    for body in _blocks("text"):
        if not body.startswith("seed:"):
            continue
        fields = {}
        for line in body.splitlines():
            key, _, value = line.partition(":")
            fields[key.strip()] = value.strip()
        vectors.append(fields)
    return vectors


VECTORS = _vectors()


def _reference() -> dict[str, Any]:
    (source,) = _blocks("python")
    imports = [line for line in source.splitlines() if re.match(r"\s*(import|from)\s", line)]
    assert imports == ["import hashlib"], "the reference must stand alone (hashlib only)"
    namespace: dict[str, Any] = {"__name__": "deals_reference"}
    exec(compile(source, f"{DOC}:python", "exec"), namespace)
    return namespace


@pytest.fixture(scope="module")
def ref() -> dict[str, Any]:
    return _reference()


def _names(cards: list[int]) -> str:
    return " ".join(str(CARDS[number]) for number in cards)


def _engine_deck(rules: Rules) -> list[int]:
    return list(iter_cards(rules.deck_mask))


def test_doc_has_every_vector() -> None:
    seeds = {v["seed"] for v in VECTORS}
    assert seeds == {bytes(32).hex(), bytes(range(32)).hex()}
    assert {v["rules"] for v in VECTORS} == set(RULE_SETS)
    assert sum("commitment" in v for v in VECTORS) == 2
    assert SHUFFLE_VERSION in DOC.read_text()


@pytest.mark.parametrize("vector", VECTORS, ids=[f"{v['seed'][:8]}-{v['rules']}" for v in VECTORS])
def test_vector_matches_engine_and_reference(vector: dict[str, str], ref: dict[str, Any]) -> None:
    seed = bytes.fromhex(vector["seed"])
    rules = RULE_SETS[vector["rules"]]
    seats = SEAT_NAMES[: rules.players]

    if "commitment" in vector:
        assert vector["commitment"] == commitment(seed).hex() == ref["commitment"](seed)
        for players in (4, 3):
            dealer = first_dealer(seed, players)
            assert vector[f"first dealer, {players} players"] == f"{dealer} ({SEAT_NAMES[dealer]})"
            assert ref["first_dealer"](seed, players) == dealer
        stream = RandomStream(seed, 1)
        words = [stream.uniform(2**32) for _ in range(8)]  # no rejection below 2**32
        assert [int(word, 16) for word in vector["hand 1 words"].split()] == words
        reference_words = ref["words"](seed, 1)
        assert [next(reference_words) for _ in range(8)] == words

    deck = shuffled_deck(seed, 1, _engine_deck(rules))
    assert vector["hand 1 deck"] == _names(deck)
    assert ref["shuffled"](seed, 1, rules.players, rules.jokers) == deck
    assert " ".join(ref["card_name"](c) for c in deck) == vector["hand 1 deck"]

    hands = deal(seed, 1, _engine_deck(rules), rules.players, rules.hand_size)
    assert ref["deal"](seed, 1, rules.players, rules.jokers) == hands
    assert {key for key in vector if key.startswith("hand 1 ") and key[7:] in SEAT_NAMES} == {
        f"hand 1 {seat}" for seat in seats
    }
    for seat, name in enumerate(seats):
        assert vector[f"hand 1 {name}"] == format_cards(hands[seat])
    if rules.players == 3:
        rest = deck[rules.players * rules.hand_size :]
        assert vector["hand 1 out of play"] == (format_cards(rest) or "-")

    # The engine really deals this way: a seated match's first hand and dealer.
    state, _ = seated_match(rules, seed=seed)
    assert state.hand_number == 1
    assert state.dealer == first_dealer(seed, rules.players)
    for seat, name in enumerate(seats):
        assert format_cards(state.hand_of(seat)) == vector[f"hand 1 {name}"]


@pytest.mark.parametrize("label", list(RULE_SETS))
def test_reference_agrees_with_engine_on_other_seeds(label: str, ref: dict[str, Any]) -> None:
    rules = RULE_SETS[label]
    rng = random.Random(f"deals-doc {label}")
    for _ in range(25):
        seed = rng.randbytes(32)
        assert ref["commitment"](seed) == commitment(seed).hex()
        assert ref["first_dealer"](seed, rules.players) == first_dealer(seed, rules.players)
        assert ref["deck"](rules.players, rules.jokers) == _engine_deck(rules)
        for hand in (1, 2, 7):
            expected = deal(seed, hand, _engine_deck(rules), rules.players, rules.hand_size)
            assert ref["deal"](seed, hand, rules.players, rules.jokers) == expected


def test_rejection_sampling_agrees(ref: dict[str, Any]) -> None:
    # 2**32 - 1 is the one word uniform(3) rejects (limit = 2**32 - 1); 2**32 - 4 is one of the
    # words uniform(52) rejects (limit = 2**32 - 48). Both implementations skip them.
    def engine(words: list[int], bound: int) -> int:
        stream = RandomStream(bytes(32), 1)
        stream._words = list(words)  # the stream reads its words from this list
        return stream.uniform(bound)

    reference: Callable[[Iterator[int], int], int] = ref["uniform"]
    for words, bound, expected in (
        ([2**32 - 1, 5], 3, 2),
        ([2**32 - 4, 2**32 - 49], 52, (2**32 - 49) % 52),
        ([7], 4, 3),
    ):
        assert engine(words, bound) == reference(iter(words), bound) == expected
