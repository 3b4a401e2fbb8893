"""The async client: every lobby and play call of the Spades table service.

>>> async def main() -> None:  # doctest: +SKIP
...     async with SpadesClient("127.0.0.1:50051") as client:
...         table = await client.create_table("friday night", Rules(target_score=300))
...         seat = await client.join_table(table.table_id, "me", seat="north")
...         connection = await client.play(seat.token)
...         async for message in connection:
...             print(message)
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final, Self, TypeVar, cast

import grpc

from spades import protocol
from spades.client.accounts import AccountCalls
from spades.client.analyses import AnalysisCalls
from spades.client.challenges import ChallengeCalls
from spades.client.connection import SeatConnection, new_request_id, open_seat_connection
from spades.client.errors import from_rpc_error
from spades.client.messages import WatchMessage, watch_messages
from spades.client.presence import PresenceCalls
from spades.client.tournaments import TournamentCalls
from spades.engine import SEAT_NAMES, Rules, SeatView
from spades.v1 import cards_pb2, lobby_pb2, lobby_pb2_grpc, play_pb2, play_pb2_grpc, record_pb2
from spades.wire import (
    HOUSE_BOT_KINDS,
    SEAT_METADATA,
    SEAT_TOKEN_METADATA,
    TABLE_ID_METADATA,
    TABLE_STATUS_NAMES,
    TABLE_STATUS_VALUES,
)

#: Keep idle connections alive and notice dead ones; reconnect quickly after a drop.
DEFAULT_CHANNEL_OPTIONS: Final[tuple[tuple[str, int], ...]] = (
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 0),
    ("grpc.http2.max_pings_without_data", 0),
    ("grpc.initial_reconnect_backoff_ms", 250),
    ("grpc.min_reconnect_backoff_ms", 250),
    ("grpc.max_reconnect_backoff_ms", 5_000),
)


T = TypeVar("T")

#: Seconds between the tries of a call that carries a request id (CreateTable, JoinTable,
#: QuickMatch, AddHouseBot) when the server could not be reached or did not answer in time:
#: the same request id goes each time, so a call the server did commit is answered, not redone.
RETRY_DELAYS: Final[tuple[float, ...]] = (0.25, 0.5, 1.0, 2.0, 4.0)
#: How long :meth:`Channel.connection_problem` waits for an address that neither accepts nor
#: refuses a connection.
CONNECT_PROBE_SECONDS: Final = 5.0
_RETRIED_CODES: Final = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED})


@dataclass(frozen=True, slots=True)
class SeatInfo:
    """One seat as the lobby shows it."""

    seat: int
    player_name: str | None
    bot: bool

    @property
    def occupied(self) -> bool:
        return self.player_name is not None


@dataclass(frozen=True, slots=True)
class TableInfo:
    """A table as the lobby shows it (``message`` is the ``spades.v1.Table`` itself)."""

    table_id: str
    name: str
    rules: Rules
    badges: tuple[str, ...]
    private: bool
    quick_match: bool
    #: "waiting", "playing" or "finished".
    status: str
    seats: tuple[SeatInfo, ...]
    scores: tuple[int, ...]
    hand_number: int
    sequence: int
    message: lobby_pb2.Table
    #: Only accounts sit there, and the result changes their ratings.
    rated: bool = False

    @staticmethod
    def from_proto(message: lobby_pb2.Table) -> TableInfo:
        return TableInfo(
            table_id=message.table_id,
            name=message.name,
            rules=protocol.rules_from_proto(message.rules),
            badges=tuple(message.badges),
            private=message.private,
            quick_match=message.quick_match,
            rated=message.rated,
            status=TABLE_STATUS_NAMES.get(message.status, "unknown"),
            seats=tuple(
                SeatInfo(
                    protocol.seat_from_proto(seat.seat),
                    seat.player_name if seat.occupied else None,
                    seat.bot,
                )
                for seat in message.seats
            ),
            scores=tuple(message.scores),
            hand_number=message.hand_number,
            sequence=message.sequence,
            message=message,
        )


@dataclass(frozen=True, slots=True)
class CreatedTable:
    """A new table, and the join code of a private one (shown only once)."""

    table: TableInfo
    join_code: str

    @property
    def table_id(self) -> str:
        return self.table.table_id


@dataclass(frozen=True, slots=True)
class SeatTicket:
    """A seat taken: the token (send it to play; shown only once) for ``seat`` at ``table_id``;
    from a queue, what its table waits for."""

    table_id: str
    seat: int
    token: str
    wait: QueueWait | None = None

    @staticmethod
    def from_proto(
        message: lobby_pb2.JoinTableResponse, wait: lobby_pb2.QueueWait | None = None
    ) -> SeatTicket:
        return SeatTicket(
            message.table_id,
            protocol.seat_from_proto(message.seat),
            message.seat_token,
            QueueWait.from_proto(wait) if wait is not None else None,
        )


@dataclass(frozen=True, slots=True)
class QueueWait:
    """What a queue's table waits for before its match starts: ``str()`` says it as a person
    reads it.

    >>> str(QueueWait(3, 30.0))
    'waiting for 3 players; house bots fill in 30 s'
    >>> str(QueueWait(1, None))
    'waiting for 1 player'
    >>> str(QueueWait(0, None))
    'the table is full: the match starts'
    """

    #: The seats still free.
    players_needed: int
    #: Seconds until the server fills them with house bots; None if it will not.
    house_bots_in: float | None

    @staticmethod
    def from_proto(message: lobby_pb2.QueueWait) -> QueueWait:
        house = message.house_bots_in.ToTimedelta().total_seconds()
        return QueueWait(
            message.players_needed, house if message.HasField("house_bots_in") else None
        )

    def __str__(self) -> str:
        if not self.players_needed:
            return "the table is full: the match starts"
        players = "player" if self.players_needed == 1 else "players"
        text = f"waiting for {self.players_needed} {players}"
        if self.house_bots_in is not None:
            text += f"; house bots fill in {self.house_bots_in:.0f} s"
        return text


@dataclass(frozen=True, slots=True)
class HouseBotSeated:
    """A house bot the server seated: where it sits and the name it shows."""

    table_id: str
    seat: int
    player_name: str


@dataclass(frozen=True, slots=True)
class TableView:
    """A viewer's view of a table at ``sequence`` (the sequence to act on or resume from)."""

    sequence: int
    view: SeatView


