"""A bot's decisions may carry sealed notes (``Noted``): the runner sends them with the actions,
no seat sees one during the match (the partner's bot included), and the finished record reveals
each beside the action it explains, as ``spades-record show`` prints it."""

from __future__ import annotations

import pytest

from spades import notes
from spades.bot import Bot, BotView, Noted
from spades.client import SpadesClient
from spades.engine import Card, Rules
from spades.engine import events as ev
from spades.records import events_of, notes_of, render_match, verify
from tests.support.bot_matches import play_all, seat_bots

MARKER = "noted-by-the-sdk-5e2b"


class Explaining(Bot):
    """Bids 2 and plays its lowest card, saying why each time (but now and then: no note),
    and remembers every event it was shown."""

    def __init__(self) -> None:
        self.decisions = 0
        self.shown: list[ev.Event] = []

    def bid(self, view: BotView) -> Noted[int]:
        tricks = 2 if 2 in view.legal_bids else min(b for b in view.legal_bids if b)
        return Noted(tricks, f"{MARKER} seat {view.seat} bids {tricks}: «modest»")

    def play(self, view: BotView) -> Card | Noted[Card]:
        self.decisions += 1
        card = min(view.legal_cards, key=lambda card: card.rank)
        if self.decisions % 4 == 0:
            return card
        return Noted(card, f"{MARKER} seat {view.seat} plays low")

    def on_event(self, event: ev.Event, view: BotView) -> None:
        self.shown.append(event)


class Rambling(Explaining):
    """Attaches a note too long to send: the SDK drops it, the action stands."""

    def bid(self, view: BotView) -> Noted[int]:
        answer = super().bid(view)
        return Noted(answer.answer, "x" * (notes.MAX_NOTE_BYTES + 1))


@pytest.mark.asyncio
async def test_noted_decisions_are_sealed_then_revealed_in_the_record(
    client: SpadesClient,
) -> None:
    table_id, tokens = await seat_bots(client, Rules(max_hands=1))
    bots = [Explaining(), Explaining(), Explaining(), Rambling()]
    outcomes = await play_all(client, bots, tokens, table_id)
    assert all(outcome.end is not None for outcome in outcomes)
    assert all(outcome.fallbacks == 0 for outcome in outcomes)
    # No bot was shown a note during the match: events carry no text field for one at all;
    # what the engine's events say is checked for the marker anyway.
    for bot in bots:
        assert bot.shown and not any(MARKER in repr(event) for event in bot.shown)

    record = await client.get_record(table_id)
    revealed = notes_of(record)
    events = events_of(record)
    bids = {i + 1: e for i, e in enumerate(events) if isinstance(e, ev.BidMade)}
    # Three seats' bids are explained; West's rambling note was dropped, its bid stands.
    assert {bids[seq].seat for seq in bids if seq in revealed} == {0, 1, 2}
    assert all(f"bids {bids[seq].bid.tricks}" in revealed[seq] for seq in bids if seq in revealed)
    played = [i + 1 for i, e in enumerate(events) if isinstance(e, ev.CardPlayed)]
    assert 0 < sum(seq in revealed for seq in played) < len(played)
    verify(record)  # every commitment checked against its note (or the empty one)
    shown = render_match(events, record.table_id, notes=revealed)
    assert f"North (bid 2): {MARKER} seat 0 bids 2: «modest»" in shown
    assert shown.count(MARKER) == len(revealed)
