"""Judging one decision: its double-dummy values, and the loss the seat could expect from
what it could see (run in worker processes; everything here is plain data in and out).

Double dummy: :func:`spades.solver.solve` values every legal card with every hand in view,
under the points objective (the seat's side's hand points minus the other side's) and the
tricks objective. What the seat could know: the same loss, averaged over worlds the seat could
not tell from the real one (:func:`spades.bot.worlds.sample_world`), each solved double dummy.
A decision's worlds are drawn from a generator seeded by the analysis seed and the decision's
place (hand, trick, seat), so the result does not depend on which worker ran it, or when.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from math import sqrt
from statistics import fmean, stdev

from spades.analysis.decisions import PlayDecision
from spades.bot.view import BotView
from spades.bot.worlds import Holders, sample_world
from spades.engine import Card, MatchState
from spades.solver import Objective, solve

#: Worlds sampled per decision unless told otherwise (the issue asks for at least 64).
DEFAULT_WORLDS = 64


@dataclass(frozen=True, slots=True)
class PlayJudgement:
    """One card played, judged (see docs/analysis.md for what each number means)."""

    hand: int
    trick: int
    seat: int
    card: Card
    #: Every legal card's double-dummy value, points objective, for the seat's side.
    values: dict[Card, int]
    #: The legal cards of greatest points value.
    best: tuple[Card, ...]
    #: Best points value minus the card's (never negative).
    loss_points: int
    #: Best tricks value (tricks objective) minus the card's (never negative).
    loss_tricks: int
    #: The mean points loss over the worlds the seat could not tell apart (None when no world
    #: was sampled for a decision with a choice: an analysis of 0 worlds), and its standard
    #: error (None when fewer than two worlds were sampled).
    expected_loss_points: float | None
    expected_loss_se: float | None
    #: Worlds sampled (0 when the seat had one legal card: the loss is then 0 in every world).
    worlds: int
    timed_out: bool


@dataclass(frozen=True, slots=True)
class HandPar:
    """The hand's double-dummy par: the tricks each side takes from the first lead when
    every hand is in view and both sides play for tricks."""

    hand: int
    #: The seat that led the hand's first trick.
    leader: int
    #: Per side (in the order of ``rules.sides``): its tricks; None for the sides whose par
    #: the paranoid search cannot say (cutthroat: only the leader's guarantee is known).
    tricks: tuple[int | None, ...]


def decision_rng(seed: bytes, hand: int, trick: int, seat: int) -> random.Random:
    """The generator of one decision's worlds: from the analysis seed and the decision's place."""
    digest = hashlib.sha256(seed + f"/{hand}/{trick}/{seat}".encode()).digest()
    return random.Random(digest)


def judge_play(decision: PlayDecision, worlds: int, seed: bytes) -> PlayJudgement:
    """The judgement of one card: double dummy, then ``worlds`` worlds of the seat's view."""
    values = solve(decision.state, Objective.POINTS)
    tricks = solve(decision.state, Objective.TRICKS)
    chosen = decision.card
    top = max(values.values())
    best = tuple(card for card, value in values.items() if value == top)
    losses = _world_losses(decision, worlds, seed) if len(values) > 1 else []
    expected: float | None = fmean(losses) if losses else None
    error = stdev(losses) / sqrt(len(losses)) if len(losses) > 1 else None
    if len(values) == 1:
        expected, error = 0.0, 0.0  # one legal card: no choice, so no loss in any world
    return PlayJudgement(
        hand=decision.hand,
        trick=decision.trick,
        seat=decision.seat,
        card=chosen,
        values=values,
        best=best,
        loss_points=top - values[chosen],
        loss_tricks=max(tricks.values()) - tricks[chosen],
        expected_loss_points=expected,
        expected_loss_se=error,
        worlds=len(losses),
        timed_out=decision.timed_out,
    )


def _world_losses(decision: PlayDecision, worlds: int, seed: bytes) -> list[int]:
    view = BotView(decision.seat_state, decision.seat, decision.legal)
    holders = Holders(view)
    rng = decision_rng(seed, decision.hand, decision.trick, decision.seat)
    losses = []
    for _ in range(worlds):
        world = sample_world(view, rng, holders)
        values = solve(world, Objective.POINTS)
        losses.append(max(values.values()) - values[decision.card])
    return losses


def hand_par(state: MatchState) -> HandPar:
    """The par of the hand whose first lead ``state`` awaits (see :class:`HandPar`)."""
    leader = state.seat_to_act()
    taken = max(solve(state, Objective.TRICKS).values())
    rules = state.rules
    leader_side = rules.seating.side_of(leader)
    tricks: list[int | None] = []
    for index in range(len(rules.sides)):
        if index == leader_side:
            tricks.append(taken)
        elif rules.players == 4:
            tricks.append(rules.hand_size - taken)
        else:
            tricks.append(None)
    return HandPar(hand=state.hand_number, leader=leader, tricks=tuple(tricks))
