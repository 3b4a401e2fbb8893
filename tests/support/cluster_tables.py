"""Tables of bots playing through the cluster's load balancer while a test breaks something:
started, watched, finished, then checked against the log (tests/support/history.py).

Each table has its own client (one HTTP/2 connection to haproxy, whose calls haproxy spreads
over the replicas), four random bots on the SDK's runner (reconnecting with a short back-off),
and journals of what each seat sent, was acknowledged and was delivered.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
from dataclasses import dataclass, field

from spades.bot import Backoff, BotView, MatchOutcome, play_match
from spades.client.client import DEFAULT_CHANNEL_OPTIONS
from spades.engine import Card, Rules
from spades_bots.random_bot import RandomBot
from tests.support.faults import assert_log_is_truth, eventually, seat_four, served_snapshots
from tests.support.history import HistoryClient, check_history, read_tables

#: Quick reconnection (the SDK's defaults wait up to 5 and 10 s).
CHANNEL_OPTIONS = tuple(
    {
        **dict(DEFAULT_CHANNEL_OPTIONS),
        "grpc.initial_reconnect_backoff_ms": 50,
        "grpc.min_reconnect_backoff_ms": 50,
        "grpc.max_reconnect_backoff_ms": 300,
    }.items()
)
BACKOFF = Backoff(initial=0.05, maximum=0.5, give_up_after=90.0)
FINISH_TIMEOUT = 150.0


class Thinking(RandomBot):
    """A random bot that thinks ``think`` seconds a decision, so matches outlast the fault
    (over its bids only, its cards quick, when ``over_cards`` is False)."""

    def __init__(self, seed: int, think: float, *, over_cards: bool = True) -> None:
        super().__init__(seed)
        self.think = think
        self.over_cards = over_cards

    async def bid(self, view: BotView) -> int:  # type: ignore[override]
        await asyncio.sleep(self.think)
        return super().bid(view)

    async def play(self, view: BotView) -> Card:  # type: ignore[override]
        if self.over_cards:
            await asyncio.sleep(self.think)
        return super().play(view)


@dataclass
class Table:
    table_id: str
    tokens: list[str]
    client: HistoryClient
    tasks: list[asyncio.Future[MatchOutcome]] = field(default_factory=list)

    def accepted(self) -> int:
        return sum(len(journal.accepted) for journal in self.client.journals.values())

    def first_accepted_after(self, moment: float) -> float | None:
        times = [
            accepted.received_at
            for journal in self.client.journals.values()
            for accepted in journal.accepted
            if accepted.received_at > moment
        ]
        return min(times) if times else None


class Play:
    """``tables`` matches of ``rules`` played through ``address``; an async context manager
    that cancels whatever is still playing and closes the clients on exit."""

    def __init__(self, address: str, tables: int, rules: Rules, think: float) -> None:
        self.address = address
        self.count = tables
        self.rules = rules
        self.think = think
        self.tables: list[Table] = []
        self.outcomes: list[list[MatchOutcome]] = []

    async def __aenter__(self) -> Play:
        # Every table seated first, then every bot started: no match is under way (or over)
        # while the next table is still being created.
        for number in range(self.count):
            client = HistoryClient(self.address, CHANNEL_OPTIONS)
            self.tables.append(Table("", [], client))
            table_id, tokens = await seat_four(client, self.rules, f"cluster {number}")
            self.tables[-1] = Table(table_id, tokens, client)
        for number, table in enumerate(self.tables):
            table_id, tokens, client = table.table_id, table.tokens, table.client
            table.tasks = [
                asyncio.ensure_future(
                    play_match(
                        client,
                        Thinking(number * 4 + seat, self.think),
                        token,
                        table_id=table_id,
                        backoff=BACKOFF,
                    )
                )
                for seat, token in enumerate(tokens)
            ]
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        for table in self.tables:
            for task in table.tasks:
                task.cancel()
        for table in self.tables:
            for task in table.tasks:
                with contextlib.suppress(BaseException):
                    await task
            await table.client.close()

    def ended(self) -> bool:
        """Whether a seat's match is over (a seat's runner that failed raises its error)."""
        done = [task for table in self.tables for task in table.tasks if task.done()]
        for task in done:
            task.result()
        return bool(done)

    async def until_each_accepted(self, actions: int, timeout: float = 60.0) -> None:
        await eventually(
            lambda: all(table.accepted() >= actions for table in self.tables),
            timeout,
            f"every table accepting {actions} actions",
        )

    async def until_each_accepted_after(self, moment: float, timeout: float = 90.0) -> None:
        await eventually(
            lambda: all(table.first_accepted_after(moment) is not None for table in self.tables),
            timeout,
            "every table accepting an action again",
        )

    def seats_accepted_after(self, moment: float) -> list[float]:
        """Each seat's first accepted action after ``moment`` (its time), for the seats that
        have one."""
        return [
            min(times)
            for table in self.tables
            for journal in table.client.journals.values()
            if (times := [a.received_at for a in journal.accepted if a.received_at > moment])
        ]

    async def until_every_seat_accepted_after(self, moment: float, timeout: float = 90.0) -> None:
        """Wait until every seat of every table has had an action accepted since ``moment``
        (a table's first one may come from a seat the fault never touched)."""
        seats = sum(len(table.tokens) for table in self.tables)
        await eventually(
            lambda: len(self.seats_accepted_after(moment)) == seats,
            timeout,
            "every seat accepting an action again",
        )

    def accepted_between(self, start: float, end: float) -> int:
        return sum(
            start < accepted.received_at < end
            for table in self.tables
            for journal in table.client.journals.values()
            for accepted in journal.accepted
        )

    def refusals_between(self, start: float, end: float) -> list[tuple[str, str]]:
        """The (status code, reason code) of every action refused to any seat in between."""
        return [
            (code, reason_code)
            for table in self.tables
            for delivery in table.client.deliveries
            for at, code, reason_code in delivery.refusals
            if start < at < end
        ]

    def recovery(self, moment: float) -> str:
        """Seconds from ``moment`` to each table's next accepted action: p50 and max."""
        seconds = [
            at - moment
            for table in self.tables
            if (at := table.first_accepted_after(moment)) is not None
        ]
        if not seconds:
            return "no table accepted an action since"
        return f"p50 {statistics.median(seconds):.2f} s, max {max(seconds):.2f} s"

    async def finish(self) -> None:
        """Wait for every match to end (each seat's outcome kept)."""
        everything = asyncio.gather(*(task for table in self.tables for task in table.tasks))
        await asyncio.wait_for(everything, FINISH_TIMEOUT)
        self.outcomes = [[task.result() for task in table.tasks] for table in self.tables]

    def reconnects(self) -> int:
        return sum(outcome.reconnects for each in self.outcomes for outcome in each)

    def resent(self) -> int:
        return sum(outcome.resent for each in self.outcomes for outcome in each)

    async def check(self, dsn: str) -> None:
        """Every table's history against the log, read from PostgreSQL directly, and every
        table's served view against the log replayed (after :meth:`finish`)."""
        snapshots = await served_snapshots(
            self.tables[0].client, [table.table_id for table in self.tables]
        )
        streams = await read_tables(dsn, [table.table_id for table in self.tables])
        for table, outcomes in zip(self.tables, self.outcomes, strict=True):
            assert all(outcome.end is not None for outcome in outcomes), table.table_id
            check_history(
                streams[table.table_id],
                table.client,
                dict(zip(table.tokens, outcomes, strict=True)),
            )
        assert_log_is_truth(snapshots, streams)