@dataclass(frozen=True, slots=True)
class TablePage:
    tables: tuple[TableInfo, ...]
    #: Pass to :meth:`SpadesClient.list_tables` for the next page; "" on the last page.
    next_page_token: str


def parse_seat(seat: int | str | None) -> int | None:
    """A seat from 0..3 or a name ("north", "N"); None for any seat."""
    if seat is None or isinstance(seat, int):
        return seat
    cleaned = seat.strip().lower()
    for number, name in enumerate(SEAT_NAMES):
        if cleaned in (name.lower(), name[0].lower()):
            return number
    raise ValueError(f"{seat!r} is not a seat; write north, east, south or west")


class Channel:
    r"""One channel to a server and what every client on it shares: an async context manager,
    the timeout of unary calls, and refusals raised as typed :class:`SpadesError`\ s.

    ``credentials`` (``grpc.ssl_channel_credentials(...)``) connects over TLS, to a server
    started with ``--tls-cert``/``--tls-key``; None connects in plaintext. ``sleep`` waits
    between the retries of a call the server did not answer (:data:`RETRY_DELAYS`): a test
    passes a clock's, to move time on instead of waiting.
    """

    def __init__(
        self,
        address: str,
        *,
        credentials: grpc.ChannelCredentials | None = None,
        channel_options: Sequence[tuple[str, Any]] = DEFAULT_CHANNEL_OPTIONS,
        timeout: float | None = 10.0,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.address = address
        self.timeout = timeout
        self.sleep = sleep
        options = list(channel_options)
        self._channel = (
            grpc.aio.insecure_channel(address, options=options)
            if credentials is None
            else grpc.aio.secure_channel(address, credentials, options=options)
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        await self._channel.close(None)

    async def connection_problem(self, within: float = CONNECT_PROBE_SECONDS) -> str | None:
        """Why no connection to the server can be made now, or None once one is made: the
        channel's own connection attempt, without the retries of a call (which would wait
        several seconds in silence before saying anything). Nothing listening at the address
        is known at once; an address that never answers, after ``within`` seconds."""
        state = self._channel.get_state(try_to_connect=True)
        try:
            async with asyncio.timeout(within):
                while state is not grpc.ChannelConnectivity.READY:
                    if state is grpc.ChannelConnectivity.TRANSIENT_FAILURE:
                        return f"nothing answers at {self.address} (the connection failed)"
                    await self._channel.wait_for_state_change(state)
                    state = self._channel.get_state(try_to_connect=True)
        except TimeoutError:
            return f"no answer from {self.address} within {within:g} s"
        return None

    async def _call(self, call: Awaitable[T]) -> T:
        try:
            return await call
        except grpc.RpcError as error:
            raise from_rpc_error(error) from error

    async def _call_with_retries(self, call: Callable[[], Awaitable[T]]) -> T:
        """Make ``call`` (a request with its request id), again after each of
        :data:`RETRY_DELAYS` while the server is unreachable or slow to answer."""
        for delay in (*RETRY_DELAYS, None):
            try:
                return await call()
            except grpc.RpcError as error:
                code = error.code() if hasattr(error, "code") else None
                if delay is None or code not in _RETRIED_CODES:
                    raise from_rpc_error(error) from error
            await self.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover


class SpadesClient(
    Channel, AccountCalls, ChallengeCalls, TournamentCalls, AnalysisCalls, PresenceCalls
):
    """An async client for one server. Use it as an async context manager (or call close()).

    Every refused call raises a typed :class:`~spades.client.SpadesError` subclass carrying the
    status code and the server's reason. With ``account_key`` its joins and quick matches seat
    the account (see :mod:`spades.client.accounts`). Over TLS, pass
    ``credentials``:

    >>> import grpc
    >>> async def over_tls(address: str, ca_pem: bytes) -> int:  # doctest: +SKIP
    ...     credentials = grpc.ssl_channel_credentials(root_certificates=ca_pem)
    ...     async with SpadesClient(address, credentials=credentials) as client:
    ...         return len((await client.list_tables()).tables)
    """

    def __init__(
        self,
        address: str,
        *,
        credentials: grpc.ChannelCredentials | None = None,
        channel_options: Sequence[tuple[str, Any]] = DEFAULT_CHANNEL_OPTIONS,
        timeout: float | None = 10.0,
        account_key: str = "",
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        super().__init__(
            address,
            credentials=credentials,
            channel_options=channel_options,
            timeout=timeout,
            sleep=sleep,
        )
        self.account_key = account_key
        self.lobby: lobby_pb2_grpc.LobbyServiceAsyncStub = lobby_pb2_grpc.LobbyServiceStub(
            self._channel
        )
        self.play_service: play_pb2_grpc.PlayServiceAsyncStub = play_pb2_grpc.PlayServiceStub(
            self._channel
        )

    # ------------------------------------------------------------------ lobby

    async def create_table(
        self,
        name: str = "Spades",
        rules: Rules | None = None,
        *,
        private: bool = False,
        request_id: str | None = None,
        rated: bool = False,
    ) -> CreatedTable:
        """Open a table with ``rules`` (the default game if None); a ``rated`` one seats only
        accounts.

        The call carries ``request_id`` (a fresh one if None) and is tried again with it while
        the server is unreachable: a retry gets the same table, never a second one."""
        request = lobby_pb2.CreateTableRequest(
            name=name,
            rules=protocol.rules_to_proto(rules or Rules()),
            private=private,
            request_id=request_id or new_request_id(),
            rated=rated,
        )
        response = await self._call_with_retries(
            lambda: self.lobby.CreateTable(request, timeout=self.timeout)
        )
        return CreatedTable(TableInfo.from_proto(response.table), response.join_code)

    async def list_tables(
        self, status: str | None = None, *, page_size: int = 0, page_token: str = ""
    ) -> TablePage:
        """Public tables, newest first; ``status`` is "waiting", "playing" or "finished"."""
        request = lobby_pb2.ListTablesRequest(
            status=TABLE_STATUS_VALUES[status] if status else lobby_pb2.TABLE_STATUS_UNSPECIFIED,
            page_size=page_size,
            page_token=page_token,
        )
        response = await self._call(self.lobby.ListTables(request, timeout=self.timeout))
        return TablePage(
            tuple(TableInfo.from_proto(table) for table in response.tables),
            response.next_page_token,
        )

    async def get_table(self, table_id: str) -> TableInfo:
        request = lobby_pb2.GetTableRequest(table_id=table_id)
        response = await self._call(self.lobby.GetTable(request, timeout=self.timeout))
        return TableInfo.from_proto(response.table)

    async def join_table(
        self,
        table_id: str,
        name: str,
        *,
        seat: int | str | None = None,
        bot: bool = True,
        join_code: str = "",
        request_id: str | None = None,
    ) -> SeatTicket:
        """Take ``seat`` (0..3 or "north".."west"; any free seat if None).

        The call carries ``request_id`` (a fresh one if None) and is tried again with it while
        the server is unreachable: a retry gets the same seat and a working token."""
        number = parse_seat(seat)
        request = lobby_pb2.JoinTableRequest(
            table_id=table_id,
            seat=(
                protocol.seat_to_proto(number) if number is not None else cards_pb2.SEAT_UNSPECIFIED
            ),
            player_name=name,
            bot=bot,
            join_code=join_code,
            request_id=request_id or new_request_id(),
        )
        response = await self._call_with_retries(
            lambda: self.lobby.JoinTable(request, metadata=self._bearer(), timeout=self.timeout)
        )
        return SeatTicket.from_proto(response)

    async def leave_table(self, seat_token: str) -> SeatTicket:
        """Give up a seat before the match starts (the returned ticket's token is empty)."""
        response = await self._call(
            self.lobby.LeaveTable(
                lobby_pb2.LeaveTableRequest(),
                metadata=((SEAT_TOKEN_METADATA, seat_token),),
                timeout=self.timeout,
            )
        )
        return SeatTicket(response.table_id, protocol.seat_from_proto(response.seat), "")

    async def quick_match(
        self, name: str, *, bot: bool = True, rated: bool = False, request_id: str | None = None
    ) -> SeatTicket:
        """Join the quick-match queue: seated at once, the match starts when the table fills
        (``rated``: the rated queue, for a client with an account key). Retried like
        :meth:`join_table`, with ``request_id`` (a fresh one if None)."""
        request = lobby_pb2.QuickMatchRequest(
            player_name=name, bot=bot, rated=rated, request_id=request_id or new_request_id()
        )
        response = await self._call_with_retries(
            lambda: self.lobby.QuickMatch(request, metadata=self._bearer(), timeout=self.timeout)
        )
        return SeatTicket.from_proto(
            response.seat, response.wait if response.HasField("wait") else None
        )

    async def add_house_bot(
        self,
        table_id: str,
        *,
        seat: int | str | None = None,
        kind: str = "heuristic",
        join_code: str = "",
        request_id: str | None = None,
    ) -> HouseBotSeated:
        """Fill ``seat`` (any free seat if None) with a house bot of ``kind`` ("random" or
        "heuristic"), which the server runs; a private table needs its ``join_code``. Retried
        like :meth:`join_table`, with ``request_id`` (a fresh one if None)."""
        if kind not in HOUSE_BOT_KINDS:
            raise ValueError(f"{kind!r} is not a house bot; choose {' or '.join(HOUSE_BOT_KINDS)}")
        number = parse_seat(seat)
        request = lobby_pb2.AddHouseBotRequest(
            table_id=table_id,
            seat=(
                protocol.seat_to_proto(number) if number is not None else cards_pb2.SEAT_UNSPECIFIED
            ),
            kind=HOUSE_BOT_KINDS[kind],
            join_code=join_code,
            request_id=request_id or new_request_id(),
        )
        response = await self._call_with_retries(
            lambda: self.lobby.AddHouseBot(request, timeout=self.timeout)
        )
        return HouseBotSeated(
            response.table_id, protocol.seat_from_proto(response.seat), response.player_name
        )

    # ------------------------------------------------------------------ play

    async def play(
        self,
        seat_token: str,
        after_sequence: int = 0,
        *,
        latest: bool = False,
        batched: bool = True,
    ) -> SeatConnection:
        """Open the seat's Play stream; its ``snapshot`` is the view at ``after_sequence``
        (0: before the first event, so every event of the table follows) or, with ``latest``,
        at the table's latest sequence, and every later event follows. The stream ends once
        the match is over. ``batched`` (the default) has the server send what one change of the
        table brings in one message, which the connection hands out one by one (the same
        messages either way; batches cost the server less)."""
        return await open_seat_connection(
            self.play_service,
            seat_token,
            after_sequence=after_sequence,
            latest=latest,
            batched=batched,
        )

    async def play_account_seat(
        self,
        table_id: str,
        seat: int,
        after_sequence: int = 0,
        *,
        latest: bool = False,
        batched: bool = True,
    ) -> SeatConnection:
        """Open the Play stream of a seat the client's account holds at ``table_id`` (its key
        instead of a seat token); otherwise as :meth:`play`."""
        metadata = (
            *self._bearer(),
            (TABLE_ID_METADATA, table_id),
            (SEAT_METADATA, SEAT_NAMES[seat].lower()),
        )
        return await open_seat_connection(
            self.play_service,
            "",
            metadata,
            after_sequence=after_sequence,
            latest=latest,
            batched=batched,
        )

    async def watch(
        self,
        table_id: str,
        after_sequence: int = 0,
        *,
        latest: bool = False,
        batched: bool = True,
    ) -> AsyncIterator[WatchMessage]:
        """A spectator's stream: a :class:`Snapshot` (at ``after_sequence``, 0 for before the
        first event, or the latest with ``latest``), then every public :class:`StreamEvent`
        after it; it ends once the match is over and its last event was sent. ``batched`` as
        for :meth:`play`: the same messages either way."""
        call = self.play_service.Watch(
            play_pb2.WatchRequest(
                table_id=table_id, after_sequence=after_sequence, latest=latest, batched=batched
            )
        )
        try:
            async for message in cast(AsyncIterator[play_pb2.WatchResponse], call):
                for part in watch_messages(message):
                    yield part
        except grpc.RpcError as error:
            raise from_rpc_error(error) from error
        finally:
            call.cancel()

    async def get_view(self, table_id: str, seat_token: str | None = None) -> TableView:
        """The table's view now: the seat's with its ``seat_token`` (its cards and legal
        actions), else the public one, read into the engine's :class:`~spades.engine.SeatView`."""
        metadata = ((SEAT_TOKEN_METADATA, seat_token),) if seat_token is not None else None
        response = await self._call(
            self.play_service.GetView(
                play_pb2.GetViewRequest(table_id=table_id), metadata=metadata, timeout=self.timeout
            )
        )
        snapshot = response.snapshot
        return TableView(snapshot.sequence, protocol.view_from_proto(snapshot.view))

    async def get_record(self, table_id: str) -> record_pb2.GameRecord:
        """The table's record: the public part until the match ends, then all of it."""
        request = play_pb2.GetRecordRequest(table_id=table_id)
        response = await self._call(self.play_service.GetRecord(request, timeout=self.timeout))
        return response.record
