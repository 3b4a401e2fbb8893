"""The tournaments' streams: load a tournament (cached, caught up from the log), decide and append.

Each tournament is one stream, ``tournament-<id>``, of ``spades.server.v1.TournamentLogEntry``
rows, and the index stream lists them; the aggregate and its decisions are
:mod:`spades_server.domain.tournaments`."""

from __future__ import annotations

import asyncio
import hashlib
import secrets

from spades.reasons import Reason
from spades.v1 import tournament_pb2
from spades_server.domain import errors, tokens
from spades_server.domain.tournaments import (
    Decided,
    Tournament,
    decide_creation,
    tournament_not_found,
)
from spades_server.eventlog.base import EventLog, StoredEvent, VersionConflict
from spades_server.store import stream_kinds as streams
from spades_server.store.codecs import (
    decode_tournament,
    decode_tournament_row,
    encode_tournament,
    encode_tournament_listed,
)
from spades_server.store.repository import AggregateKind, AggregateStore, Contended, as_stored

STREAM_PREFIX = streams.TOURNAMENT_PREFIX


INDEX_STREAM = STREAM_PREFIX + "index"


def stream_of(tournament_id: str) -> str:
    return STREAM_PREFIX + tournament_id


# ---------------------------------------------------------------------------------- store


def _check_id(tournament_id: str) -> None:
    if not tournament_id or len(tournament_id) > 64 or not tournament_id.isalnum():
        raise tournament_not_found(tournament_id)


def _fold(tournament: Tournament, row: StoredEvent) -> None:
    tournament.fold(decode_tournament(row))


TOURNAMENTS: AggregateKind[Tournament, Decided, StoredEvent] = AggregateKind(
    prefix=STREAM_PREFIX,
    new=Tournament,
    decode=as_stored,
    fold=_fold,
    rows=lambda decided: [
        encode_tournament(event, seed, digest) for event, seed, digest in decided
    ],
    not_found=tournament_not_found,
    contended=Contended(
        Reason.TOURNAMENT_CONTENDED, "the tournament kept changing under this request"
    ),
    check_id=_check_id,
)


class TournamentStore(AggregateStore[Tournament, Decided]):
    """The tournaments (:class:`~spades_server.store.repository.AggregateStore`), and the index
    stream that lists them."""

    def __init__(self, log: EventLog) -> None:
        super().__init__(log, TOURNAMENTS)
        self._index: list[str] = []
        self._index_version = 0
        self._index_lock = asyncio.Lock()

    async def index(self) -> list[str]:
        """Every tournament's id, oldest first."""
        async with self._index_lock:  # two readers at once would list a row twice
            for row in await self.log.read(INDEX_STREAM, after_version=self._index_version):
                if row.version == self._index_version + 1:
                    self._index.append(decode_tournament_row(row.data).listed_tournament_id)
                    self._index_version = row.version
            return list(self._index)

    async def _list(self, tournament_id: str) -> None:
        for _ in range(self.decide_attempts):
            listed = await self.index()
            if tournament_id in listed:
                return
            try:
                row = encode_tournament_listed(tournament_id)
                await self.log.append(INDEX_STREAM, self._index_version, [row])
            except VersionConflict:
                continue
            return
        raise errors.refuse(Reason.TOURNAMENT_CONTENDED, "the index kept changing; try again")

    async def create(
        self,
        settings: tournament_pb2.TournamentSettings,
        organiser: str,
        request_id: str,
    ) -> Tournament:
        request_digest = tokens.digest(request_id) if request_id else b""
        tournament_id = (
            hashlib.sha256(b"spades-tournament-id/" + request_id.encode()).hexdigest()[:20]
            if request_id
            else secrets.token_hex(10)
        )
        seed = secrets.token_bytes(32)
        try:
            await self.start(
                tournament_id, decide_creation(settings, organiser, seed, request_digest)
            )
        except VersionConflict:
            tournament = await self.load(tournament_id)
            if not request_digest or tournament.created_by_request != request_digest:
                raise errors.refuse(
                    Reason.REQUEST_ID_REUSED,
                    "this request_id was used for another call; send a fresh one",
                ) from None
        await self._list(tournament_id)  # a retry lists one a crash left unlisted
        return await self.load(tournament_id)
