"""The bots this distribution ships, by the names the runner accepts."""

from __future__ import annotations

from spades.bot import Bot, load_bot_class


def bot_class(name: str) -> type[Bot]:
    """``"random"``, ``"heuristic"``, ``"search"`` (``"search:MS"`` thinks MS milliseconds a
    decision), ``"exec:COMMAND"`` (a bot in any language, run as a child process), or an
    author's ``"package.module:Class"``."""
    if name == "random":
        from spades_bots.random_bot import RandomBot

        return RandomBot
    if name == "heuristic":
        from spades_bots.heuristic import HeuristicBot

        return HeuristicBot
    kind, _, think_ms = name.partition(":")
    if kind == "search":
        from spades_bots.search import SearchBot, thinking_for

        return thinking_for(float(think_ms)) if think_ms else SearchBot
    return load_bot_class(name)
