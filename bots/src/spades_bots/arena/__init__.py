"""The arena: many duplicate matches between two bot teams, and how each team did.

Each deal set is played twice with the partnerships swapped (:mod:`.duplicate`), so the luck
of the cards cancels; the report gives each team's win rate with a 95 % Wilson interval, points
per hand, contracts made, Nil attempts and success, and bags per hand (:mod:`.stats`).

>>> from spades.engine import Rules
>>> config = ArenaConfig("heuristic", "random", pairs=1, seed=b"doc", rules=Rules(max_hands=2))
>>> report = run_arena(config)
>>> report.team_a.matches, report.team_b.matches
(2, 2)

From a shell: ``spades-arena --team-a heuristic --team-b random --matches 200``.
"""

from spades_bots.arena.duplicate import MatchResult, MatchSpec, pair_specs
from spades_bots.arena.runner import ArenaConfig, ArenaReport, run_arena
from spades_bots.arena.stats import TeamStats, wilson_interval

__all__ = [
    "ArenaConfig",
    "ArenaReport",
    "MatchResult",
    "MatchSpec",
    "TeamStats",
    "pair_specs",
    "run_arena",
    "wilson_interval",
]
