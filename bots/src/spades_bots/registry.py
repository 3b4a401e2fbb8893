"""The bots this distribution ships, by the names the runner accepts."""

from __future__ import annotations

from spades.bot import Bot, load_bot_class


def bot_class(name: str) -> type[Bot]:
    """``"random"``, ``"heuristic"``, or an author's ``"package.module:Class"``."""
    if name == "random":
        from spades_bots.random_bot import RandomBot

        return RandomBot
    if name == "heuristic":
        from spades_bots.heuristic import HeuristicBot

        return HeuristicBot
    return load_bot_class(name)
