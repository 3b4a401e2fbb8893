"""The two errors the engine raises, each with a reason a person can read."""

from __future__ import annotations


class InvalidRules(ValueError):
    """A rule set that cannot be played; ``field`` names the offending setting."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


class IllegalAction(ValueError):
    """An action the rules do not allow now, for example playing off suit.

    ``reason`` is written for the player: "you hold a heart, so you must follow hearts".
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
