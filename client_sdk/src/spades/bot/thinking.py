"""How long a bot may take over one decision: what it wants, capped by the turn's clock.

The server times every turn (``rules.clock.turn_millis``) from the moment it prompts the seat;
a bot that answers after that loses the turn to the clock. A bot that thinks (a search, a child
process) therefore stops a safety margin before the clock would, to leave room for the answer
to travel back.

A search counts its thinking in CPU time (:class:`Thinking`): ``--think-ms 100`` is 100 ms of
the deciding thread's own processor time, "100 ms on one core", so a machine busy with other
work slows the answer but does not weaken it; the turn's clock less the margin still caps the
wall-clock time, so a decision is never late.

>>> from spades.engine import Clock, Rules
>>> decision_seconds(Rules(), wanted=0.1)
0.1
>>> decision_seconds(Rules(clock=Clock(turn_millis=2_000)), wanted=10.0)
1.5
"""

from __future__ import annotations

import time
from collections.abc import Callable
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


class Thinking:
    """One decision's time, started when made: ``cpu_seconds`` of this thread's CPU time
    (:func:`time.thread_time`), and never more than ``wall_seconds`` by the clock.

    >>> thinking = Thinking(cpu_seconds=0.05, wall_seconds=1.0)
    >>> thinking.over()
    False
    """

    __slots__ = (
        "_cpu_stop",
        "_wall_stop",
        "cpu_clock",
        "cpu_seconds",
        "wall_clock",
        "wall_seconds",
    )

    def __init__(
        self,
        cpu_seconds: float,
        wall_seconds: float,
        *,
        cpu_clock: Callable[[], float] = time.thread_time,
        wall_clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.cpu_seconds = cpu_seconds
        self.wall_seconds = wall_seconds
        #: The clocks it reads (a test passes its own, to move them by hand).
        self.cpu_clock = cpu_clock
        self.wall_clock = wall_clock
        self._cpu_stop = cpu_clock() + cpu_seconds
        self._wall_stop = wall_clock() + wall_seconds

    @classmethod
    def for_turn(cls, rules: Rules, wanted: float | None) -> Thinking:
        """``wanted`` seconds of CPU time (all the turn when None), and at most the turn's
        clock less the margin (:func:`turn_seconds`) by the wall clock."""
        return cls(decision_seconds(rules, wanted), turn_seconds(rules))

    def over(self) -> bool:
        """True once either the CPU time or the wall-clock time is spent."""
        return self.cpu_clock() > self._cpu_stop or self.wall_clock() > self._wall_stop
