"""Tables as event-sourced aggregates: everything the log says about one table, and what a decision
returns.

A :class:`Table` is folded from its entries (:mod:`spades_server.domain.table_events`): the
engine's match state plus what only the server keeps (seat holders, listing, who may act). A
:class:`Decided` is what a decision (:mod:`spades_server.domain.decisions`) wants appended.
No I/O here: the store (:mod:`spades_server.store.table_store`) loads, decides and appends."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from google.protobuf.timestamp_pb2 import Timestamp

from spades.engine import MatchState, Phase
from spades.engine import events as ev
from spades_server.domain.table_events import Draft, Entry, Listing, Secrets, drafts


@dataclass(eq=False)
class Table:
    """One table, as its log's entries say: the engine's match state plus what only the server
    keeps (seat-token digests, substitutes' token digests, the join code's digest, the action
    ids already answered) and the lobby's listing (name, privacy).

    A table is compared by identity: a store keeps one object per table, and what the layers
    above derive from it (the streams' serialised events, the clock's deadline) is cached
    against that object, not in it."""

    table_id: str
    version: int = 0
    state: MatchState = field(default_factory=MatchState)
    name: str = ""
    private: bool = False
    quick_match: bool = False
    rated: bool = False
    join_code_sha256: bytes = b""
    #: The key the salts of the seats' sealed notes come from (see :attr:`note_key`).
    created_note_key: bytes = b""
    created_at: float = 0.0
    seat_token_digests: dict[int, bytes] = field(default_factory=dict)
    #: The account holding each seat taken with an account key.
    seat_accounts: dict[int, str] = field(default_factory=dict)
    #: The token digest of each seat's substitute (a house bot), while it plays the seat.
    substitute_token_digests: dict[int, bytes] = field(default_factory=dict)
    #: (seat, action id) -> sequence of the first event the action caused.
    answered_actions: dict[tuple[int, str], int] = field(default_factory=dict)
    #: The request-id digest of the call that created the table (empty: none was given).
    created_by_request: bytes = b""
    #: Request-id digest of a join -> the seat it took (kept after a SeatLeft: that request's
    #: outcome stays "that seat", so its retry cannot take another one).
    joined_requests: dict[bytes, int] = field(default_factory=dict)
    #: Every stored event, in order (entry ``n`` has sequence ``n + 1``).
    entries: list[Entry] = field(default_factory=list)
    #: Counts the events that change who holds a seat or who plays it (taken, left,
    #: substituted, reclaimed): a seat's stream checks its credential again only when it moved.
    seat_changes: int = field(default=0, repr=False, compare=False)

    def fold(self, entry: Entry) -> None:
        """Add the table's next entry, folding its event into the match state."""
        if entry.sequence <= self.version:
            return  # already folded: a concurrent load read it from the log first
        self.state.evolve(entry.event)
        self._record(entry)

    def adopt(self, state: MatchState, entries: Sequence[Entry]) -> None:
        """Take the state a command decided, with the entries it appended: nothing is folded
        again (unless another path folded some of them first, then the rest are folded)."""
        if not entries or entries[0].sequence != self.version + 1:
            for entry in entries:
                self.fold(entry)
            return
        self.state = state
        for entry in entries:
            self._record(entry)

    def _record(self, entry: Entry) -> None:
        event, secrets = entry.event, entry.secrets
        if isinstance(event, ev.TableCreated):
            created = entry.message.table_created
            self.name, self.private, self.quick_match, self.rated = (
                created.name,
                created.private,
                created.quick_match,
                created.rated,
            )
            self.join_code_sha256 = secrets.join_code_sha256
            self.created_note_key = secrets.note_key
            self.created_at = entry.recorded_at
            self.created_by_request = secrets.request_id_sha256
        elif isinstance(event, _SEAT_EVENTS):
            self._seat_changed(entry)
        if entry.action_id:
            actor = entry.actor
            if actor is not None:
                self.answered_actions.setdefault((actor, entry.action_id), entry.sequence)
        self.entries.append(entry)
        self.version = entry.sequence

    def _seat_changed(self, entry: Entry) -> None:
        event, secrets = entry.event, entry.secrets
        self.seat_changes += 1
        if isinstance(event, ev.SeatTaken):
            self.seat_token_digests[event.seat] = secrets.seat_token_sha256
            if secrets.request_id_sha256:
                self.joined_requests.setdefault(secrets.request_id_sha256, event.seat)
            if entry.message.seat_taken.account_id:
                self.seat_accounts[event.seat] = entry.message.seat_taken.account_id
        elif isinstance(event, ev.SeatLeft):
            self.seat_token_digests.pop(event.seat, None)
            self.seat_accounts.pop(event.seat, None)
        elif isinstance(event, ev.SeatSubstituted):
            self.substitute_token_digests[event.seat] = secrets.substitute_token_sha256
        elif isinstance(event, ev.SeatReclaimed):
            self.substitute_token_digests.pop(event.seat, None)

    def is_player(self, seat: int, holder: bytes) -> bool:
        """Whether ``holder`` (a token digest) is the seat's own player's."""
        return bool(holder) and self.seat_token_digests.get(seat) == holder

    def is_substitute(self, seat: int, holder: bytes) -> bool:
        """Whether ``holder`` is the token digest of the substitute playing the seat now."""
        return bool(holder) and self.substitute_token_digests.get(seat) == holder

    @property
    def note_key(self) -> bytes:
        """The key of the salts of this table's sealed notes (:mod:`spades.notes`): drawn when
        the table was created; a table created before notes existed has none in its log, and
        uses one derived from its seed (secret as long as the seed is)."""
        if self.created_note_key:
            return self.created_note_key
        created = self.entries[0].event if self.entries else None
        seed = created.seed if isinstance(created, ev.TableCreated) else None
        return hmac.new(seed or b"", b"spades note key", hashlib.sha256).digest()

    @property
    def in_play(self) -> bool:
        """True while the match is being played (started, not over)."""
        return self.state.phase not in (Phase.WAITING_FOR_PLAYERS, Phase.ENDED)

    @property
    def started(self) -> bool:
        return self.state.phase is not Phase.WAITING_FOR_PLAYERS

    @property
    def finished(self) -> bool:
        return self.state.phase is Phase.ENDED

    @property
    def events(self) -> list[ev.Event]:
        """The engine's events, in order."""
        return [entry.event for entry in self.entries]

    def state_at(self, version: int) -> MatchState:
        """The match state as it was after ``version`` events."""
        if version >= self.version:
            return self.state
        return MatchState.from_events(entry.event for entry in self.entries[:version])


