"""The bots this distribution ships, by the names the runner accepts.

``spades-bot`` (in the SDK) finds them through the ``spades.bots`` entry points this
distribution declares (bots/pyproject.toml), one function per name below; ``spades-arena``
asks :func:`bot_class` directly."""

from __future__ import annotations

from spades.bot import Bot, load_bot_class


def random_bot(argument: str = "") -> type[Bot]:
    """``random``: a legal action at random."""
    _no_argument("random", argument)
    from spades_bots.random_bot import RandomBot

    return RandomBot


def heuristic_bot(argument: str = "") -> type[Bot]:
    """``heuristic``: the rule-based player."""
    _no_argument("heuristic", argument)
    from spades_bots.heuristic import HeuristicBot

    return HeuristicBot


def search_bot(argument: str = "") -> type[Bot]:
    """``search`` (``search:MS`` thinks MS milliseconds a decision)."""
    from spades_bots.search import SearchBot, thinking_for

    think_ms = _milliseconds("search", argument)
    return SearchBot if think_ms is None else thinking_for(think_ms)


def expert_bot(argument: str = "") -> type[Bot]:
    """``expert`` (``expert:MS`` thinks MS milliseconds a decision): the search, solved double
    dummy (docs/expert-bot.md)."""
    from spades_bots.expert import ExpertBot

    think_ms = _milliseconds("expert", argument)
    if think_ms is None:
        return ExpertBot
    if not think_ms > 0:
        raise ValueError(f"the expert bot needs a positive thinking time, not {think_ms} ms")
    return type("ExpertBot", (ExpertBot,), {"default_think_ms": think_ms})


def _milliseconds(name: str, argument: str) -> float | None:
    """The thinking time of ``NAME:MS`` (None for no argument)."""
    if not argument:
        return None
    try:
        return float(argument)
    except ValueError:
        raise ValueError(f"{name}:MS takes milliseconds, not {argument!r}") from None


def _no_argument(name: str, argument: str) -> None:
    if argument:
        raise ValueError(f"the bot {name!r} takes no argument, not {argument!r}")


def bot_class(name: str) -> type[Bot]:
    """``"random"``, ``"heuristic"``, ``"search"`` (``"search:MS"`` thinks MS milliseconds a
    decision), ``"expert"`` (``"expert:MS"`` likewise), ``"exec:COMMAND"`` (a bot in any
    language, run as a child process), or an author's ``"package.module:Class"``."""
    kind, _, argument = name.partition(":")
    named = {
        "random": random_bot,
        "heuristic": heuristic_bot,
        "search": search_bot,
        "expert": expert_bot,
    }
    if kind in named:
        return named[kind](argument)
    return load_bot_class(name)
