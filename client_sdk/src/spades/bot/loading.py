"""Finding a bot class from text: ``"package.module:Class"``, ``"exec:COMMAND"`` for a bot
in a child process (:mod:`spades.bot.external`), or a bot another distribution registers by
name (``"random"``, ``"search:200"``) in the :data:`BOT_ENTRY_POINTS` group.

The SDK never imports a bot distribution by name: ``spades-bots`` (or an author's own package)
declares its bots as entry points, so ``spades-bot --bot heuristic`` works when it is installed
and says which package to install when it is not."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from importlib.metadata import entry_points

from spades.bot.base import Bot
from spades.bot.external import external_bot_class

#: A bot spec that starts with this runs the rest as a command (a bot in any language).
EXEC_PREFIX = "exec:"

#: The entry-point group of named bots. Each entry is ``NAME = "module:function"``; the
#: function takes the text after ``NAME:`` in the spec (``""`` when there is none, ``"200"``
#: for ``search:200``) and returns the Bot class, raising ValueError for an argument it refuses.
BOT_ENTRY_POINTS = "spades.bots"

#: The named bots this project ships outside the SDK, and the distribution that has them: the
#: one-line answer when such a name is asked for and nothing registers it.
SHIPPED_ELSEWHERE = {"random": "spades-bots", "heuristic": "spades-bots", "search": "spades-bots"}


class BotNotInstalled(ValueError):
    """A named bot whose distribution is not installed."""


def named_bot_class(spec: str) -> type[Bot]:
    """The Bot class for ``spec``: a name registered in :data:`BOT_ENTRY_POINTS` (with its
    argument after a colon), else whatever :func:`load_bot_class` finds. ValueError (or
    :class:`BotNotInstalled`) says, in one line, why no class could be had."""
    name, _, argument = spec.partition(":")
    registered = entry_points(group=BOT_ENTRY_POINTS, name=name)
    if registered:
        entry = next(iter(registered))
        try:
            make: Callable[[str], type[Bot]] = entry.load()
        except ImportError as error:
            raise ValueError(f"cannot load the bot {name!r} ({entry.value}): {error}") from error
        found = make(argument)
        if not (isinstance(found, type) and issubclass(found, Bot)):
            raise ValueError(f"the bot {name!r} ({entry.value}) is not a spades.bot.Bot")
        return found
    if name in SHIPPED_ELSEWHERE:
        distribution = SHIPPED_ELSEWHERE[name]
        raise BotNotInstalled(
            f"the bot {name!r} comes with the {distribution} distribution, which is not "
            f"installed (from a checkout: pip install ./client_sdk ./bots)"
        )
    if not spec.startswith(EXEC_PREFIX) and ":" not in spec and "." not in spec:
        # A bare word names no module: it was meant as one of the named bots.
        named = named_bots()
        listed = ", ".join(named) if named else "none installed"
        raise ValueError(
            f"no bot is named {spec!r}: the named bots are {listed}; or give your own as "
            "package.module:Class, or exec:COMMAND"
        )
    return load_bot_class(spec)


def named_bots() -> list[str]:
    """The names registered in :data:`BOT_ENTRY_POINTS`, sorted."""
    return sorted({entry.name for entry in entry_points(group=BOT_ENTRY_POINTS)})


def load_bot_class(spec: str) -> type[Bot]:
    """The Bot subclass named by ``"package.module:Class"`` (``"module.Class"`` also works),
    or the one that runs COMMAND for ``"exec:COMMAND"``."""
    if spec.startswith(EXEC_PREFIX):
        return external_bot_class(spec.removeprefix(EXEC_PREFIX))
    module_name, separator, class_name = spec.partition(":")
    if not separator:
        module_name, _, class_name = spec.rpartition(".")
    if not module_name or not class_name:
        raise ValueError(f"{spec!r} does not name a bot; write package.module:Class")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ValueError(f"cannot import {module_name!r}: {error}") from error
    found = getattr(module, class_name, None)
    if found is None:
        bots = sorted(
            attribute
            for attribute, value in vars(module).items()
            if isinstance(value, type) and issubclass(value, Bot) and value is not Bot
        )
        there = f" (its bot classes: {', '.join(bots)})" if bots else ""
        raise ValueError(f"{module_name} has no class {class_name!r}{there}")
    if not (isinstance(found, type) and issubclass(found, Bot)):
        raise ValueError(f"{module_name}.{class_name} is not a subclass of spades.bot.Bot")
    return found
