"""Provably fair deals: a documented, versioned shuffle any language can re-implement.

Algorithm ``spades-shuffle-v1`` (also described in ``docs/deals.md``):

1. A table's seed is 32 random bytes. Its commitment, published when the table is created, is
   ``SHA-256(seed)``; the seed is revealed when the match ends.
2. The random stream for hand ``h`` (1 for the first hand; 0 is used to draw the first dealer)
   is the concatenation of blocks ``SHA-256(b"spades-shuffle-v1" || seed || u32(h) || u32(i))``
   for ``i = 0, 1, 2, ...``, where ``u32`` is 4 bytes big-endian. It is read 4 bytes at a time
   as big-endian unsigned integers.
3. ``uniform(n)`` draws integers ``x`` from the stream until ``x < 2**32 - (2**32 % n)`` and
   returns ``x % n`` (rejection sampling, so every value is equally likely).
4. The first dealer is ``uniform(players)`` from the stream of hand 0.
5. A hand's deck is the rule set's cards in ascending card number (``suit * 13 + rank - 2``,
   clubs, diamonds, hearts, spades; Little Joker 52, Big Joker 53). Fisher-Yates: for
   ``i = len - 1`` down to ``1``, swap positions ``i`` and ``uniform(i + 1)``.
6. Seat ``s`` (0 North, 1 East, 2 South, 3 West) receives positions ``s*k .. s*k + k - 1`` of the
   shuffled deck, with ``k`` the hand size. In cutthroat the cards after the last hand are out of
   play for that hand.
"""

from __future__ import annotations

import hashlib
import secrets
import struct
from typing import Final

SHUFFLE_VERSION = "spades-shuffle-v1"
_LABEL: Final = SHUFFLE_VERSION.encode()
SEED_BYTES: Final = 32


def new_seed() -> bytes:
    """A fresh seed from the operating system's secure random source."""
    return secrets.token_bytes(SEED_BYTES)


def commitment(seed: bytes) -> bytes:
    """The published commitment to a seed: its SHA-256."""
    return hashlib.sha256(seed).digest()


_U32: Final = struct.Struct(">I")
_BLOCK_WORDS: Final = struct.Struct(">8I")
#: ``u32(i)`` of the first blocks, packed once (a deal of 54 cards reads 7 blocks).
_BLOCK_NUMBERS: Final = tuple(_U32.pack(index) for index in range(16))
#: The words of 1, 2, ... 8 blocks read at once.
_WORDS_OF_BLOCKS: Final = tuple(struct.Struct(f">{8 * blocks}I") for blocks in range(1, 9))


class RandomStream:
    """The deterministic stream of 32-bit integers for one hand of one seed."""

    __slots__ = ("_block_index", "_hash", "_position", "_words")

    def __init__(self, seed: bytes, hand_number: int) -> None:
        # Every block hashes the same prefix: hash it once and copy the hash per block.
        self._hash = hashlib.sha256(_LABEL + seed + _U32.pack(hand_number))
        self._words: list[int] = []
        self._position = 0
        self._block_index = 0

    def reserve(self, count: int) -> None:
        """Compute the stream's next ``count`` words now, in one go (a deal knows how many
        draws it makes, unless one is rejected): the blocks' digests read as one string."""
        blocks = (count - (len(self._words) - self._position) + 7) // 8
        if blocks <= 0:
            return
        if blocks > len(_WORDS_OF_BLOCKS):
            for _ in range(blocks):
                self._add_block()
            return
        first = self._block_index
        digests = b"".join([self._digest(first + offset) for offset in range(blocks)])
        self._block_index = first + blocks
        self._words.extend(_WORDS_OF_BLOCKS[blocks - 1].unpack(digests))

    def _add_block(self) -> None:
        index = self._block_index
        self._block_index = index + 1
        self._words.extend(_BLOCK_WORDS.unpack(self._digest(index)))

    def _digest(self, index: int) -> bytes:
        """Block ``index`` of the stream."""
        block = self._hash.copy()
        block.update(_BLOCK_NUMBERS[index] if index < len(_BLOCK_NUMBERS) else _U32.pack(index))
        return block.digest()

    def uniform(self, bound: int) -> int:
        """An integer in ``range(bound)``, every value equally likely."""
        limit = 0x1_0000_0000 - 0x1_0000_0000 % bound
        words = self._words
        while True:
            if self._position == len(words):
                self._add_block()
            word: int = words[self._position]
            self._position += 1
            if word < limit:
                return word % bound


def first_dealer(seed: bytes, players: int) -> int:
    """The seat that deals the first hand."""
    return RandomStream(seed, 0).uniform(players)


def shuffled_deck(seed: bytes, hand_number: int, deck: list[int]) -> list[int]:
    """The deck after the Fisher-Yates shuffle of hand ``hand_number``."""
    stream = RandomStream(seed, hand_number)
    cards = list(deck)
    stream.reserve(len(cards) - 1)
    for index in range(len(cards) - 1, 0, -1):
        other = stream.uniform(index + 1)
        cards[index], cards[other] = cards[other], cards[index]
    return cards


def deal(
    seed: bytes, hand_number: int, deck: list[int], players: int, hand_size: int
) -> list[list[int]]:
    """Each seat's cards for one hand, in the order they were dealt."""
    cards = shuffled_deck(seed, hand_number, deck)
    return [cards[seat * hand_size : (seat + 1) * hand_size] for seat in range(players)]
