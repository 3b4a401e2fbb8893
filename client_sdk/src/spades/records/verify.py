"""Checking that a record's deals are the fair ones its seed commitment promised.

:func:`verify` checks that ``SHA-256(seed)`` is the commitment published when the table was
created, that the first dealer is the one the seed draws, and that every hand's cards are the
ones the documented shuffle (:mod:`spades.engine.shuffle`) deals from the seed. Hands the
operator preset are compared with the preset deal instead, and reported. And that every
action's commitment to its sealed note (``Event.note_sha256``) is that of the note the record
reveals, or of the empty note for an action without one (:mod:`spades.notes`).
"""

from __future__ import annotations

from dataclasses import dataclass

from spades.engine import events as ev
from spades.engine.cards import iter_cards
from spades.engine.seating import seat_name
from spades.engine.shuffle import SHUFFLE_VERSION, commitment, deal, first_dealer
from spades.notes import note_digest
from spades.records.record import RecordError, events_of, notes_of
from spades.records.render import hand_ranges
from spades.v1 import record_pb2


class VerificationError(RecordError):
    """The record's deals are not the ones its seed and commitment promise."""


@dataclass(frozen=True, slots=True)
class Verification:
    """What :func:`verify` checked."""

    commitment: bytes
    first_dealer: int
    #: Hands whose cards were checked against the shuffle of the seed.
    shuffled_hands: tuple[int, ...]
    #: Hands the operator preset (checked against the preset deal, not the seed).
    preset_hands: tuple[int, ...]
    #: Actions whose commitment to a sealed note was checked, and the notes among them.
    committed_actions: int = 0
    revealed_notes: int = 0

    def lines(self) -> list[str]:
        """A person's summary, one check a line."""
        lines = [
            f"commitment: SHA-256 of the seed is {self.commitment.hex()}, as published",
            f"first dealer: {seat_name(self.first_dealer)}, as the seed draws",
        ]
        if self.shuffled_hands:
            lines.append(f"deals: {hand_ranges(self.shuffled_hands)} dealt as the seed shuffles")
        if self.preset_hands:
            lines.append(
                f"preset deals: {hand_ranges(self.preset_hands)} given by the table's operator "
                "(not from the seed)"
            )
        if self.committed_actions:
            lines.append(
                f"sealed notes: {self.revealed_notes} revealed; the commitments of all "
                f"{self.committed_actions} actions match their notes (or the empty one)"
            )
        return lines


def verify(record: record_pb2.GameRecord) -> Verification:
    """Check the record's seed, commitment, first dealer and every deal.

    Raises :class:`VerificationError` (a :class:`RecordError`) at the first check that fails.
    """
    events = events_of(record)
    created = events[0]
    assert isinstance(created, ev.TableCreated)
    revealed = [event.seed for event in events if isinstance(event, ev.SeedRevealed)]
    seed = record.seed or created.seed or (revealed[-1] if revealed else b"")
    if not seed:
        raise VerificationError(
            "this record has no seed (the match is unfinished or the seed was left out), "
            "so its deals cannot be verified yet"
        )
    for source, other in [("TableCreated", created.seed), *(("SeedRevealed", s) for s in revealed)]:
        if other and other != seed:
            raise VerificationError(f"the record's seed differs from the seed in {source}")
    published = created.seed_commitment
    if record.seed_commitment != published:
        raise VerificationError("the record's seed commitment differs from TableCreated's")
    if commitment(seed) != published:
        raise VerificationError(
            f"bad commitment: SHA-256 of the seed is {commitment(seed).hex()}, "
            f"but the table published {published.hex()}"
        )
    if created.shuffle_version != SHUFFLE_VERSION:
        raise VerificationError(
            f"unknown shuffle {created.shuffle_version!r} (this verifier knows {SHUFFLE_VERSION})"
        )

    rules = created.rules
    deck = list(iter_cards(rules.deck_mask))
    preset = created.preset_deals or ()
    drawn_dealer = first_dealer(seed, rules.players)
    hands_started = [event for event in events if isinstance(event, ev.HandStarted)]
    if hands_started and hands_started[0].dealer != drawn_dealer:
        raise VerificationError(
            f"first dealer: the seed draws {seat_name(drawn_dealer)}, "
            f"but {seat_name(hands_started[0].dealer)} dealt"
        )

    shuffled: list[int] = []
    presets: list[int] = []
    for hand_number, dealt in _deals(events).items():
        expected: list[list[int]]
        if hand_number <= len(preset):
            expected = [list(cards) for cards in preset[hand_number - 1]]
            presets.append(hand_number)
        else:
            expected = deal(seed, hand_number, deck, rules.players, rules.hand_size)
            shuffled.append(hand_number)
        for seat, cards in enumerate(expected):
            got = dealt.get(seat)
            if got is None:
                raise VerificationError(f"hand {hand_number}: no cards dealt to {seat_name(seat)}")
            if got.cards is None:
                raise VerificationError(
                    f"hand {hand_number}: {seat_name(seat)}'s cards are hidden in this record, "
                    "so the deal cannot be checked"
                )
            if sorted(got.cards) != sorted(cards):
                raise VerificationError(
                    f"hand {hand_number}: {seat_name(seat)} was dealt other cards than the "
                    + ("preset deal gives" if hand_number in presets else "seed shuffles")
                )
    committed = verify_notes(record)
    return Verification(
        published, drawn_dealer, tuple(shuffled), tuple(presets), committed, len(record.notes)
    )


def verify_notes(record: record_pb2.GameRecord) -> int:
    """Check every action's commitment to its sealed note against the note the record reveals
    (the empty note for an action it reveals none for); returns how many were checked.

    Raises :class:`VerificationError` for a commitment that does not match, a note on an event
    that committed to none, or commitments with no key to check them by.
    """
    revealed = notes_of(record)
    committed = {event.sequence: event.note_sha256 for event in record.events if event.note_sha256}
    uncommitted = sorted(set(revealed) - set(committed))
    if uncommitted:
        raise VerificationError(f"a note on event {uncommitted[0]}, which committed to none")
    if committed and not record.note_key:
        raise VerificationError(
            "the events commit to sealed notes, but the record has no key to check them by"
        )
    for sequence, digest in sorted(committed.items()):
        note = revealed.get(sequence, "").encode()
        if note_digest(record.note_key, sequence, note) != digest:
            said = "its revealed note" if sequence in revealed else "the empty note (none revealed)"
            raise VerificationError(
                f"event {sequence}: the commitment to its sealed note does not match {said}"
            )
    return len(committed)


def _deals(events: list[ev.Event]) -> dict[int, dict[int, ev.CardsDealt]]:
    """Each hand's CardsDealt events by seat."""
    deals: dict[int, dict[int, ev.CardsDealt]] = {}
    hand_number = 0
    for event in events:
        if isinstance(event, ev.HandStarted):
            hand_number = event.hand_number
            deals[hand_number] = {}
        elif isinstance(event, ev.CardsDealt):
            if hand_number == 0:
                raise VerificationError("cards were dealt before any hand started")
            deals[hand_number][event.seat] = event
    return deals
