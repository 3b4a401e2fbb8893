"""Write a Spades bot: subclass :class:`Bot`, answer ``bid`` and ``play``, and run it.

>>> from spades.bot import Bot, BotView
>>> from spades.engine import Card
>>> class Cautious(Bot):
...     def bid(self, view: BotView) -> int:
...         return 1 if 1 in view.legal_bids else min(b for b in view.legal_bids if b)
...     def play(self, view: BotView) -> Card:
...         return min(view.legal_cards, key=lambda card: card.rank)

Run it against a server with ``spades-bot --bot mymodule:Cautious --quick-match``, or in this
process with :func:`run_local_match`.
"""

from spades.bot.base import Bot, Decision, Noted, TurnOptions, decide, turn_options
from spades.bot.loading import BotNotInstalled, load_bot_class, named_bot_class
from spades.bot.local import play_local_match, run_local_match
from spades.bot.runner import Backoff, MatchOutcome, describe_end, describe_hand, play_match
from spades.bot.view import BotView, SeatTracker

__all__ = [
    "Backoff",
    "Bot",
    "BotNotInstalled",
    "BotView",
    "Decision",
    "MatchOutcome",
    "Noted",
    "SeatTracker",
    "TurnOptions",
    "decide",
    "describe_end",
    "describe_hand",
    "load_bot_class",
    "named_bot_class",
    "play_local_match",
    "play_match",
    "run_local_match",
    "turn_options",
]
