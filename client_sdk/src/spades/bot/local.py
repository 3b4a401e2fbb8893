"""Bots playing a whole match on the engine, in this process (no server): for development,
tests and search. Each bot sees exactly what it would over the network: its seat's redacted
events folded by a :class:`SeatTracker`, and the same validated decisions.

>>> from spades.engine import Rules
>>> class Lowest(Bot):
...     def bid(self, view): return 3 if 3 in view.legal_bids else view.legal_bids[0]
...     def play(self, view): return view.legal_cards[0]
>>> final = run_local_match([Lowest() for _ in range(4)], Rules(max_hands=1), seed=bytes(32))
>>> final.is_over
True
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence

from spades.bot.base import Bot, decide, turn_extra
from spades.bot.view import SeatTracker
from spades.engine import MatchState, Rules, apply, legal_actions, redact, seated_match
from spades.engine import events as ev


async def play_local_match(
    bots: Sequence[Bot],
    rules: Rules | None = None,
    seed: bytes | None = None,
    preset_deals: Sequence[Sequence[Iterable[int]]] = (),
    *,
    events: list[ev.Event] | None = None,
) -> MatchState:
    """Play a match between ``bots`` (one per seat, North first); returns the final state.

    Every event of the match, as the table logs it, is appended to ``events`` if given (for
    :func:`spades.records.build_record`).
    """
    rules = rules or Rules()
    if len(bots) != rules.players:
        raise ValueError(f"these rules seat {rules.players} players, not {len(bots)}")
    names = [bot.name for bot in bots]
    state, first_events = seated_match(rules, seed, names, preset_deals)
    trackers = [SeatTracker(seat) for seat in range(rules.players)]

    def deliver(new_events: Sequence[ev.Event]) -> None:
        if events is not None:
            events.extend(new_events)
        for event in new_events:
            for seat, tracker in enumerate(trackers):
                shown = redact(event, seat)
                tracker.fold(shown)
                if isinstance(shown, ev.TableCreated):
                    continue
                seat_view = tracker.view()
                bot = bots[seat]
                bot.on_event(shown, seat_view)
                if isinstance(shown, ev.HandScored):
                    bot.on_hand_end(shown, seat_view)
                elif isinstance(shown, ev.MatchEnded):
                    bot.on_match_end(shown, seat_view)

    deliver(first_events)
    while not state.is_over:
        seat = state.seat_to_act()
        legal = legal_actions(state, seat)
        seat_view = trackers[seat].view(legal)
        # No clock here, so no extension; a concession is honoured as over the network.
        extra = await turn_extra(bots[seat], seat_view)
        action = extra if extra is not None else (await decide(bots[seat], seat_view)).action
        state, new_events = apply(state, seat, action)
        deliver(new_events)
    return state


def run_local_match(
    bots: Sequence[Bot],
    rules: Rules | None = None,
    seed: bytes | None = None,
    preset_deals: Sequence[Sequence[Iterable[int]]] = (),
    *,
    events: list[ev.Event] | None = None,
) -> MatchState:
    """:func:`play_local_match`, for code that is not async."""
    return asyncio.run(play_local_match(bots, rules, seed, preset_deals, events=events))
