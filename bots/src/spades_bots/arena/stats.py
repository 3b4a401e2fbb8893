"""What the arena measures: each team's results over many matches, and how sure we can be.

A team's win rate comes with a 95 % Wilson score interval, which stays inside 0..1 and behaves
at 0 and n wins, where the normal approximation does not.

>>> low, high = wilson_interval(9, 10)
>>> round(low, 3), round(high, 3)
(0.596, 0.982)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from spades.engine import events as ev

#: The two-sided 95 % normal quantile.
Z_95 = 1.959963984540054


def wilson_interval(successes: int, trials: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of a proportion (95 % by default); (0, 1) with no trials."""
    if not 0 <= successes <= trials:
        raise ValueError(f"{successes} successes out of {trials} trials")
    if trials == 0:
        return 0.0, 1.0
    p = successes / trials
    z2 = z * z
    denominator = 1 + z2 / trials
    center = (p + z2 / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / denominator
    return max(0.0, center - half), min(1.0, center + half)


def ratio(part: float, whole: float) -> float:
    """``part / whole``, and 0 when there is no whole."""
    return part / whole if whole else 0.0


@dataclass
class TeamStats:
    """One team's totals over the matches it played; add each match with :meth:`add_match`."""

    name: str
    matches: int = 0
    wins: int = 0
    hands: int = 0
    points: int = 0
    contracts: int = 0
    contracts_made: int = 0
    nil_attempts: int = 0
    nils_made: int = 0
    bags: int = 0
    #: Final scores of its matches, for a look at the spread.
    final_scores: list[int] = field(default_factory=list)

    def add_match(
        self, seats: tuple[int, ...], hands: tuple[ev.HandScored, ...], end: ev.MatchEnded | None
    ) -> None:
        """Fold one match in which this team sat at ``seats``."""
        self.matches += 1
        if end is not None and set(seats) <= set(end.winners):
            self.wins += 1
        total = 0
        for hand in hands:
            side = next(side for side in hand.sides if set(side.seats) == set(seats))
            self.hands += 1
            self.points += side.hand_points
            self.bags += side.bags
            if side.contract > 0:
                self.contracts += 1
                self.contracts_made += side.contract_made
            self.nil_attempts += len(side.nil_results)
            self.nils_made += sum(nil.made for nil in side.nil_results)
            total = side.total_score
        self.final_scores.append(total)

    @property
    def win_rate(self) -> float:
        return ratio(self.wins, self.matches)

    @property
    def win_interval(self) -> tuple[float, float]:
        """The 95 % Wilson interval of the win rate."""
        return wilson_interval(self.wins, self.matches)

    @property
    def points_per_hand(self) -> float:
        return ratio(self.points, self.hands)

    @property
    def contracts_made_rate(self) -> float:
        return ratio(self.contracts_made, self.contracts)

    @property
    def nil_success_rate(self) -> float:
        return ratio(self.nils_made, self.nil_attempts)

    @property
    def bags_per_hand(self) -> float:
        return ratio(self.bags, self.hands)
