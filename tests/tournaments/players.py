"""Bot accounts that play every table their account stream assigns them, for the tournament
tests: each account's stream (AccountService.Connect) is followed, and each TableAssigned seat
is played with the SDK's ``play_match`` over the account's key (``authorization: Bearer`` with
``spades-table-id`` and ``spades-seat``). The SDK's own AccountRunner replaces this once merged.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from spades import protocol
from spades.bot import Bot, MatchOutcome, play_match
from spades.bot.runner import Backoff
from spades.client import SeatConnection, SpadesClient, SpadesError
from spades.client.errors import is_transient
from spades.engine import seat_name
from spades.v1 import account_pb2, play_pb2_grpc
from spades.wire import AUTHORIZATION_METADATA, SEAT_METADATA, TABLE_ID_METADATA

#: How long a follower waits between reconnects of the account stream.
RECONNECT_DELAY = 0.3


class AccountSeatConnection(SeatConnection):
    """A Play stream opened with an account key for one seat the account holds."""

    def __init__(
        self, stub: play_pb2_grpc.PlayServiceAsyncStub, key: str, table_id: str, seat: str
    ) -> None:
        metadata = (
            (AUTHORIZATION_METADATA, f"Bearer {key}"),
            (TABLE_ID_METADATA, table_id),
            (SEAT_METADATA, seat),
        )
        self._call: Any = stub.Play(metadata=metadata)  # type: ignore[call-arg]
        self._dropped = False
        self.snapshot = None


class AccountClient(SpadesClient):
    """A client whose ``play(token)`` takes ``"<table id>/<seat name>"`` for an account seat."""

    async def play(
        self,
        seat_token: str,
        after_sequence: int = 0,
        *,
        latest: bool = False,
        batched: bool = True,
    ) -> SeatConnection:
        table_id, _, seat = seat_token.partition("/")
        connection = AccountSeatConnection(self.play_service, self.account_key, table_id, seat)
        try:
            await connection.start(after_sequence, latest=latest, batched=batched)
        except BaseException:
            await connection.close()
            raise
        return connection


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
        async with AccountClient(self.address, account_key=self.key) as client:
            while True:
                try:
                    async for event in client.connect(after):
                        after = event.sequence
                        self._on_event(client, event)
                except SpadesError as error:
                    if not is_transient(error):
                        raise
                await asyncio.sleep(RECONNECT_DELAY)

    def _on_event(self, client: AccountClient, event: account_pb2.AccountEvent) -> None:
        kind = event.WhichOneof("kind")
        if kind == "tournament_finished":
            self.finished.append(event.tournament_finished)
        if kind != "table_assigned" or event.table_assigned.table_id in self.tables:
            return
        assigned = event.table_assigned
        self.tables.add(assigned.table_id)
        for seat in assigned.seats:
            name = seat_name(protocol.seat_from_proto(seat)).lower()
            task = asyncio.create_task(self._play(client, assigned.table_id, name))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _play(self, client: AccountClient, table_id: str, seat: str) -> None:
        outcome = await play_match(
            client,
            self.make_bot(),
            f"{table_id}/{seat}",
            table_id=table_id,
            backoff=Backoff(initial=0.2, maximum=1.0, give_up_after=60.0),
        )
        self.outcomes.append(outcome)

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        with contextlib.suppress(Exception):
            await asyncio.gather(*self._tasks, return_exceptions=True)
