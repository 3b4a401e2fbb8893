"""How long a bot may take over one decision: what it wants, capped by the turn's clock.

The server times every turn (``rules.clock.turn_millis``) from the moment it prompts the seat;
a bot that answers after that loses the turn to the clock. A bot that thinks (a search, a child
process) therefore stops a safety margin before the clock would, to leave room for the answer
to travel back.

>>> from spades.engine import Clock, Rules
>>> decision_seconds(Rules(), wanted=0.1)
0.1
>>> decision_seconds(Rules(clock=Clock(turn_millis=2_000)), wanted=10.0)
1.5
"""

from __future__ import annotations

from typing import Final

from spades.engine import Rules

#: Left unused at the end of a turn: the answer's trip to the server, and scheduling noise.
SAFETY_MARGIN: Final = 0.5
#: A turn clock this short keeps at least this fraction of it for the bot.
MINIMUM_SHARE: Final = 0.5


def turn_seconds(rules: Rules) -> float:
    """The seconds a bot may use on a turn: the clock minus the margin (never below half the
    clock, so a very short clock still leaves the bot some time)."""
    clock = rules.clock.turn_millis / 1000
    return max(clock - SAFETY_MARGIN, clock * MINIMUM_SHARE)


def decision_seconds(rules: Rules, wanted: float | None) -> float:
    """The seconds to spend on one decision: ``wanted`` (all the turn when None), capped by
    :func:`turn_seconds`."""
    allowed = turn_seconds(rules)
    return allowed if wanted is None else min(wanted, allowed)
