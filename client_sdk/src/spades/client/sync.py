"""A synchronous face on :class:`SpadesClient`: its event loop runs in a background thread
(like python-chess's ``SimpleEngine``), so scripts and notebooks need no asyncio.

>>> with SyncSpadesClient("127.0.0.1:50051") as client:  # doctest: +SKIP
...     table = client.create_table("practice")
...     seat = client.join_table(table.table_id, "me")
...     for message in client.watch(table.table_id):  # blocks for each message
...         print(message)

Streams are plain iterators: :meth:`SyncSpadesClient.watch` yields a spectator's messages and
:meth:`SyncSpadesClient.play` opens a seat's stream (:class:`SyncSeatConnection`) to iterate
and send on.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import grpc

from spades.client.accounts import (
    AccountInfo,
    AccountKey,
    LeaderboardPage,
    RatingInfo,
    SessionInfo,
    SignedIn,
)
from spades.client.analyses import AnalysisProgress
from spades.client.challenges import ChallengeInfo, ChallengePage
from spades.client.client import (
    CreatedTable,
    HouseBotSeated,
    SeatTicket,
    SpadesClient,
    TableInfo,
    TablePage,
    TableView,
)
from spades.client.connection import SeatConnection
from spades.client.messages import PlayMessage, Snapshot, WatchMessage
from spades.client.presence import OnlineBotsPage
from spades.engine import Action, Rules
from spades.v1 import account_pb2, analysis_pb2, record_pb2, tournament_pb2

if TYPE_CHECKING:
    from spades.bot import Backoff, Bot, MatchOutcome

T = TypeVar("T")


class SyncSpadesClient:
    """Every call of :class:`SpadesClient`, blocking (streams as iterators), plus
    :meth:`run_bot`; ``credentials`` for TLS as there."""

    def __init__(
        self,
        address: str,
        *,
        credentials: grpc.ChannelCredentials | None = None,
        timeout: float | None = 10.0,
        account_key: str = "",
    ) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="spades-client", daemon=True
        )
        self._thread.start()
        self._client: SpadesClient = self._run(
            self._make(address, credentials, timeout, account_key)
        )

    @staticmethod
    async def _make(
        address: str,
        credentials: grpc.ChannelCredentials | None,
        timeout: float | None,
        account_key: str,
    ) -> SpadesClient:
        # The gRPC channel must be made on the loop that will use it.
        return SpadesClient(
            address, credentials=credentials, timeout=timeout, account_key=account_key
        )

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        if self._loop.is_closed():
            coroutine.close()
            raise RuntimeError("this client is closed")
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def __enter__(self) -> SyncSpadesClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the channel and stop the background loop (safe to call twice)."""
        if self._loop.is_closed():
            return
        self._run(self._client.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def create_table(
        self,
        name: str = "Spades",
        rules: Rules | None = None,
        *,
        private: bool = False,
        rated: bool = False,
        request_id: str | None = None,
    ) -> CreatedTable:
        return self._run(
            self._client.create_table(
                name, rules, private=private, rated=rated, request_id=request_id
            )
        )

    def list_tables(
        self, status: str | None = None, *, page_size: int = 0, page_token: str = ""
    ) -> TablePage:
        return self._run(
            self._client.list_tables(status, page_size=page_size, page_token=page_token)
        )

    def get_table(self, table_id: str) -> TableInfo:
        return self._run(self._client.get_table(table_id))

    def join_table(
        self,
        table_id: str,
        name: str,
        *,
        seat: int | str | None = None,
        bot: bool = True,
        join_code: str = "",
        request_id: str | None = None,
    ) -> SeatTicket:
        return self._run(
            self._client.join_table(
                table_id, name, seat=seat, bot=bot, join_code=join_code, request_id=request_id
            )
        )

    def leave_table(self, seat_token: str) -> SeatTicket:
        return self._run(self._client.leave_table(seat_token))

    def quick_match(
        self, name: str, *, bot: bool = True, rated: bool = False, request_id: str | None = None
    ) -> SeatTicket:
        return self._run(
            self._client.quick_match(name, bot=bot, rated=rated, request_id=request_id)
        )

    # Accounts and ratings (see spades.client.accounts).

    def create_account(
        self,
        name: str,
        *,
        kind: str = "bot",
        operator_token: str = "",
        request_id: str | None = None,
    ) -> AccountKey:
        return self._run(
            self._client.create_account(
                name, kind=kind, operator_token=operator_token, request_id=request_id
            )
        )

    def get_account(self, account_id: str = "", *, name: str = "") -> AccountInfo:
        return self._run(self._client.get_account(account_id, name=name))

    def rotate_key(self, *, request_id: str | None = None, account_id: str = "") -> AccountKey:
        return self._run(self._client.rotate_key(request_id=request_id, account_id=account_id))

    def revoke_key(self, *, account_id: str = "") -> AccountInfo:
        return self._run(self._client.revoke_key(account_id=account_id))

    def set_manifest(
        self, manifest: account_pb2.RuleManifest, *, account_id: str = ""
    ) -> AccountInfo:
        return self._run(self._client.set_manifest(manifest, account_id=account_id))

    def sign_up(self, name: str, password: str, *, operator_token: str = "") -> SignedIn:
        return self._run(self._client.sign_up(name, password, operator_token=operator_token))

    def sign_in(self, name: str, password: str) -> SignedIn:
        return self._run(self._client.sign_in(name, password))

    def sessions(self) -> tuple[SessionInfo, ...]:
        return self._run(self._client.sessions())

    def revoke_session(self, session_id: str = "") -> str:
        return self._run(self._client.revoke_session(session_id))

    def create_bot(self, name: str, *, request_id: str | None = None) -> AccountKey:
        return self._run(self._client.create_bot(name, request_id=request_id))

    def bots(self) -> tuple[AccountInfo, ...]:
        return self._run(self._client.bots())

    def create_challenge(
        self,
        opponent_ids: Sequence[str],
        rules: Rules | None = None,
        *,
        rated: bool = False,
        seating: Mapping[int, str] | Mapping[str, str] | None = None,
        expiry_seconds: int = 0,
        request_id: str | None = None,
        series_length: int = 0,
    ) -> ChallengeInfo:
        return self._run(
            self._client.create_challenge(
                opponent_ids,
                rules,
                rated=rated,
                seating=seating,
                expiry_seconds=expiry_seconds,
                request_id=request_id,
                series_length=series_length,
            )
        )

    def accept_challenge(self, challenge_id: str) -> ChallengeInfo:
        return self._run(self._client.accept_challenge(challenge_id))

    def decline_challenge(self, challenge_id: str, reason: str = "") -> ChallengeInfo:
        return self._run(self._client.decline_challenge(challenge_id, reason))

    def cancel_challenge(self, challenge_id: str) -> ChallengeInfo:
        return self._run(self._client.cancel_challenge(challenge_id))

    def get_challenge(self, challenge_id: str) -> ChallengeInfo:
        return self._run(self._client.get_challenge(challenge_id))

    def list_challenges(
        self,
        direction: str = "",
        *,
        pending_only: bool = False,
        page_size: int = 0,
        page_token: str = "",
    ) -> ChallengePage:
        return self._run(
            self._client.list_challenges(
                direction, pending_only=pending_only, page_size=page_size, page_token=page_token
            )
        )

    def ratings(self, account_id: str) -> tuple[RatingInfo, ...]:
        return self._run(self._client.ratings(account_id))

    def online_bots(self, *, page_size: int = 0, page_token: str = "") -> OnlineBotsPage:
        return self._run(self._client.online_bots(page_size=page_size, page_token=page_token))

    def leaderboard(
        self, pool: str = "partnership", *, page_size: int = 0, page_token: str = "", kind: str = ""
    ) -> LeaderboardPage:
        return self._run(
            self._client.leaderboard(pool, page_size=page_size, page_token=page_token, kind=kind)
        )

    # Tournaments (see spades.client.tournaments).

    def create_tournament(
        self,
        name: str,
        *,
        rules: Rules | None = None,
        boards: int = 2,
        start_when_entrants: int = 4,
        rated: bool = False,
        swiss_rounds: int = 0,
        operator_token: str = "",
        request_id: str | None = None,
    ) -> tournament_pb2.Tournament:
        return self._run(
            self._client.create_tournament(
                name,
                rules=rules,
                boards=boards,
                start_when_entrants=start_when_entrants,
                rated=rated,
                swiss_rounds=swiss_rounds,
                operator_token=operator_token,
                request_id=request_id,
            )
        )

    def enter_tournament(self, tournament_id: str) -> tournament_pb2.Tournament:
        return self._run(self._client.enter_tournament(tournament_id))

    def withdraw_tournament(self, tournament_id: str) -> tournament_pb2.Tournament:
        return self._run(self._client.withdraw_tournament(tournament_id))

    def get_tournament(self, tournament_id: str) -> tournament_pb2.Tournament:
        return self._run(self._client.get_tournament(tournament_id))

    def list_tournaments(
        self, *, page_size: int = 0, page_token: str = ""
    ) -> tuple[list[tournament_pb2.Tournament], str]:
        return self._run(self._client.list_tournaments(page_size=page_size, page_token=page_token))

    def watch_tournament(
        self, tournament_id: str, after_sequence: int = 0
    ) -> Iterator[tournament_pb2.WatchTournamentResponse]:
        return self._iterate(self._client.watch_tournament(tournament_id, after_sequence))

    def tournament_record(self, tournament_id: str) -> tournament_pb2.TournamentRecord:
        return self._run(self._client.tournament_record(tournament_id))

    def analyse_table(
        self,
        table_id: str,
        *,
        worlds: int | None = None,
        progress: AnalysisProgress | None = None,
    ) -> analysis_pb2.Analysis:
        return self._run(self._client.analyse_table(table_id, worlds=worlds, progress=progress))

    def get_analysis(self, table_id: str) -> analysis_pb2.Analysis:
        return self._run(self._client.get_analysis(table_id))

    def add_house_bot(
        self,
        table_id: str,
        *,
        seat: int | str | None = None,
        kind: str = "heuristic",
        join_code: str = "",
    ) -> HouseBotSeated:
        return self._run(
            self._client.add_house_bot(table_id, seat=seat, kind=kind, join_code=join_code)
        )

    def get_record(self, table_id: str) -> record_pb2.GameRecord:
        return self._run(self._client.get_record(table_id))

    def get_view(self, table_id: str, seat_token: str | None = None) -> TableView:
        return self._run(self._client.get_view(table_id, seat_token))

    def watch(
        self,
        table_id: str,
        after_sequence: int = 0,
        *,
        latest: bool = False,
        batched: bool = True,
    ) -> Iterator[WatchMessage]:
        """A spectator's stream as an iterator: a :class:`Snapshot`, then every public event
        (where it starts, and ``batched``: as :meth:`SpadesClient.watch`). Each step blocks
        until the next message; it stops when the match's stream ends, and closing the iterator
        (or leaving a ``for`` loop early) cancels the stream."""
        return self._iterate(
            self._client.watch(table_id, after_sequence, latest=latest, batched=batched)
        )

    def play(
        self,
        seat_token: str,
        after_sequence: int = 0,
        *,
        latest: bool = False,
        batched: bool = True,
    ) -> SyncSeatConnection:
        """Open the seat's Play stream (as :meth:`SpadesClient.play`, ``batched`` too),
        blocking."""
        connection = self._run(
            self._client.play(seat_token, after_sequence, latest=latest, batched=batched)
        )
        return SyncSeatConnection(self, connection)

    def _iterate(self, stream: AsyncIterator[T]) -> Iterator[T]:
        try:
            while True:
                try:
                    yield self._run(_next(stream))
                except StopAsyncIteration:
                    return
        finally:
            close = getattr(stream, "aclose", None)
            if close is not None and not self._loop.is_closed():
                self._run(close())

    def run_bot(
        self, bot: Bot, seat_token: str, *, table_id: str = "", backoff: Backoff | None = None
    ) -> MatchOutcome:
        """Play the seat with ``bot`` until its match ends (blocks; see spades.bot.play_match)."""
        from spades.bot.runner import play_match  # the bot package builds on this one

        return self._run(
            play_match(self._client, bot, seat_token, table_id=table_id, backoff=backoff)
        )


async def _next(stream: AsyncIterator[T]) -> T:
    return await anext(stream)


class SyncSeatConnection:
    """A seat's open Play stream, blocking: iterate it for :class:`Snapshot`, ``StreamEvent``,
    ``Prompt`` and ``ActionResult`` values, :meth:`send` actions, :meth:`close` when done (or
    use it as a context manager). Made by :meth:`SyncSpadesClient.play`."""

    def __init__(self, owner: SyncSpadesClient, connection: SeatConnection) -> None:
        self._owner = owner
        self._connection = connection

    @property
    def snapshot(self) -> Snapshot | None:
        """The view the stream opened with."""
        return self._connection.snapshot

    def receive(self) -> PlayMessage | None:
        """The next message (blocks), or None when the server ended the stream."""
        return self._owner._run(self._connection.receive())

    def __iter__(self) -> Iterator[PlayMessage]:
        while (message := self.receive()) is not None:
            yield message

    def send(
        self, action: Action, sequence: int, action_id: str | None = None, *, note: str = ""
    ) -> str:
        """Send ``action`` answering ``sequence``, with a sealed ``note`` if any; returns its
        action id (reuse it to resend)."""
        return self._owner._run(self._connection.send(action, sequence, action_id, note=note))

    def close(self) -> None:
        self._owner._run(self._connection.close())

    def __enter__(self) -> SyncSeatConnection:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