#: The events :meth:`Table._seat_changed` folds (who holds or plays a seat).
_SEAT_EVENTS = (ev.SeatTaken, ev.SeatLeft, ev.SeatSubstituted, ev.SeatReclaimed)


@dataclass(frozen=True)
class Decided:
    """What a command decided: the state after it, and the events to append to reach it."""

    state: MatchState
    drafts: list[Draft]

    @classmethod
    def of(
        cls,
        outcome: tuple[MatchState, list[ev.Event]],
        action_id: str = "",
        secrets: Secrets | None = None,
        listing: Listing | None = None,
        account_id: str = "",
        note_sha256: bytes = b"",
    ) -> Decided:
        """From an engine command's (state, events); the first event carries the rest."""
        state, events = outcome
        return cls(state, drafts(events, action_id, secrets, listing, account_id, note_sha256))


#: A command's decision on the latest table: None (or no drafts) when there is nothing to do;
#: raises :class:`errors.RequestError` (or the engine's IllegalAction) to refuse.
Decision = Callable[[Table], Decided | None]


def timestamp(seconds: float) -> Timestamp:
    """``seconds`` (unix) as a Timestamp, to the nanosecond (set field by field: the
    well-known type's own FromNanoseconds is Python code, on every event and prompt)."""
    whole, nanos = divmod(int(seconds * 1e9), 1_000_000_000)
    return Timestamp(seconds=whole, nanos=nanos)
