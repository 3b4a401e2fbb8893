"""The PostgreSQL log's global order: which positions ``read_all`` and ``subscribe_all`` may serve.

Global order across replicas: why ``position > last`` is not enough
--------------------------------------------------------------------
``position`` comes from a sequence (``CACHE 1``: values are handed out in increasing order in
time). Two appends that draw positions 7 and 8 may commit in the order 8, 7: a reader that sees
8 and moves its cursor past it never sees 7. ``read_all`` and ``subscribe_all`` therefore serve
only a *final* prefix: position by position from the cursor, stopping at the first missing
position (a hole) unless that hole is proven final (its writer finished without committing it:
a unique-key loser, a failed statement, or values the sequence skipped after a crash).

The proof uses transaction ids. Every append statement first takes its transaction id
(``pg_current_xact_id()`` in a MATERIALIZED CTE), *then* draws positions (all of a batch's, in
one transaction, so they commit together). When the tracker
(below) sees a hole g under a visible position p, it takes a transaction id X of its own in that
same statement (an otherwise empty transaction, committed with ``synchronous_commit=off``): g
was drawn before p, so g's writer got its id before X. Once a later snapshot's
``pg_snapshot_xmin`` reaches X, every transaction older than X has finished, so every hole up
to p is final: either it has committed and is visible, or it never will. The log keeps one such
pending bound (p, X) and a *final* position at or below which every hole is known final;
``read_all`` skips those holes and stops at any other. Holes are rare (only from conflicts that
lost on the unique key, or failed statements); the common out-of-order case simply fills in when
the slower append commits, a moment later.

The bound is a *fresh* transaction id, not the snapshot's ``pg_snapshot_xmax``: that is "latest
completed id + 1", and a transaction that took a newer id and is still running is not listed in
the snapshot at all, so "xmin = xmax" does not mean that nobody is writing (an early version of
this log skipped an event that way under the racing-replicas test).

For ``subscribe_all`` a tracker task moves the notifier's head (``AppendNotifier.advance_all``)
over the final prefix only. Positions this instance committed itself extend that prefix with no
query when they are contiguous with it; the tracker reads positions from storage only when a
hole has stood for 2 ms (an append of another replica whose NOTIFY has not come yet, or a real
hole), backing off to 50 ms while it stays.

Why not the simpler "serve only rows whose stored ``xid < pg_snapshot_xmin``" with position
order: transaction ids and sequence values are not taken in the same order (writer A takes its
xid, B takes its xid, B draws 7, A draws 8, A commits: xmin is B's id, A's row passes the filter,
and 7 is skipped). That filter is only gap-free when the reader orders by ``(xid, position)``,
which would make the exposed positions neither dense nor increasing in ``read_all`` order.

A limitation shared by every xmin-based scheme: a long-running *writing* transaction anywhere on
the PostgreSQL cluster delays deciding that a hole is final (never that an event is served).

``FinalPrefix`` is the part of the log that keeps this proof (a base class of
:class:`~spades_server.eventlog.postgres.PostgresEventLog`; the state is the core's).
"""

from __future__ import annotations

import asyncio
import contextlib

from spades_server.eventlog.base import StoredEvent
from spades_server.eventlog.postgres.core import PostgresLogCore, _fetch, _fetchrow

# Takes a transaction id after the snapshot: a bound for the writers of the holes it sees.
_POSITIONS_AFTER = """
SELECT set_config('synchronous_commit', 'off', true) AS sync,
       pg_current_xact_id()::text::bigint AS xid, pg_snapshot_xmin(s)::text::bigint AS xmin,
       array(SELECT position FROM events WHERE position > $1 ORDER BY position LIMIT $2)
           AS positions
FROM pg_current_snapshot() AS s
"""
_HEADS = """
SELECT NULL::text AS stream_id, (SELECT max(position) FROM events) AS head
UNION ALL
SELECT stream_id, max(version) FROM events WHERE stream_id = ANY($1::text[]) GROUP BY stream_id
"""

_TRACK_BATCH = 10_000
_TRACK_GRACE = 0.002  # seconds a hole may stand before the tracker queries


