"""A bot as an author would write it, loaded by the tests as ``tests.sdk.author_bot:Lowest``."""

from spades.bot import Bot, BotView
from spades.engine import Card


class Lowest(Bot):
    name = "lowest"

    def bid(self, view: BotView) -> int:
        return 1 if 1 in view.legal_bids else view.legal_bids[0]

    def play(self, view: BotView) -> Card:
        return min(view.legal_cards, key=lambda card: card.rank)


class NotABot:
    pass
