"""The analysis workers: finished tables analysed in a bounded pool of worker processes, and
each analysis kept beside the log once done.

Analysing a match (:mod:`spades.analysis`) is heavy: double-dummy solves for every card, more
for every world sampled. So it never runs in the serving process's event loop: each card's
judgement (and each hand's par) is one task for a pool of ``workers`` spawned processes
(:func:`spades.analysis.worker_pool`, made on the first analysis), and the loop only replays the
record into tasks and puts the answers together. At most ``queue`` analyses are admitted at
once, running or waiting for a worker: one more is refused (ANALYSIS_QUEUE_FULL, with RetryInfo),
so a burst of requests cannot stack hours of work. Two requests for the same table and worlds
share one analysis; when every caller of an analysis has gone, it is abandoned (its tasks not yet
started are cancelled), and its place is free again.

An analysis is derived data, so it is kept as a projection beside the log
(``EventLog.save_projection``, projection ``analyses``, keyed by table id), never in the table's
events: one row per table, its version the worlds sampled, so a kept analysis is replaced only
by one of at least as many worlds. Whoever asks again gets the kept one (a replica that shares
the log too). Only a finished table is ever analysed: the caller checks that first
(``api/analysis_service``), and nothing here is offered a live table.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import AsyncIterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

import structlog

from spades.analysis import Analysis, Work, assemble, hand_par, judge_play, plan, worker_pool
from spades.analysis.wire import analysis_to_proto
from spades.reasons import Reason
from spades.v1 import analysis_pb2, record_pb2
from spades_server.domain import errors
from spades_server.eventlog import EventLog, ProjectionRow
from spades_server.ops import metrics
from spades_server.ops.tasks import stop_tasks

log = structlog.get_logger(__name__)

#: The projection the analyses are kept in (one row per table).
ANALYSES = "analyses"
#: Seconds a refused request is told to wait (RetryInfo) when the queue is full.
QUEUE_FULL_RETRY = 30.0
#: What the worlds of the server's analyses are drawn from (the CLI's default seed, so
#: ``spades-record analyse --worlds N`` on the table's record gives the same numbers).
SEED = b""


@dataclass(frozen=True, slots=True)
class Progress:
    """How far an analysis is: tasks (cards judged, hands' pars) and whole hands done."""

    done: int
    total: int
    hands_done: int
    hands_total: int

    def to_proto(self) -> analysis_pb2.AnalysisProgress:
        return analysis_pb2.AnalysisProgress(
            done=self.done,
            total=self.total,
            hands_done=self.hands_done,
            hands_total=self.hands_total,
        )


class AnalysisJob:
    """One analysis being computed: its progress, told to every caller that follows it, and
    its outcome (the analysis kept, or the error that ended it)."""

    def __init__(self, table_id: str, worlds: int) -> None:
        self.table_id = table_id
        self.worlds = worlds
        self.progress = Progress(0, 0, 0, 0)
        self.outcome: asyncio.Future[analysis_pb2.Analysis] = (
            asyncio.get_running_loop().create_future()
        )
        self.followers = 0
        self.task: asyncio.Task[None] | None = None
        self._told = asyncio.Event()
        self._version = 0

    def tell(self, progress: Progress) -> None:
        self.progress = progress
        self._version += 1
        told, self._told = self._told, asyncio.Event()
        told.set()

    async def follow(self) -> AsyncIterator[Progress]:
        """Each new progress, then the end (the outcome is then set; await it)."""
        seen = -1
        while True:
            told = self._told
            if self._version != seen:
                seen = self._version
                if seen > 0:
                    yield self.progress
                # Look again before the end: the last progress and the outcome may both have
                # come while this one was being sent (a slow stream), and the last goes first.
                continue
            if self.outcome.done():
                return
            waiter = asyncio.ensure_future(told.wait())
            try:
                await asyncio.wait((waiter, self.outcome), return_when=asyncio.FIRST_COMPLETED)
            finally:
                waiter.cancel()


class AnalysisWorkers:
    """The pool, the analyses admitted to it, and the kept results (see the module's text)."""

    def __init__(self, event_log: EventLog, *, workers: int, queue: int) -> None:
        self._log = event_log
        self.workers = workers
        self.queue = queue
        self._pool: ProcessPoolExecutor | None = None
        self._jobs: dict[tuple[str, int], AnalysisJob] = {}

    async def kept(self, table_id: str) -> analysis_pb2.Analysis | None:
        """The analysis kept for the table (the one of the most worlds), None when none is."""
        row = await self._log.projection_row(ANALYSES, table_id)
        return None if row is None else analysis_pb2.Analysis.FromString(row.data)

    def admit(self, record: record_pb2.GameRecord, worlds: int) -> AnalysisJob:
        """The analysis of the finished match of ``record`` with ``worlds``: one already running
        (shared), or a new one admitted to the pool; ANALYSIS_QUEUE_FULL when the pool has as
        many as it admits. Follow it with :meth:`follow`."""
        key = (record.table_id, worlds)
        job = self._jobs.get(key)
        if job is not None and job.task is not None and not job.task.cancelling():
            return job
        if len(self._jobs) >= self.queue:
            metrics.ANALYSES.labels("refused").inc()
            raise errors.refuse(
                Reason.ANALYSIS_QUEUE_FULL,
                f"this server already has {len(self._jobs)} analyses running or waiting (at "
                f"most {self.queue}): retry in {QUEUE_FULL_RETRY:g} s",
                retry_delay=QUEUE_FULL_RETRY,
            )
        job = AnalysisJob(record.table_id, worlds)
        self._jobs[key] = job
        metrics.ANALYSES.labels("started").inc()
        metrics.ANALYSIS_QUEUE.set(len(self._jobs))
        job.task = asyncio.create_task(self._run(job, record), name=f"analyse {key}")
        return job

    async def follow(self, job: AnalysisJob) -> AsyncIterator[Progress | analysis_pb2.Analysis]:
        """The job's progress as it comes, then its analysis. A caller that leaves early stops
        following; when none follows any more, the analysis is abandoned."""
        job.followers += 1
        try:
            async for progress in job.follow():
                yield progress
            yield await job.outcome
        finally:
            job.followers -= 1
            if job.followers == 0 and job.task is not None and not job.outcome.done():
                job.task.cancel()

    async def _run(self, job: AnalysisJob, record: record_pb2.GameRecord) -> None:
        began = time.perf_counter()
        result = "failed"
        try:
            work = await asyncio.to_thread(plan, record)
            analysis = await self._judge(job, work)
            message = analysis_to_proto(analysis)
            row = ProjectionRow(
                key=job.table_id,
                sort_key=0,
                listed=False,
                version=job.worlds,
                data=message.SerializeToString(),
            )
            await self._log.save_projection(ANALYSES, [row])
            job.outcome.set_result(message)
            result = "finished"
            metrics.ANALYSIS_SECONDS.observe(time.perf_counter() - began)
            log.info(
                "analysed",
                table_id=job.table_id,
                worlds=job.worlds,
                seconds=round(time.perf_counter() - began, 3),
            )
        except asyncio.CancelledError:
            result = "abandoned"
            job.outcome.cancel()
            raise
        except Exception as error:
            log.exception("analysis failed", table_id=job.table_id, worlds=job.worlds)
            job.outcome.set_exception(error)
            job.outcome.exception()  # retrieved: a job no one follows any more still ends quietly
        finally:
            metrics.ANALYSES.labels(result).inc()
            if self._jobs.get((job.table_id, job.worlds)) is job:
                del self._jobs[(job.table_id, job.worlds)]
            metrics.ANALYSIS_QUEUE.set(len(self._jobs))

    async def _judge(self, job: AnalysisJob, work: Work) -> Analysis:
        """Every task of ``work`` run in the pool, the progress told as each one ends."""
        if self._pool is None:
            self._pool = worker_pool(self.workers)
        pool = self._pool
        loop = asyncio.get_running_loop()
        hands = sorted({decision.hand for decision in work.decisions})
        left = {hand: 0 for hand in hands}
        for decision in work.decisions:
            left[decision.hand] += 1 + decision.opens_hand
        job.tell(Progress(0, work.total, 0, len(hands)))

        def ended(hand: int, future: asyncio.Future[Any]) -> None:
            if future.cancelled():
                return
            left[hand] -= 1
            progress = job.progress
            job.tell(
                replace(
                    progress,
                    done=progress.done + 1,
                    hands_done=progress.hands_done + (left[hand] == 0),
                )
            )

        seed, worlds = SEED, job.worlds
        plays = [
            loop.run_in_executor(pool, judge_play, decision, worlds, seed)
            for decision in work.decisions
        ]
        pars = [loop.run_in_executor(pool, hand_par, d.state) for d in work.openings]
        tasks: list[asyncio.Future[Any]] = [*plays, *pars]
        for future, decision in zip(tasks, [*work.decisions, *work.openings], strict=True):
            future.add_done_callback(functools.partial(ended, decision.hand))
        try:
            judged = await asyncio.gather(*plays)
            par_values = await asyncio.gather(*pars)
        finally:
            for future in tasks:
                future.cancel()  # abandoned: what has not started never will
        return assemble(work, worlds, seed, judged, par_values)

    async def stop(self) -> None:
        """Abandon every analysis and end the worker processes (what they were solving is
        lost: nothing of an unfinished analysis is kept)."""
        await stop_tasks(*(job.task for job in list(self._jobs.values())))
        pool, self._pool = self._pool, None
        if pool is not None:
            # A worker in the middle of a solve would finish it first: end it now instead.
            for process in list(getattr(pool, "_processes", {}).values()):
                process.terminate()
            pool.shutdown(wait=True, cancel_futures=True)
