"""The PostgreSQL log's fan-out: how each replica hears of the others' appends.

Fan-out: LISTEN/NOTIFY, out of the insert
------------------------------------------
A NOTIFY inside every insert transaction serialises commits (the notification queue lock is held
through commit): measured here about 3,000 commits per second from eight connections instead of
about 7,900. So appends do not notify. Once a batch of appends commits, each stream's newest version
and position go into an outbox; one sender task per log instance sends everything gathered while its
previous NOTIFY was in flight as one ``pg_notify`` statement on its own connection (payload: JSON
``{"from": instance, "events": [[stream, version, position], ...]}``, split below PostgreSQL's
8,000-byte limit). A dedicated listening connection per instance receives the other instances'
notifications: their streams' subscribers are woken and read from storage, and the final-prefix
tracker reads forward for ``subscribe_all``. Local appends wake local stream subscribers at once,
with the events in memory. If the listening connection drops, it reconnects with back-off, LISTENs
again, and then re-reads the head of every watched stream and the newest position, so subscribers
catch up on whatever was missed; the same re-read runs every ``poll_interval`` seconds (of the
log's clock, ``EventLog.sleep``) as a safety net (a replica that died between its commit and its
NOTIFY).

Fan-out over NATS instead
-------------------------
With ``fanout="nats://host:port"`` the same payloads go over a core NATS subject
(``spades.eventlog.<schema>``, no JetStream: nothing is stored there) instead of NOTIFY, and
each instance subscribes to that subject instead of LISTENing; PostgreSQL stays the log of
record, and the periodic re-read stays the safety net (NATS delivers at most once: a message
published while a replica is cut off is never seen by it, which the re-read covers, as it
covers a replica that died between its commit and its publish). After the NATS client
reconnects, the watched streams and the newest position are re-read, as after a LISTEN
reconnect. Measured here (``tests/benchmarks/bench_fanout.py``, see ``docs/scaling.md``): a
core subject delivers several times the notifications of NOTIFY at a fraction of the CPU.

``Fanout`` is the part of the log that sends and receives these notifications (a base class of
:class:`~spades_server.eventlog.postgres.PostgresEventLog`; the state is the core's). Its
``listener_pid`` names the listening connection's server process, for an operator (or a test)
to find it in ``pg_stat_activity``; ``listener_reconnects`` counts its reconnections.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from typing import Any

import asyncpg
from asyncpg.pool import PoolConnectionProxy

from spades_server.eventlog.postgres.core import _log
from spades_server.eventlog.postgres.order import FinalPrefix

_NOTIFY = "SELECT pg_notify($1, payload) FROM unnest($2::text[]) AS payload"

_NATS_START_ATTEMPTS = 2  # further tries to reach NATS when the log opens
_NOTIFY_LIMIT = 7900  # bytes per payload; PostgreSQL refuses 8000 and more


class Fanout(FinalPrefix):
    """NOTIFY (or NATS) out, LISTEN (or a NATS subscription) in."""

    @property
    def listener_pid(self) -> int | None:
        """The PostgreSQL server process of the listening connection (``pg_stat_activity``'s
        ``pid``, application ``spades-eventlog-listen``), or None while it is lost and not yet
        reconnected, or with NATS fan-out."""
        return None if self._listener is None else self._listener.get_server_pid()

    async def _send_notifications(self) -> None:
        """Send what appends put in the outbox, one NOTIFY statement per gathered batch."""
        while True:
            if not self._outbox:
                self._outbox_idle.set()  # close() waits for this
            await self._outbox_wakeup.wait()
            self._outbox_wakeup.clear()
            if not self._outbox:
                continue
            batch, self._outbox = self._outbox, {}
            payloads = _payloads(self.instance_id, batch)
            if self._nats is not None:
                try:
                    for payload in payloads:  # buffered by the client: no round trip each
                        await self._nats.publish(self._subject, payload.encode())
                    self.notifications_sent += len(payloads)
                except Exception as error:  # the client's errors: cut off, buffer full
                    _log.warning("event log: NATS publish failed: %s", error)
                continue
            for attempt in range(2):
                try:
                    if self._sender is None or self._sender.is_closed():
                        self._sender = await self._connect("spades-eventlog-notify")
                    await self._sender.execute(_NOTIFY, self._channel, payloads)
                    self.notifications_sent += len(payloads)
                    break
                except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as error:
                    _log.warning("event log: NOTIFY failed (attempt %d): %s", attempt + 1, error)
                    if self._sender is not None:
                        self._sender.terminate()
                    self._sender = None
                    # Other replicas still catch up through their periodic re-read.

    async def _connect_nats(self, schema: str) -> None:
        """Connect to the NATS server and subscribe to this schema's subject."""
        import nats  # only a NATS fan-out needs the client

        async def reconnected() -> None:
            self.listener_reconnects += 1
            _log.info("event log: NATS reconnected; re-reading the heads")
            await self._guarded(self._resync())

        async def disconnected() -> None:
            if self._state == "open":
                _log.warning("event log: NATS connection lost; reconnecting")

        async def error(problem: Exception) -> None:
            _log.warning("event log: NATS: %s", problem)

        async def received(message: Any) -> None:
            self._on_notification(None, 0, self._subject, message.data.decode())

        try:
            self._nats = await nats.connect(
                self.fanout,
                name="spades-eventlog",
                no_echo=True,  # this instance's own notifications need not come back
                connect_timeout=5,
                allow_reconnect=True,
                # A few tries to start (then the server refuses to start, saying why); once
                # connected, the option is raised to "forever" below.
                max_reconnect_attempts=_NATS_START_ATTEMPTS,
                reconnect_time_wait=max(self.reconnect_delay, 0.1),
                reconnected_cb=reconnected,
                disconnected_cb=disconnected,
                error_cb=error,
            )
            self._subject = _subject_for(schema)
            await self._nats.subscribe(self._subject, cb=received)
            await self._nats.flush()
            # nats-py reads this option at each reconnect: from now on, never give up.
            self._nats.options["max_reconnect_attempts"] = -1
        except Exception as problem:  # nats' own errors: no server, a refused connection
            if self._nats is not None:
                with contextlib.suppress(Exception):
                    await self._nats.close()
                self._nats = None
            raise OSError(f"cannot reach the NATS server {self.fanout}: {problem}") from None

    async def _listen(self) -> None:
        connection = await self._connect("spades-eventlog-listen")
        try:
            await connection.add_listener(self._channel, self._on_notification)
        except BaseException:
            connection.terminate()
            raise
        connection.add_termination_listener(self._on_listener_lost)
        self._listener = connection
        self._listener_lost.clear()

    async def _keep_listening(self) -> None:
        """Reconnect the listening connection whenever it drops, then catch up."""
        while True:
            await self._listener_lost.wait()
            delay = self.reconnect_delay
            while True:
                await self.pause(delay)
                try:
                    await self._listen()
                except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as error:
                    _log.warning("event log: LISTEN reconnect failed: %s", error)
                    delay = min(delay * 2, 5.0)
                    continue
                break
            self.listener_reconnects += 1
            _log.info("event log: listening again on %s", self._channel)
            await self._guarded(self._resync())

    def _on_listener_lost(
        self, connection: asyncpg.Connection[Any] | PoolConnectionProxy[Any]
    ) -> None:
        if self._state == "open" and connection is self._listener:
            _log.warning("event log: the LISTEN connection was lost; reconnecting")
            self._listener = None
            self._listener_lost.set()

    def _on_notification(self, connection: object, pid: int, channel: str, payload: object) -> None:
        try:
            message = json.loads(str(payload))
            if message["from"] == self.instance_id:
                return
            events = [(str(s), int(v), int(p)) for s, v, p in message["events"]]
        except (ValueError, KeyError, TypeError) as error:
            _log.warning("event log: ignoring a malformed notification: %s", error)
            return
        newest = self._target
        for stream_id, version, position in events:
            self.notifier.advance_stream(stream_id, version)
            newest = max(newest, position)
        if newest > self._target:
            self._target = newest
            self._track_wakeup.set()


