"""The challenges' streams: load a challenge (cached, caught up from the log), decide and append.

Each challenge is one stream, ``challenge-<challenge id>``, of
``spades.server.v1.ChallengeLogEntry`` rows; the aggregate and its decisions are
:mod:`spades_server.domain.challenges`."""

from __future__ import annotations

from typing import Final

from spades.reasons import Reason
from spades.v1 import (
    challenge_pb2,
)
from spades_server.domain import errors
from spades_server.domain.challenges import ChallengeState, challenge_not_found
from spades_server.eventlog.base import EventLog, StoredEvent, VersionConflict
from spades_server.store import stream_kinds as streams
from spades_server.store.codecs import decode_challenge, encode_challenge
from spades_server.store.repository import AggregateKind, AggregateStore, Contended, as_stored
from spades_server.v1 import log_pb2

STREAM_PREFIX: Final = streams.CHALLENGE_PREFIX


def stream_of(challenge_id: str) -> str:
    return STREAM_PREFIX + challenge_id


# ---------------------------------------------------------------------------------- store


def _check_id(challenge_id: str) -> None:
    if not challenge_id:
        raise errors.refuse(Reason.MISSING_FIELD, "challenge_id is required", field="challenge_id")
    if "\x00" in challenge_id:
        raise challenge_not_found(challenge_id)


def _fold(challenge: ChallengeState, row: StoredEvent) -> None:
    challenge.fold(row.version, decode_challenge(row))


CHALLENGES: AggregateKind[ChallengeState, log_pb2.ChallengeLogEntry, StoredEvent] = AggregateKind(
    prefix=STREAM_PREFIX,
    new=ChallengeState,
    decode=as_stored,
    fold=_fold,
    rows=lambda entry: [encode_challenge(entry)],
    not_found=challenge_not_found,
    contended=Contended(
        Reason.CHALLENGE_CONTENDED, "the challenge kept changing under this request; try again"
    ),
    check_id=_check_id,
)


class ChallengeStore(AggregateStore[ChallengeState, log_pb2.ChallengeLogEntry]):
    """The challenges (:class:`~spades_server.store.repository.AggregateStore`); a replica also
    remembers each new challenge it sees appended, so that its sweeper knows to expire it."""

    def __init__(self, log: EventLog) -> None:
        super().__init__(log, CHALLENGES)

    def observe(self, stored: StoredEvent) -> None:
        """Fold a row (this replica's or another's) into the cached challenge, or remember a
        new one (so the sweeper knows to expire it)."""
        if stored.version == 1 and stored.stream_id.startswith(STREAM_PREFIX):
            challenge_id = stored.stream_id.removeprefix(STREAM_PREFIX)
            if self.cached_one(challenge_id) is None:
                self._cache.keep(challenge_id, ChallengeState(challenge_id))
        super().observe(stored)

    async def create(self, challenge: challenge_pb2.Challenge, request_digest: bytes) -> bool:
        """Record a new challenge; False when its stream exists (VersionConflict: a retry)."""
        entry = log_pb2.ChallengeLogEntry(created=challenge, request_id_sha256=request_digest)
        try:
            await self.start(challenge.challenge_id, entry)
        except VersionConflict:
            return False
        return True