class FinalPrefix(PostgresLogCore):
    """The final prefix of the global order, and the task that moves it (``_track``)."""

    def _committed(self, stored: list[StoredEvent]) -> None:
        """Advance the final prefix over committed positions, at once when they extend it
        (no query); otherwise the tracker looks if the hole below them persists."""
        final = self._final
        newest = 0
        for event in stored:
            position = event.position
            if position > final:
                self._known.add(position)
            if position > newest:
                newest = position
        self._raise_final(final)
        if self._known and newest > self._target:
            self._target = newest
            self._track_wakeup.set()

    def _raise_final(self, final: int) -> None:
        """Every position up to ``final`` is final; so is a contiguous run of known commits."""
        known = self._known
        if final > self._final and known:
            known.difference_update([p for p in known if p <= final])
        while final + 1 in known:
            final += 1
            known.discard(final)
        if final > self._final:
            self._final = final
            self.notifier.advance_all(final)

    def _final_prefix(
        self,
        after: int,
        positions: list[int],
        xmin: int,
        final: int,
        bound: tuple[int, int] | None,
        fresh_xid: int | None = None,
    ) -> int:
        """How many of ``positions`` (read after ``after``, ascending, by one snapshot) may be
        served, given the final prefix and bound as they were before that snapshot; advances
        the shared final prefix with what this snapshot proves. ``fresh_xid``: a transaction
        id the same statement took after its snapshot, to record a bound with."""
        newest = positions[-1] if positions else 0
        if bound is not None and fresh_xid is not None and fresh_xid < bound[1]:
            # Transaction ids went back: PostgreSQL restarted after a crash that lost the id the
            # bound took (its transaction committed asynchronously, so nothing of it survived).
            # No transaction from before the crash can still commit, but xmin would not reach
            # that id until as many new ids were handed out again: take a new bound instead.
            if self._bound == bound:
                self._bound = None
            bound = None
        if bound is not None and xmin >= bound[1]:
            final = max(final, bound[0])  # every writer of a position <= bound[0] has finished
            if self._bound == bound:
                self._bound = None
        count, last = 0, after
        for position in positions:
            if position != last + 1 and position - 1 > final:
                break  # a hole that may still commit
            if last <= final:
                final = max(final, position)
            count, last = count + 1, position
        if fresh_xid is not None and newest > final and self._bound is None:
            self._bound = (newest, fresh_xid)
        self._raise_final(final)
        return count

    async def _track(self) -> None:
        """Move ``subscribe_all`` forward to every position proven final."""
        delay = 0.0
        loop = asyncio.get_running_loop()
        # On real time, the periodic re-read is due ``poll_interval`` after the last one,
        # however often commits heard of wake the tracker meanwhile: with a wait started anew
        # at each wake-up, steady traffic on other streams put it off for as long as it lasted,
        # and a stream whose notification was lost (a replica cut off from the fan-out) stayed
        # behind, its cached copy trusted as current.
        due = loop.time() + self.poll_interval
        while True:
            if self.sleep is None and loop.time() >= due:
                due = loop.time() + self.poll_interval
                await self._guarded(self._resync())
            if self._target <= self._final:
                delay = 0.0
                self._track_wakeup.clear()
                # The periodic re-read, on the log's clock (a test's clock moves it, a whole
                # interval at a time); a commit heard of brings the tracker back sooner.
                wait = self.poll_interval if self.sleep is not None else due - loop.time()
                if not await self.wait_at_most(self._track_wakeup, max(wait, 0.0)):
                    due = loop.time() + self.poll_interval
                    await self._guarded(self._resync())
                continue
            # A hole below the target: most are appends still in flight here or NOTIFYs on
            # their way, which fill it without a query. Query only if it stays put. These waits
            # (2 to 50 ms) stay on real time, not on the log's clock: they wait for other
            # transactions to commit, which a test's clock does not move, and on a clock that
            # stood still every subscribe_all would stop at the first hole.
            stuck = self._final
            # A follower that allows a lag (the lobby) lets foreign commits gather: one query
            # then proves many positions final instead of one query per notification.
            if not self._track_hurry.is_set():
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(delay or max(_TRACK_GRACE, self.lag_allowed)):
                        await self._track_hurry.wait()
            self._track_hurry.clear()
            if self._final != stuck:
                delay = 0.0
                continue
            final, bound = self._final, self._bound
            row = await self._guarded(self._run(_fetchrow, _POSITIONS_AFTER, final, _TRACK_BATCH))
            if row is not None:
                self.holes_examined += 1
                positions: list[int] = list(row["positions"])
                if positions:
                    self._target = max(self._target, positions[-1])
                self._final_prefix(final, positions, row["xmin"], final, bound, row["xid"])
            # A hole that may still commit: look again soon, backing off.
            delay = min(max(delay * 2, _TRACK_GRACE), 0.05) if self._final < self._target else 0.0

    async def _resync(self) -> None:
        """Re-read the newest position and the heads of watched streams (missed NOTIFYs)."""
        watched = self.notifier.watched_streams()
        rows = await self._run(_fetch, _HEADS, watched)
        for row in rows:
            if row["stream_id"] is None:
                head = row["head"] or 0
                if head > self._target:
                    self._target = head
                    self._track_wakeup.set()
            else:
                self.notifier.advance_stream(row["stream_id"], row["head"])

    def hurry(self) -> None:
        self._track_hurry.set()
