"""Finding a bot class from text: ``"package.module:Class"``, or ``"exec:COMMAND"`` for a bot
in a child process (:mod:`spades.bot.external`)."""

from __future__ import annotations

import importlib

from spades.bot.base import Bot
from spades.bot.external import external_bot_class

#: A bot spec that starts with this runs the rest as a command (a bot in any language).
EXEC_PREFIX = "exec:"


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
    if not (isinstance(found, type) and issubclass(found, Bot)):
        raise ValueError(f"{module_name}.{class_name} is not a subclass of spades.bot.Bot")
    return found
