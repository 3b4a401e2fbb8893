"""Pairing by rating in the rated queue: which waiting rated table a player is seated at.

A rated ``QuickMatch`` seats the account at a waiting rated quick-match table of the queue's
pool. Each table's **mean** is the mean ``mu`` (in that pool) of the distinct accounts seated
there, an account not yet rated counting as a new player's 25. A table is **in the window**
when ``|mean - own mu| <= WINDOW + WIDENING * waited``, ``waited`` being the seconds since the
table was created (the log's time, so every replica computes the same): the window widens as
a table waits, so a table of strong players that nobody near their rating joins is offered to
ever more players (after a minute, the window is 20 mu: most of a pool). Among the tables in
the window the account goes to the one whose mean is **nearest** its own; ties go to the table
that has waited longest, then to the smaller table id. A table nobody sits at any more (its
players left) has no mean: it is taken only when no table is in the window. No table fits: a
new table is opened for the account, and the next players are paired against it.

The rule is a pure function of the pool's ratings and the lobby (:func:`order`), so it is the
same on every replica; the join itself is checked as any (a table filled meanwhile is skipped).

>>> tables = [WaitingTable("far", 40.0, 0.0), WaitingTable("near", 27.0, 0.0),
...           WaitingTable("nearer", 24.0, 0.0), WaitingTable("empty", None, 0.0)]
>>> order(25.0, tables)
['nearer', 'near', 'empty']
>>> order(25.0, [WaitingTable("far", 40.0, 40.0)])  # waited 40 s: its window is 15
['far']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

#: The window's half-width, in mu, for a table just opened.
WINDOW = 5.0
#: How much it widens for each second the table has waited.
WIDENING = 0.25


@dataclass(frozen=True)
class WaitingTable:
    """A waiting rated table as pairing sees it."""

    table_id: str
    #: The mean mu of the accounts seated there; None when nobody is.
    mean: float | None
    #: Seconds since it was created.
    waited: float


def window(waited: float) -> float:
    """How far from a player's mu a table that has waited ``waited`` seconds may be."""
    return WINDOW + WIDENING * max(0.0, waited)


def order(own: float, tables: Sequence[WaitingTable]) -> list[str]:
    """The ids of the tables a player of mu ``own`` may be seated at, the best first."""
    inside = [
        table
        for table in tables
        if table.mean is not None and abs(table.mean - own) <= window(table.waited)
    ]
    inside.sort(key=lambda t: (abs((t.mean or 0.0) - own), -t.waited, t.table_id))
    empty = sorted(
        (table for table in tables if table.mean is None),
        key=lambda t: (-t.waited, t.table_id),
    )
    return [table.table_id for table in [*inside, *empty]]
