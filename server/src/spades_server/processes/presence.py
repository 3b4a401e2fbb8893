"""Who is online: the accounts whose account stream (``AccountService.Connect``) is open.

Presence must be right across replicas (a bot connected to one replica is online on every
other), so it is kept where every replica reads: in the log's projection rows (the
``presence`` projection), one row per account and replica, ``listed`` while the replica holds
a stream of the account open. A row carries an expiry, which the replica renews every
``heartbeat`` seconds (of the server's clock) while the stream lasts; a replica killed without
closing its streams leaves rows that stop counting once their expiry passes (at most ``ttl``
seconds later). A stream that closes unlists its row at once. Rows are derived, short-lived
data: dropping them only forgets who was online until the next heartbeat.

Each heartbeat also unlists the rows whose expiry has passed, whichever replica wrote them, so
the rows a killed replica left stop being read by every listing (they would otherwise pile up
with every kill, up to :data:`MAX_ROWS`, and crowd out the live ones). The unlisting row takes
the next version of the row it replaces, so a replica that was only slow renews its row back.
An unlisted row (its stream closed, or its replica gone) records when it was unlisted, and the
heartbeat deletes it once it has been unlisted for ``forget_after`` seconds (10 minutes by
default), only at the version it read: a row its replica wrote again since stays. So the
table holds about one row per open stream, not one for every stream any replica ever had, and
a replica that comes back after that simply writes its row anew.

Each row's key is ``<account id>@<replica id>`` (a replica id is fresh for each process), and
only that replica writes it, so its version is the replica's own counter."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import secrets
from dataclasses import dataclass
from typing import Final

import structlog

from spades_server.eventlog.base import EventLog, ProjectionRow
from spades_server.ops.clocks import SYSTEM_CLOCK, Clock
from spades_server.ops.tasks import stop_tasks

log = structlog.get_logger(__name__)

#: The projection's name among the log's projection rows.
PROJECTION: Final = "presence"

#: Seconds a row counts after it was last written.
DEFAULT_TTL: Final = 30.0

#: Seconds between two renewals of a replica's rows.
DEFAULT_HEARTBEAT: Final = 10.0

#: Seconds an unlisted row is kept before a heartbeat deletes it.
DEFAULT_FORGET_AFTER: Final = 600.0

#: The most rows one listing reads (accounts online on all replicas together).
MAX_ROWS: Final = 10_000


@dataclass(frozen=True)
class Online:
    """An account with an open stream: since when (the earliest of its open streams)."""

    account_id: str
    since: float


def row_of(
    account_id: str,
    replica_id: str,
    since: float,
    expires: float,
    version: int,
    *,
    open_: bool,
    unlisted: float | None = None,
) -> ProjectionRow:
    """The presence row of one account on one replica; ``unlisted``: since when it is not
    listed (a closed stream's row)."""
    fields: dict[str, object] = {"account_id": account_id, "since": since, "expires": expires}
    if unlisted is not None:
        fields["unlisted"] = unlisted
    data = json.dumps(fields)
    return ProjectionRow(
        key=f"{account_id}@{replica_id}",
        sort_key=-int(since * 1000),  # listed highest first: the longest online first
        listed=open_,
        version=version,
        data=data.encode(),
    )


class Presence:
    """This replica's open account streams, written to the log's ``presence`` rows, and the
    listing of every replica's."""

    def __init__(
        self,
        event_log: EventLog,
        *,
        ttl: float = DEFAULT_TTL,
        heartbeat: float = DEFAULT_HEARTBEAT,
        forget_after: float = DEFAULT_FORGET_AFTER,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._log = event_log
        self.ttl = ttl
        self.heartbeat = heartbeat
        self.forget_after = forget_after
        self._clock = clock
        self.replica_id = secrets.token_hex(6)
        #: Open streams per account on this replica, and since when the first was open.
        self._open: dict[str, tuple[int, float]] = {}
        self._version = 0
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="presence-heartbeat")

    async def stop(self) -> None:
        """Stop renewing, and unlist this replica's rows (its streams are closing)."""
        await stop_tasks(self._task)
        self._task = None
        open_ids = list(self._open)
        self._open.clear()
        with contextlib.suppress(Exception):
            await self._write([(account_id, 0.0, False) for account_id in open_ids])

    async def opened(self, account_id: str) -> None:
        """An account stream opened on this replica."""
        count, since = self._open.get(account_id, (0, self._clock.now()))
        self._open[account_id] = (count + 1, since)
        if count == 0:
            await self._write([(account_id, since, True)])

    async def closed(self, account_id: str) -> None:
        """An account stream closed on this replica (the last one unlists the account here)."""
        count, since = self._open.get(account_id, (1, 0.0))
        if count > 1:
            self._open[account_id] = (count - 1, since)
            return
        self._open.pop(account_id, None)
        await self._write([(account_id, since, False)])

    async def renew(self) -> None:
        """Push the expiry of every open stream's row on (the heartbeat)."""
        await self._write(
            [(account_id, since, True) for account_id, (_, since) in self._open.items()]
        )

    async def sweep(self) -> int:
        """Unlist every row, of any replica, whose expiry has passed; how many were."""
        now = self._clock.now()
        rows = await self._log.projection_rows(
            PROJECTION, listed_only=True, offset=0, limit=MAX_ROWS
        )
        expired = []
        for row in rows:
            fields = json.loads(row.data)
            if fields["expires"] <= now:
                fields["unlisted"] = now
                data = json.dumps(fields).encode()
                expired.append(
                    dataclasses.replace(row, listed=False, version=row.version + 1, data=data)
                )
        if expired:
            await self._log.save_projection(PROJECTION, expired)
        return len(expired)

    async def forget(self) -> int:
        """Delete every row, of any replica, unlisted for ``forget_after`` seconds or more (a
        row unlisted before rows recorded when, since its expiry); how many were."""
        now = self._clock.now()
        rows = await self._log.projection_rows(
            PROJECTION, listed_only=False, offset=0, limit=MAX_ROWS
        )
        forgotten = []
        for row in rows:
            if row.listed:
                continue
            fields = json.loads(row.data)
            if fields.get("unlisted", fields["expires"]) + self.forget_after <= now:
                forgotten.append(row)
        if forgotten:
            await self._log.delete_projection_rows(PROJECTION, forgotten)
        return len(forgotten)

    async def online(self) -> list[Online]:
        """Every account with a stream open on any replica whose row has not expired, the
        longest online first."""
        now = self._clock.now()
        rows = await self._log.projection_rows(
            PROJECTION, listed_only=True, offset=0, limit=MAX_ROWS
        )
        earliest: dict[str, float] = {}
        for row in rows:
            fields = json.loads(row.data)
            if fields["expires"] <= now:
                continue  # a replica that stopped renewing (killed): no longer online
            account_id = fields["account_id"]
            earliest[account_id] = min(fields["since"], earliest.get(account_id, fields["since"]))
        return sorted(
            (Online(account_id, since) for account_id, since in earliest.items()),
            key=lambda online: (online.since, online.account_id),
        )

    async def _write(self, changes: list[tuple[str, float, bool]]) -> None:
        if not changes:
            return
        async with self._lock:  # versions in the order rows are written
            now = self._clock.now()
            expires = now + self.ttl
            rows = []
            for account_id, since, open_ in changes:
                if open_ and account_id not in self._open:
                    continue  # closed while this write waited: its closing row went first
                self._version += 1
                rows.append(
                    row_of(
                        account_id,
                        self.replica_id,
                        since,
                        expires,
                        self._version,
                        open_=open_,
                        unlisted=None if open_ else now,
                    )
                )
            if rows:
                await self._log.save_projection(PROJECTION, rows)

    async def _run(self) -> None:
        while True:
            await self._clock.sleep(self.heartbeat)
            try:
                await self.renew()
                await self.sweep()
                await self.forget()
            except Exception:
                log.exception("presence heartbeat failed")
