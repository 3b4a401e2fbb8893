"""Engine micro-benchmark: random legal play, on one core, in hands/s and actions/s.

Run with ``make bench-engine`` (or ``python tests/benchmarks/bench_engine.py --seconds 5``).

What is measured
----------------
Random legal play of complete *hands* under the default rules. Random bids overbid, so a
match to 500 rarely ends; a hand is the unit that is the same in every engine:

* **one hand** = the deal + 4 bids + 52 card plays, ending when the hand is scored;
* **actions** = the 56 player decisions of a hand (4 ``MakeBid`` + 52 ``PlayCard``). The deal
  is not an action of ours, but its cost is inside the timed loop of every hand.

Our engine: each hand is a fresh match ``seated_match(Rules(max_hands=1), seed=...)`` (table,
four seats, commitment, first dealer, shuffle and deal), played until it is scored, seed drawn
from a fixed-seed RNG. Every decision asks ``legal_actions(turn)`` and picks one with
``random.Random.choice``; both are inside the timed loop. Two ways of acting are timed:

* ``apply``  -- functional: ``state, events = apply(state, seat, action)`` (a new state each
  action; the server's path);
* ``clone+act`` -- in place: one ``state.clone()`` of the dealt state per hand, then
  ``act(state, seat, action)`` for every action (the path a search bot's rollout would take).

Which engine runs is printed: ``make bench-engine`` builds the mypyc build first (``make engine``)
and measures it; ``SPADES_ENGINE=python`` measures the pure-Python engine instead.

OpenSpiel (only when ``pyspiel`` is importable: ``make bench-engine`` installs the optional
``benchmark`` extra of the SDK, ``open-spiel`` from PyPI, which has manylinux wheels): the
game ``spades`` is exactly one hand. One hand = ``new_initial_state()``, its 52 chance nodes
(one dealt card each, picked uniformly from ``legal_actions()`` like a decision) and its 56
player decisions (4 bids + 52 plays), until ``is_terminal()``. Its actions/s counts the 56
decisions only, like ours; its chance nodes are printed apart. The functional path is
``state = state.child(action)``, the in-place path ``state.clone()`` once per hand then
``state.apply_action(action)``. The ratios printed are ours / OpenSpiel in hands/s.

With ``max_hands=1`` a match whose hand ends in a tie plays on (the rules' tie-break), so a
hand is played only while ``hand_number == 1``; in those rare hands the last play also deals
the next hand, a small cost counted against us.

Each measurement runs for a wall-clock budget (``--seconds``, default 5) or until
``--max-hands`` hands (default 200,000), whichever comes first, after a few untimed warm-up
hands. The budget is cut into ``--rounds`` slices (default 5) run in turn for every
measurement, so that a change in the machine's load hits all of them alike; each measurement
keeps its own RNG (fixed seed) across its slices. The process is pinned to one CPU where the
OS allows it (``--cpu``). Rates are totals over the whole budget, per second of this process's
CPU time (``time.process_time``; both engines are single-threaded), so that time lost to other
processes on a shared machine does not count; the wall-clock seconds are printed too.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import platform
import random
import sys
import time
from collections.abc import Callable
from typing import Any

from spades.engine import MatchState, Rules, act, apply, compiled, legal_actions, seated_match

RNG_SEED = 20240601
#: Issue 12: our in-place path at least as fast as OpenSpiel's.
TARGET_IN_PLACE = 1.0
RULES = Rules(max_hands=1)


class Meter:
    """One measurement: its own fixed-seed RNG and running totals, timed in slices."""

    def __init__(
        self, label: str, play_hand: Callable[[random.Random], tuple[int, int]], warmup: int
    ) -> None:
        self.label = label
        self.play_hand = play_hand
        warm = random.Random(RNG_SEED - 1)
        for _ in range(warmup):
            play_hand(warm)
        self.rng = random.Random(RNG_SEED)
        self.hands = self.actions = self.chance = 0
        self.seconds = 0.0  # wall clock
        self.cpu = 0.0  # this process's CPU time: the rates' denominator

    def run(self, seconds: float, max_hands: int) -> None:
        """Play hands for ``seconds`` of wall-clock time or until ``max_hands`` in total."""
        play_hand, rng, clock = self.play_hand, self.rng, time.perf_counter
        hands = actions = chance = 0
        cpu_start = time.process_time()
        start = clock()
        deadline = start + seconds
        while self.hands + hands < max_hands:
            done, dealt = play_hand(rng)
            hands += 1
            actions += done
            chance += dealt
            if clock() >= deadline:
                break
        self.seconds += clock() - start
        self.cpu += time.process_time() - cpu_start
        self.hands += hands
        self.actions += actions
        self.chance += chance

    @property
    def hands_per_second(self) -> float:
        return self.hands / self.cpu

    def report(self) -> None:
        rate = self.cpu and 1 / self.cpu
        extra = f"  (+ {self.chance * rate:,.0f} chance nodes/s)" if self.chance else ""
        print(
            f"  {self.label:<31} {self.hands * rate:>9,.1f} hands/s "
            f"{self.actions * rate:>10,.0f} actions/s{extra}"
            f"   [{self.hands:,} hands, {self.actions / max(self.hands, 1):.0f} actions/hand, "
            f"{self.seconds:.2f} s wall, {self.cpu:.2f} s CPU]",
            flush=True,
        )


def _ours_apply(rng: random.Random) -> tuple[int, int]:
    """One hand with the functional ``apply``; returns (actions, chance nodes)."""
    state, _ = seated_match(RULES, seed=rng.randbytes(32))
    actions = 0
    while state.hand_number == 1 and not state.is_over:
        seat = state.turn
        assert seat is not None  # someone is on turn until the match is over
        state, _ = apply(state, seat, rng.choice(legal_actions(state, seat)))
        actions += 1
    return actions, 0


def _ours_clone_act(rng: random.Random) -> tuple[int, int]:
    """One hand with one ``clone`` then in-place ``act``; returns (actions, chance nodes)."""
    dealt, _ = seated_match(RULES, seed=rng.randbytes(32))
    state: MatchState = dealt.clone()
    actions = 0
    while state.hand_number == 1 and not state.is_over:
        seat = state.turn
        assert seat is not None  # someone is on turn until the match is over
        act(state, seat, rng.choice(legal_actions(state, seat)))
        actions += 1
    return actions, 0


def _spiel_runners(pyspiel: Any) -> tuple[Callable[..., tuple[int, int]], ...]:
    game = pyspiel.load_game("spades")

    def child(rng: random.Random) -> tuple[int, int]:
        state = game.new_initial_state()
        actions = chance = 0
        while not state.is_terminal():
            if state.is_chance_node():
                chance += 1
            else:
                actions += 1
            state = state.child(rng.choice(state.legal_actions()))
        return actions, chance

    def clone_apply(rng: random.Random) -> tuple[int, int]:
        state = game.new_initial_state().clone()
        actions = chance = 0
        while not state.is_terminal():
            if state.is_chance_node():
                chance += 1
            else:
                actions += 1
            state.apply_action(rng.choice(state.legal_actions()))
        return actions, chance

    return child, clone_apply


def _pin_to_one_cpu(cpu: int | None) -> str:
    if cpu is not None and cpu < 0:
        return "not pinned"
    if not hasattr(os, "sched_setaffinity"):
        return "not pinned (no sched_setaffinity)"
    chosen = max(os.sched_getaffinity(0)) if cpu is None else cpu
    os.sched_setaffinity(0, {chosen})
    return f"pinned to CPU {chosen}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=5.0, help="budget per measurement")
    parser.add_argument("--max-hands", type=int, default=200_000, help="cap per measurement")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved slices of the budget")
    parser.add_argument(
        "--cpu", type=int, default=None, help="CPU to pin to (default: the last; -1: none)"
    )
    parser.add_argument("--warmup", type=int, default=20, help="untimed hands first")
    parser.add_argument(
        "--no-openspiel", action="store_true", help="skip OpenSpiel even if installed"
    )
    args = parser.parse_args(argv)

    print(
        f"engine benchmark: random legal play of complete hands (deal + 4 bids + 52 plays), "
        f"default rules, RNG seed {RNG_SEED}"
    )
    print(
        f"python {platform.python_version()} ({platform.python_implementation()}), "
        f"{_pin_to_one_cpu(args.cpu)}, budget {args.seconds:g} s or {args.max_hands:,} hands each"
    )
    meters = [
        Meter("apply (functional)", _ours_apply, args.warmup),
        Meter("clone + act (in place)", _ours_clone_act, args.warmup),
    ]
    pyspiel: Any = None
    if not args.no_openspiel:
        with contextlib.suppress(ImportError):
            pyspiel = importlib.import_module("pyspiel")
    if pyspiel is not None:
        child, clone_apply = _spiel_runners(pyspiel)
        meters += [
            Meter("child (functional)", child, args.warmup),
            Meter("clone + apply_action (in place)", clone_apply, args.warmup),
        ]
    # Interleaved slices, so that a change in the machine's load hits every meter alike.
    for _ in range(args.rounds):
        for meter in meters:
            meter.run(args.seconds / args.rounds, args.max_hands)

    engine = "mypyc build" if compiled.COMPILED else f"pure Python: {compiled.REASON}"
    print(f"spades.engine ({engine}):")
    for meter in meters[:2]:
        meter.report()
    if pyspiel is None:
        why = "skipped (--no-openspiel)" if args.no_openspiel else "not installed"
        print(f"OpenSpiel: {why} (.venv/bin/pip install './client_sdk[benchmark]' to compare)")
        return 0
    print(f"OpenSpiel {_version(pyspiel)} 'spades' (C++ via pyspiel; 52 chance nodes deal a hand):")
    for meter in meters[2:]:
        meter.report()
    print("ratio ours / OpenSpiel (hands/s):")
    for mine, other in zip(meters[:2], meters[2:], strict=True):
        ratio = mine.hands_per_second / other.hands_per_second
        print(f"  {mine.label:<22} vs {other.label:<31} {ratio:6.2f}x")
    best = max(m.hands_per_second for m in meters[:2]) / max(m.hands_per_second for m in meters[2:])
    print(f"  best vs best{'':<44} {best:6.2f}x")
    in_place = meters[1].hands_per_second / meters[3].hands_per_second
    print(f"target: in place >= {TARGET_IN_PLACE:.1f}x OpenSpiel's in place; now {in_place:.2f}x")
    return 0


def _version(pyspiel: Any) -> str:
    version = getattr(pyspiel, "__version__", None)
    if version is None:
        from importlib.metadata import PackageNotFoundError
        from importlib.metadata import version as dist_version

        try:
            version = dist_version("open-spiel")
        except PackageNotFoundError:
            version = "?"
    return str(version)


if __name__ == "__main__":
    sys.exit(main())
