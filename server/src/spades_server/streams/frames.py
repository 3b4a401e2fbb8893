"""Stream messages as bytes: each event serialised once per class of viewer, shared by streams.

Every stream of a table that shows an event to the same viewer (seat 0..3, or the public) sends
the same bytes: the event redacted for that viewer (:func:`redacted`) and
serialised once, kept for the table's latest sequences (:func:`cache_of`, against the table
object its store holds), then framed into the stream's message by joining bytes, with no protobuf
work per stream. The frames are plain protobuf encoding (a field's tag, its length as a varint,
its bytes), so a client parses them as the messages play.proto declares:

* ``event = 2`` of PlayResponse, WatchResponse and SeatResponse (the same number in all three,
  so one frame serves every kind of stream);
* ``prompt = 3`` of PlayResponse and SeatResponse, a TurnPrompt whose ``legal_actions = 2``
  are each framed once per action and follow its other fields (parsers take fields in any
  order and keep a repeated field's in theirs);
* ``batch = 5`` of the three, a Batch of ``events = 1``, ``action_results = 2``,
  ``prompt = 3`` and ``turn = 4``.

The gRPC method handlers write a ``bytes`` message as it is (:func:`serializer`); everything
else is serialised by its class as usual.

A table's cache of serialised events is bounded: once it holds :data:`PRUNE_AT` entries, the
next event cached first drops those older than the latest :data:`CACHED_SEQUENCES` (public, so
that the bound can be checked from outside).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Final

from google.protobuf.message import Message

from spades import protocol
from spades.engine import Viewer, redact
from spades.v1 import events_pb2, play_pb2
from spades_server.domain.table_events import add_server_fields
from spades_server.domain.tables import Table
from spades_server.processes.clock import turn_of
from spades_server.store.protowire import framed, varint

#: Tags (field number << 3 | 2, length-delimited) of the fields the frames are made of.
EVENT_TAG: Final = b"\x12"  # PlayResponse / WatchResponse / SeatResponse .event = 2
BATCH_TAG: Final = b"\x2a"  # PlayResponse / WatchResponse / SeatResponse .batch = 5
PROMPT_TAG: Final = b"\x1a"  # PlayResponse / SeatResponse .prompt = 3
PROMPT_LEGAL_ACTION_TAG: Final = b"\x12"  # TurnPrompt.legal_actions = 2
BATCH_EVENT_TAG: Final = b"\x0a"  # Batch.events = 1
BATCH_RESULT_TAG: Final = b"\x12"  # Batch.action_results = 2
BATCH_PROMPT_TAG: Final = b"\x1a"  # Batch.prompt = 3
BATCH_TURN_TAG: Final = b"\x22"  # Batch.turn = 4

#: At most this many events in one Batch (play.proto promises 256).
MAX_BATCH_EVENTS: Final = 256
#: Serialised events are kept for a table's latest this-many sequences, while it is in play
#: (every stream of the table reads a new event within moments of each other; a catch-up
#: further back serialises as it goes: only one stream reads that far back at a time).
CACHED_SEQUENCES: Final = 32
#: The cache is pruned once it holds this many (sequence, viewer) entries.
PRUNE_AT: Final = 5 * CACHED_SEQUENCES * 2

#: A cache key is ``sequence * _SLOTS + slot``: one int, no tuple made and hashed per lookup.
#: The slots: each seat's (0..3), and these.
_SLOTS: Final = 8
#: The public viewer's slot.
_PUBLIC: Final = 4
#: The table's turn at a sequence (Batch.turn: public, the same for every stream).
_TURN: Final = 5
#: An event's public message whole, as every viewer it hides nothing from sends it.
_WHOLE: Final = 6


#: Each table's serialised frames, by the id of the table object its store holds (one per
#: table in a store; another store's copy has its own): a table the store lets go takes its
#: frames with it (:func:`weakref.finalize`). Keyed by id, not weakly by the object, because
#: this lookup is on every stream's every event (a weak key costs about 0.4 µs more a call).
_CACHES: dict[int, dict[int, bytes]] = {}


def cache_of(table: Table) -> dict[int, bytes]:
    """What the table's streams send, serialised once for all of them (the latest sequences
    only), by :func:`wire_key`: each event as each viewer (a seat, the public) sees it, the
    public message whole for every viewer it hides nothing from, and the table's Batch.turn at
    each sequence. Emptied once the table has finished."""
    cache = _CACHES.get(id(table))
    if cache is None:
        cache = _CACHES[id(table)] = {}
        weakref.finalize(table, _CACHES.pop, id(table), None)
    return cache


def _forget(table: Table) -> None:
    # Nothing follows the end but its last events' catch-up, and a finished table may stay
    # cached for long (as many as --table-cache-size): keep nothing serialised.
    cache = _CACHES.get(id(table))
    if cache:
        cache.clear()


def wire_key(sequence: int, viewer: Viewer) -> int:
    """The key in :func:`cache_of` of the event at ``sequence`` as ``viewer``'s streams send
    it."""
    return sequence * _SLOTS + (_PUBLIC if viewer is None else viewer)


def redacted(table: Table, index: int, viewer: Viewer) -> events_pb2.Event:
    """Stored event number ``index`` (0-based) as ``viewer`` may see it.

    The engine's redaction decides; when it hides nothing, the entry's public message itself
    goes out (no conversion per viewer). No server secret is in it (the journal keeps them
    apart), and the action id goes only to the seat that acted.
    """
    entry = table.entries[index]
    shown = redact(entry.event, viewer)
    own_action = bool(entry.action_id) and viewer is not None and entry.actor == viewer
    if shown is entry.event:
        if not own_action:
            return entry.message
        out = events_pb2.Event()
        out.CopyFrom(entry.message)
    else:
        out = protocol.event_to_proto(shown)
        out.sequence = entry.message.sequence
        out.time.CopyFrom(entry.message.time)
        add_server_fields(entry.message, out)
    if own_action:
        out.action_id = entry.action_id
    return out


def event_payload(table: Table, index: int, viewer: Viewer) -> bytes:
    """Stored event number ``index`` (0-based) redacted for ``viewer``, serialised: once per
    viewer while it is among the table's latest sequences, then from the cache."""
    key = (index + 1) * _SLOTS + (_PUBLIC if viewer is None else viewer)
    cache = cache_of(table)
    cached = cache.get(key)
    if cached is not None:
        return cached
    return _serialise(table, index, viewer, key, cache)


