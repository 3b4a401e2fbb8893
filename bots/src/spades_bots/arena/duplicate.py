"""Duplicate play: every deal set is played twice, with the partnerships swapped.

A *deal set* is a seed: the engine deals every hand of a match (and picks the first dealer)
from it, so two tables with the same seed get the same cards seat by seat. In the first match of
a pair team A sits North-South and team B East-West; in the second they swap, so each team
holds the cards the other held. Luck in the deal then cancels, and the difference between the
two teams is their play.

>>> first, second = pair_specs(0, b"arena seed")
>>> first.seed == second.seed, first.team_a_seats, second.team_a_seats
(True, (0, 2), (1, 3))
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from spades.bot import Bot, play_local_match
from spades.engine import Rules, Seating
from spades.engine import events as ev
from spades.engine.shuffle import SEED_BYTES
from spades.records import build_record, save_record
from spades_bots.registry import bot_class

#: The two partnerships of a table of four, as the engine seats them.
NORTH_SOUTH, EAST_WEST = Seating(players=4, step=1).sides


@dataclass(frozen=True, slots=True)
class MatchSpec:
    """One match of the arena: which deal set, and where team A sits."""

    pair: int
    #: 0 for the first match of the pair (team A North-South), 1 for the second.
    leg: int
    seed: bytes
    team_a_seats: tuple[int, ...]

    @property
    def team_b_seats(self) -> tuple[int, ...]:
        return EAST_WEST if self.team_a_seats == NORTH_SOUTH else NORTH_SOUTH

    @property
    def name(self) -> str:
        """``pair-0007-2``: the match's name in records and file names."""
        return f"pair-{self.pair + 1:04d}-{self.leg + 1}"


@dataclass(frozen=True, slots=True)
class MatchResult:
    """How one match went, as the arena counts it."""

    spec: MatchSpec
    hands: tuple[ev.HandScored, ...]
    end: ev.MatchEnded | None
    #: Where its record was written, if it was.
    record_path: str = ""
    #: Every event of the match, when asked for (tests, the duplicate check).
    events: tuple[ev.Event, ...] = field(default=(), repr=False)

    @property
    def winner(self) -> str | None:
        """ "A", "B", or None when nobody won (a match the operator closed)."""
        if self.end is None or not self.end.winners:
            return None
        return "A" if set(self.end.winners) == set(self.spec.team_a_seats) else "B"


def deal_set_seed(arena_seed: bytes, pair: int) -> bytes:
    """The seed of pair ``pair``: every run with the same arena seed plays the same deals."""
    return hashlib.sha256(b"spades-arena/%s/%d" % (arena_seed, pair)).digest()[:SEED_BYTES]


def pair_specs(pair: int, arena_seed: bytes) -> tuple[MatchSpec, MatchSpec]:
    """The two matches of a pair: the same seed, team A North-South then East-West."""
    seed = deal_set_seed(arena_seed, pair)
    return MatchSpec(pair, 0, seed, NORTH_SOUTH), MatchSpec(pair, 1, seed, EAST_WEST)


def all_specs(pairs: int, arena_seed: bytes) -> list[MatchSpec]:
    return [spec for pair in range(pairs) for spec in pair_specs(pair, arena_seed)]


def make_bot(spec: str, seed: int | None) -> Bot:
    """A bot from ``random``, ``heuristic`` or ``package.module:Class``. A bot whose constructor
    takes ``seed`` gets one, so the same arena seed plays the same matches."""
    cls = bot_class(spec)
    try:
        takes_seed = "seed" in inspect.signature(cls).parameters
    except (TypeError, ValueError):
        takes_seed = False
    return cls(seed=seed) if takes_seed else cls()  # type: ignore[call-arg]


def team_label(spec: str) -> str:
    """A short name for a team's bot: ``heuristic``, or the class name of ``pkg.mod:Class``."""
    return spec.rpartition(":")[2].rpartition(".")[2] or spec


def seat_bots(
    spec: MatchSpec, team_a: str, team_b: str, players: int = 4
) -> tuple[list[Bot], list[str]]:
    """The bots of a match, one per seat from North, and the names they show."""
    bots: list[Bot] = []
    names: list[str] = []
    for seat in range(players):
        in_a = seat in spec.team_a_seats
        bot_seed = int.from_bytes(
            hashlib.sha256(spec.seed + bytes([spec.leg, seat])).digest()[:8], "big"
        )
        bots.append(make_bot(team_a if in_a else team_b, bot_seed))
        label = team_label(team_a if in_a else team_b)
        names.append(f"{'A' if in_a else 'B'} {label}"[:32])
    return bots, names


def record_path(directory: str | Path, spec: MatchSpec) -> Path:
    return Path(directory) / f"{spec.name}.json"


def write_record(events: Sequence[ev.Event], spec: MatchSpec, records: str | Path | None) -> str:
    if records is None:
        return ""
    path = record_path(records, spec)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_record(build_record(events, table_id=f"arena-{spec.name}"), path)
    return str(path)


def result_from_events(
    spec: MatchSpec, events: Sequence[ev.Event], record: str, keep_events: bool
) -> MatchResult:
    hands = tuple(event for event in events if isinstance(event, ev.HandScored))
    end = next((event for event in events if isinstance(event, ev.MatchEnded)), None)
    return MatchResult(spec, hands, end, record, tuple(events) if keep_events else ())


async def play_in_process(
    spec: MatchSpec,
    team_a: str,
    team_b: str,
    rules: Rules,
    records: str | Path | None = None,
    keep_events: bool = False,
) -> MatchResult:
    """Play one match on the engine in this process (no server)."""
    bots, names = seat_bots(spec, team_a, team_b, rules.players)
    for bot, name in zip(bots, names, strict=True):
        bot.name = name  # the name the record shows
    events: list[ev.Event] = []
    await play_local_match(bots, rules, spec.seed, events=events)
    return result_from_events(spec, events, write_record(events, spec, records), keep_events)
