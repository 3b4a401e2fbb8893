"""Analysis of a finished match: every card judged double dummy, and by what its seat could see.

For every card played, :func:`analyse` gives each legal card's double-dummy value (the seat's
side's hand points minus the other side's, :mod:`spades.solver`), the best cards, the points
and tricks the card lost against the best, and the points it could be *expected* to lose given
only what the seat could see (the mean over worlds sampled consistent with its view, with a
standard error); for every hand, the bids beside the double-dummy par; per seat and per side,
the points lost, the accuracy (the share of plays that lost nothing) and the costliest
mistakes. Only a finished match is analysed: a live table never is (it would be a cheating
tool). See docs/analysis.md for the numbers, with a worked example.

A whole match takes a while (each decision's worlds are solved double dummy), so the work is
spread over a bounded pool of worker processes (``jobs``) and reports its progress; the result
depends only on the record, the number of worlds and the seed, never on the pool.

In a program (``spades-record analyse`` does this); with ``jobs`` above 1 the workers are
spawned, so a script needs Python's usual ``if __name__ == "__main__":`` guard::

    from spades.analysis import analyse
    from spades.records import load_record

    if __name__ == "__main__":
        analysis = analyse(load_record("match.json"), worlds=64, jobs=2)
        for play in analysis.plays:
            if play.loss_points:
                print(play.hand, play.trick, play.card, play.loss_points, play.expected_loss_points)
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass

from spades.analysis.decisions import (
    SEAT_LETTERS,
    HandPlay,
    PlayDecision,
    Unanalysable,
    hands_played,
    play_decisions,
)
from spades.analysis.judge import (
    DEFAULT_WORLDS,
    HandPar,
    PlayJudgement,
    hand_par,
    judge_play,
)
from spades.analysis.report import Analysis, HandBids, Summary, analysis_json
from spades.engine import events as ev
from spades.records.record import events_of
from spades.v1 import record_pb2

__all__ = [
    "DEFAULT_WORLDS",
    "SEAT_LETTERS",
    "Analysis",
    "HandBids",
    "HandPar",
    "HandPlay",
    "PlayDecision",
    "PlayJudgement",
    "Summary",
    "Unanalysable",
    "Work",
    "analyse",
    "analysis_json",
    "assemble",
    "default_jobs",
    "hand_par",
    "judge_play",
    "plan",
    "worker_pool",
]

#: Called as the work goes: (tasks done, tasks in all).
Progress = Callable[[int, int], None]


def default_jobs() -> int:
    """Worker processes by default: the machine's cores, at most 4."""
    return max(1, min(4, os.cpu_count() or 1))


def _leave_with_parent(parent: int) -> None:
    """In each worker: exit when the process that started it is gone (killed, say), rather
    than solve on for no one."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="leave-with-parent", daemon=True).start()


#: How often a worker checks that the analysis that started it is still there.
PARENT_CHECK_SECONDS = 1.0


@dataclass(frozen=True, slots=True)
class Work:
    """What analysing a record takes: one task per card played (:func:`judge_play`) and one per
    hand for its par (:func:`hand_par`, at the hand's first lead). Each task is plain data in
    and out, so it may run in any worker process; :func:`assemble` puts the answers together.
    """

    record: record_pb2.GameRecord
    decisions: tuple[PlayDecision, ...]
    openings: tuple[PlayDecision, ...]

    @property
    def total(self) -> int:
        """Tasks in all."""
        return len(self.decisions) + len(self.openings)


def plan(record: record_pb2.GameRecord) -> Work:
    """The tasks of the finished match of ``record``; raises as :func:`analyse` does."""
    decisions = tuple(play_decisions(record))
    return Work(record, decisions, tuple(d for d in decisions if d.opens_hand))


def assemble(
    work: Work,
    worlds: int,
    seed: bytes,
    judged: Sequence[PlayJudgement],
    pars: Sequence[HandPar],
) -> Analysis:
    """The analysis of ``work`` from its answers: ``judged`` in the order of its decisions."""
    record = work.record
    par_by_hand = {par.hand: par for par in pars}
    hands = tuple(
        HandBids(hand.hand, hand.bids, par_by_hand.get(hand.hand), hand.tricks_won)
        for hand in hands_played(record)
    )
    created = events_of(record)[0]
    assert isinstance(created, ev.TableCreated)
    return Analysis(
        table_id=record.table_id,
        rules=created.rules,
        worlds=worlds,
        seed=seed,
        plays=tuple(judged),
        hands=hands,
    )


def worker_pool(jobs: int) -> ProcessPoolExecutor:
    """A pool of ``jobs`` worker processes for the tasks of :class:`Work`: spawned (a fork of a
    process with gRPC's threads running is not safe), each leaving when its parent is gone."""
    return ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_leave_with_parent,
        initargs=(os.getpid(),),
    )


def analyse(
    record: record_pb2.GameRecord,
    *,
    worlds: int = DEFAULT_WORLDS,
    seed: bytes = b"",
    jobs: int = 1,
    progress: Progress | None = None,
) -> Analysis:
    """Judge every card of the finished match of ``record`` (see the module's docstring).

    ``worlds``: worlds sampled per decision for the expected loss (0: double dummy only, no
    expected loss); ``seed``: what they are drawn from (the same record, worlds and seed give
    the same analysis); ``jobs``: worker processes (1 works in this process). Raises
    :class:`Unanalysable` for an unfinished match and a :class:`~spades.records.RecordError`
    for a record that does not verify or replay.
    """
    if worlds < 0:
        raise ValueError(f"worlds must be 0 or more, not {worlds}")
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, not {jobs}")
    work = plan(record)
    total = work.total
    done = 0
    if progress is not None:
        progress(done, total)
    judged: list[PlayJudgement]
    pars: list[HandPar]
    if jobs == 1:
        judged, pars = [], []
        for decision in work.decisions:
            judged.append(judge_play(decision, worlds, seed))
            done += 1
            if progress is not None:
                progress(done, total)
        for decision in work.openings:
            pars.append(hand_par(decision.state))
            done += 1
            if progress is not None:
                progress(done, total)
    else:
        with worker_pool(jobs) as pool:
            play_futures = [pool.submit(judge_play, d, worlds, seed) for d in work.decisions]
            par_futures = [pool.submit(hand_par, d.state) for d in work.openings]
            every: list[Future[object]] = [*play_futures, *par_futures]  # type: ignore[list-item]
            for _ in as_completed(every):
                done += 1
                if progress is not None:
                    progress(done, total)
            judged = [future.result() for future in play_futures]
            pars = [future.result() for future in par_futures]
    return assemble(work, worlds, seed, judged, pars)