def _serialise(
    table: Table, index: int, viewer: Viewer, key: int, cache: dict[int, bytes]
) -> bytes:
    """Serialise what ``cache`` (the table's :func:`cache_of`) lacks at ``key``."""
    sequence = index + 1
    if table.finished:
        _forget(table)
        return redacted(table, index, viewer).SerializeToString()
    if sequence <= table.version - CACHED_SEQUENCES:
        # Far back: a catch-up, one stream at a time, serialised as it goes.
        return redacted(table, index, viewer).SerializeToString()
    shown = redacted(table, index, viewer)
    if shown is table.entries[index].message:
        # Nothing hidden and no action id of the viewer's: every such viewer (the public, most
        # often all four seats) sends the public message's bytes, serialised once.
        shared = sequence * _SLOTS + _WHOLE
        payload = cache.get(shared)
        if payload is None:
            payload = cache[shared] = shown.SerializeToString()
    else:
        payload = shown.SerializeToString()
    if len(cache) >= PRUNE_AT:
        oldest = (table.version - CACHED_SEQUENCES + 1) * _SLOTS
        for stale in [k for k in cache if k < oldest]:
            del cache[stale]
    cache[key] = payload
    return payload


def turn_payload(table: Table) -> bytes:
    """Batch.turn at the table's latest sequence, serialised once per sequence for every
    stream of the table (b"" when no one is to act: the batch then has none)."""
    key = table.version * _SLOTS + _TURN
    cache = cache_of(table)
    cached = cache.get(key)
    if cached is not None:
        return cached
    if table.finished:
        _forget(table)
        return b""
    turn = turn_of(table)
    cached = cache[key] = b"" if turn is None else turn.SerializeToString()
    return cached


def event(table: Table, index: int, viewer: Viewer) -> bytes:
    """The ``event`` message (of any of the three responses) for stored event ``index``."""
    return framed(EVENT_TAG, event_payload(table, index, viewer))


def batch(
    table: Table,
    start: int,
    end: int,
    viewer: Viewer,
    results: Sequence[play_pb2.ActionResult] = (),
    prompt: bytes | None = None,
    turn: bytes = b"",
) -> bytes:
    """The ``batch`` message (of any of the three responses): the events after sequence
    ``start`` up to ``end`` for ``viewer``, then ``results``, then ``prompt`` (a serialised
    TurnPrompt), then ``turn`` (a serialised Turn, :func:`turn_payload`; empty for none)."""
    # Each field's tag and length, then its bytes, joined once with the batch's own tag and
    # length in front: every payload is copied once, into the message.
    parts = [BATCH_TAG, b""]
    if end > start:
        # event_payload's lookup, with the table's cache found once for the batch's events.
        cache = cache_of(table)
        slot = _PUBLIC if viewer is None else viewer
        for index in range(start, end):
            payload = cache.get((index + 1) * _SLOTS + slot)
            if payload is None:
                payload = _serialise(table, index, viewer, (index + 1) * _SLOTS + slot, cache)
            parts.append(BATCH_EVENT_TAG + varint(len(payload)))
            parts.append(payload)
    for result in results:
        serialised = result.SerializeToString()
        parts.append(BATCH_RESULT_TAG + varint(len(serialised)))
        parts.append(serialised)
    if prompt is not None:
        parts.append(BATCH_PROMPT_TAG + varint(len(prompt)))
        parts.append(prompt)
    if turn:
        parts.append(BATCH_TURN_TAG + varint(len(turn)))
        parts.append(turn)
    parts[1] = varint(sum(map(len, parts)) - len(BATCH_TAG))
    return b"".join(parts)


def serializer(message_class: type[Message]) -> Callable[[Message | bytes], bytes]:
    """A gRPC response serializer that writes pre-serialised ``bytes`` as they are and
    serialises a ``message_class`` message as the generated code does."""
    serialize = message_class.SerializeToString

    def write(message: Message | bytes) -> bytes:
        if type(message) is bytes:
            return message
        return serialize(message)  # type: ignore[arg-type]

    return write
