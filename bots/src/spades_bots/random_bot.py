"""The random bot: a uniformly random legal action at every turn (a baseline, and a fuzzer)."""

from __future__ import annotations

import random

from spades.bot import Bot, BotView
from spades.engine import Card, PassCards


class RandomBot(Bot):
    """Chooses uniformly among the legal actions; pass ``seed`` for a repeatable player."""

    name = "random"

    def __init__(self, seed: int | None = None) -> None:
        self.rng = random.Random(seed)

    def choose_blind_nil(self, view: BotView) -> bool:
        return self.rng.random() < 0.5 and len(view.legal_actions) > 1

    def bid(self, view: BotView) -> int:
        return self.rng.choice(view.legal_bids)

    def pass_cards(self, view: BotView) -> list[Card]:
        passes = [action for action in view.legal_actions if isinstance(action, PassCards)]
        return list(self.rng.choice(passes).cards)

    def play(self, view: BotView) -> Card:
        return self.rng.choice(view.legal_cards)
