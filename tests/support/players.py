"""Bot accounts that play every table their account stream assigns them, for the tournament
tests: each account's stream (AccountService.Connect) is followed, and each TableAssigned seat
is played with the SDK's ``play_match`` over the account's key (``account_seat``). Unlike the
SDK's AccountRunner, it also keeps the ``tournament_finished`` events the tests read.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field

from spades import protocol
from spades.bot import Bot, MatchOutcome, play_match
from spades.bot.runner import Backoff
from spades.client import SpadesClient, SpadesError
from spades.client.errors import is_transient
from spades.v1 import account_pb2

#: How long a follower waits between reconnects of the account stream.
RECONNECT_DELAY = 0.3


@dataclass
class AccountPlayer:
    """Follows one account's stream and plays every seat it is assigned with a new bot."""

    address: str
    key: str
    make_bot: Callable[[], Bot]
    outcomes: list[MatchOutcome] = field(default_factory=list)
    tables: set[str] = field(default_factory=set)
    finished: list[account_pb2.TournamentFinished] = field(default_factory=list)
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    async def run(self) -> None:
        after = 0
        async with SpadesClient(self.address, account_key=self.key) as client:
            while True:
                try:
                    async for event in client.connect(after):
                        after = event.sequence
                        self._on_event(client, event)
                except SpadesError as error:
                    if not is_transient(error):
                        raise
                await asyncio.sleep(RECONNECT_DELAY)

    def _on_event(self, client: SpadesClient, event: account_pb2.AccountEvent) -> None:
        kind = event.WhichOneof("kind")
        if kind == "tournament_finished":
            self.finished.append(event.tournament_finished)
        if kind != "table_assigned" or event.table_assigned.table_id in self.tables:
            return
        assigned = event.table_assigned
        self.tables.add(assigned.table_id)
        for seat in assigned.seats:
            index = protocol.seat_from_proto(seat)
            task = asyncio.create_task(self._play(client, assigned.table_id, index))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _play(self, client: SpadesClient, table_id: str, seat: int) -> None:
        outcome = await play_match(
            client,
            self.make_bot(),
            "",
            table_id=table_id,
            account_seat=seat,
            backoff=Backoff(initial=0.2, maximum=1.0, give_up_after=60.0),
        )
        self.outcomes.append(outcome)

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        with contextlib.suppress(Exception):
            await asyncio.gather(*self._tasks, return_exceptions=True)
