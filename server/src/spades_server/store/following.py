"""Following the aggregates held here on a log other processes append to (PostgreSQL replicas).

An aggregate a stream holds (:meth:`~spades_server.store.repository.Repository.holding`) is
*followed*: the log's notifications say when another replica committed to its stream, and the
repository then reads and folds just those rows. While a followed aggregate's cache has every
version another replica was heard to commit, it is *current*: a command trusts it and does not
read the log first (its append still names the expected version, so a row the cache missed, a
notification still on its way, is a conflict, after which the repository reads and decides
again). An aggregate nothing holds here is not followed: it is read before every command. A
replica so follows only what it serves, not every stream of the log.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import structlog

from spades_server.eventlog.base import EventLog, LogClosed

log = structlog.get_logger(__name__)

#: Seconds a follower waits, on the log's clock (``EventLog.pause``), before it follows again
#: after the log failed it.
FOLLOW_RETRY = 0.5


class Followers:
    """One follower task per held aggregate. ``refresh(aggregate_id)`` folds whatever the log
    has past the cached aggregate; ``version_of(aggregate_id)`` is the cached one's version."""

    def __init__(
        self,
        log: EventLog,
        stream_of: Callable[[str], str],
        refresh: Callable[[str], Awaitable[None]],
        version_of: Callable[[str], int],
    ) -> None:
        self._log = log
        self._stream_of = stream_of
        self._refresh = refresh
        self._version_of = version_of
        self._tasks: dict[str, asyncio.Task[None]] = {}
        #: The aggregates whose follower is watching (their cache has every version others
        #: were heard to commit, once it is at the foreign head).
        self._watching: set[str] = set()

    def follow(self, aggregate_id: str) -> None:
        """Start following the aggregate (unless it is followed already)."""
        if aggregate_id not in self._tasks:
            self._tasks[aggregate_id] = asyncio.get_running_loop().create_task(
                self._follow(aggregate_id), name=f"follow-{aggregate_id}"
            )

    def stop(self, aggregate_id: str) -> None:
        """Stop following the aggregate (the last holder let it go)."""
        task = self._tasks.pop(aggregate_id, None)
        if task is not None:
            task.cancel()
            self._watching.discard(aggregate_id)

    def following(self, aggregate_id: str) -> bool:
        """Whether the aggregate is followed (held, and its follower watching)."""
        return aggregate_id in self._watching

    def current(self, aggregate_id: str, version: int) -> bool:
        """Whether a cached copy at ``version`` has every version others were heard to commit."""
        return (
            aggregate_id in self._watching
            and self._log.notifier.foreign_head(self._stream_of(aggregate_id)) <= version
        )

    async def _follow(self, aggregate_id: str) -> None:
        """Fold what other processes commit to a held aggregate as they are heard to (until the
        last holder lets it go): the cache then serves its commands without a read."""
        notifier = self._log.notifier
        stream_id = self._stream_of(aggregate_id)
        while True:
            try:
                notifier.watch_stream(stream_id)
            except LogClosed:
                return
            try:
                # Watching: every commit heard of from now on raises the foreign head. One read
                # covers what others committed before, then the cache is current.
                await self._refresh(aggregate_id)
                self._watching.add(aggregate_id)
                while True:
                    await notifier.wait_for_foreign(stream_id, self._version_of(aggregate_id))
                    if notifier.foreign_head(stream_id) > self._version_of(aggregate_id):
                        await self._refresh(aggregate_id)
                        if notifier.foreign_head(stream_id) > self._version_of(aggregate_id):
                            # Not visible to this read yet: a moment of real time, as it waits
                            # for storage, which a test's clock does not move.
                            await asyncio.sleep(0.01)
            except (LogClosed, asyncio.CancelledError):
                return
            except Exception as error:  # the log failed a read: follow again a moment later
                log.warning("not followed", stream_id=stream_id, reason=str(error))
            finally:
                if self._tasks.get(aggregate_id) is asyncio.current_task():
                    self._watching.discard(aggregate_id)  # (else it was let go, or follows anew)
                notifier.unwatch_stream(stream_id)
            await self._log.pause(FOLLOW_RETRY)