def _payloads(instance_id: str, batch: dict[str, tuple[int, int]]) -> list[str]:
    """JSON payloads, each under PostgreSQL's NOTIFY size limit."""
    payloads: list[str] = []
    head = f'{{"from": {json.dumps(instance_id)}, "events": ['
    parts: list[str] = []
    size = len(head) + 2
    for stream_id, (version, position) in batch.items():
        part = json.dumps([stream_id, version, position])
        if parts and size + len(part.encode()) + 1 > _NOTIFY_LIMIT:
            payloads.append(head + ",".join(parts) + "]}")
            parts, size = [], len(head) + 2
        parts.append(part)
        size += len(part.encode()) + 1
    if parts:
        payloads.append(head + ",".join(parts) + "]}")
    return payloads


def _subject_for(schema: str) -> str:
    """The NATS subject of a schema's notifications (a name NATS takes as one token)."""
    if re.fullmatch(r"[A-Za-z0-9_-]{1,64}", schema):
        return f"spades.eventlog.{schema}"
    return "spades.eventlog." + hashlib.sha256(schema.encode()).hexdigest()[:32]


def _channel_for(schema: str) -> str:
    channel = f"spades_eventlog.{schema}"
    if len(channel.encode()) > 63:
        channel = "spades_eventlog." + hashlib.sha256(schema.encode()).hexdigest()[:32]
    return channel
