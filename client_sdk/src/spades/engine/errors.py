"""The two errors the engine raises, each with a reason a person can read and a code a
program can act on (:class:`spades.reasons.Reason`), decided where the refusal is decided."""

from __future__ import annotations

from spades.reasons import Reason


class InvalidRules(ValueError):
    """A rule set that cannot be played; ``field`` names the offending setting."""

    def __init__(self, field: str, reason: str, code: Reason = Reason.INVALID_RULES) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason
        self.code = code


class IllegalAction(ValueError):
    """An action the rules do not allow now, for example playing off suit.

    ``reason`` is written for the player: "you hold a heart, so you must follow hearts";
    ``code`` is the stable reason code (:data:`Reason.MUST_FOLLOW_SUIT`); ``field``, when set,
    names the part of the action at fault, as a path in ``spades.v1.Action`` ("bid.tricks").
    """

    def __init__(self, code: Reason, reason: str, *, field: str = "") -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason
        self.field = field
