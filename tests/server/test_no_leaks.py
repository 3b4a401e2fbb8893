"""No leaks: over whole matches of every variation, nothing hidden ever reaches anyone.

Every message each seat's stream and a spectator's Watch stream receive (snapshots, events,
prompts, action results) is recorded, and so are snapshots taken at many sequence numbers,
views asked for on demand (GetView: each seat's at its every prompt, the public one now and
then) and public records fetched during the match. Afterwards the table's log (the truth, nothing
redacted) says which cards each seat could legitimately know at each sequence number: its own
cards once it may look at them, the cards passed to and from it, and every card played this
hand. No message may show any other card; the spectator may see played cards only. Secrets
(the seed before the end, preset deals, the join code's and seat tokens' digests) never
appear at all.

Every seat attaches a sealed note to most of its actions (each with :data:`NOTE_MARKER`): no
byte of a note, nor the key of their salts, reaches any stream (the partner's included),
snapshot, view or record before the end; the final record reveals every note, and each action's
event commits to its note (or to the empty one) as :mod:`spades.notes` says.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from google.protobuf.message import Message

from spades import notes, protocol, records
from spades.engine import CARDS, Card, MatchState, Phase, Rules
from spades.engine import events as ev
from spades.engine.rules import Direction
from spades.v1 import (
    actions_pb2,
    cards_pb2,
    events_pb2,
    lobby_pb2,
    play_pb2,
    record_pb2,
    view_pb2,
)
from spades_server.app.server import SpadesServer
from tests.support.clients import (
    READ_TIMEOUT,
    TOKEN_KEY,
    Client,
    SeatStream,
    cards_in,
    close_streams,
    watch,
)
from tests.support.seats import choices_of, play_turns
from tests.support.servers import create_admin_table, log_entries, log_events

#: How often (in sequence numbers) extra snapshots are taken for each viewer.
SNAPSHOT_STRIDE = 8
#: In every sealed note the seats attach: found in no message but the final record.
NOTE_MARKER = "sealed-note-7f3a"
#: Every this-many-th action of a seat goes without a note (its event commits to the empty one).
NOTELESS_EVERY = 3

Choose = Callable[[int, play_pb2.TurnPrompt, random.Random], actions_pb2.Action]
CONCEDE = actions_pb2.Action(concession=actions_pb2.Concession())


def north_goes_blind(
    seat: int, prompt: play_pb2.TurnPrompt, rng: random.Random
) -> actions_pb2.Action:
    """North bids Blind Nil whenever it may; everyone else looks; otherwise random."""
    choices = choices_of(prompt)
    blind = [a for a in choices if a.HasField("blind_nil_choice") and a.blind_nil_choice.blind]
    look = [a for a in choices if a.HasField("blind_nil_choice") and not a.blind_nil_choice.blind]
    if blind and seat == 0:
        return blind[0]
    if look:
        return look[0]
    return rng.choice(choices)


def at_random(seat: int, prompt: play_pb2.TurnPrompt, rng: random.Random) -> actions_pb2.Action:
    return rng.choice(choices_of(prompt))


@dataclass
class Variation:
    rules: Rules
    choose: Choose = at_random
    private: bool = False
    #: Concede (as East) at East's first turn once this many cards of the first hand are out.
    concede_after_plays: int | None = None
    #: An operator table with these preset deals (and a fixed seed) instead of CreateTable.
    preset_deals: list[list[list[int]]] = field(default_factory=list)


def striped_deal(players: int, hand_size: int, deck: list[int]) -> list[list[int]]:
    return [deck[seat::players][:hand_size] for seat in range(players)]


def preset_deals_for(rules: Rules) -> list[list[list[int]]]:
    deck = [number for number in range(54) if rules.deck_mask >> number & 1]
    rng = random.Random(3)
    first = striped_deal(rules.players, rules.hand_size, deck)
    shuffled = deck[:]
    rng.shuffle(shuffled)
    second = striped_deal(rules.players, rules.hand_size, shuffled)
    return [first, second]


BLIND_NIL_PASS = Rules(blind_nil=True, blind_nil_deficit=0, blind_nil_pass_cards=2, max_hands=2)

VARIATIONS = {
    "default": Variation(Rules(max_hands=1)),
    "jokers": Variation(Rules(jokers=True, max_hands=1), private=True),
    "cutthroat": Variation(Rules(players=3, max_hands=1)),
    "cutthroat-jokers": Variation(Rules(players=3, jokers=True, max_hands=1), private=True),
    "cutthroat-blind-nil": Variation(
        Rules(players=3, blind_nil=True, blind_nil_deficit=0, max_hands=1), north_goes_blind
    ),
    "blind-nil-pass": Variation(BLIND_NIL_PASS, north_goes_blind, private=True),
    "two-of-clubs-leads": Variation(Rules(two_of_clubs_leads=True, max_hands=1)),
    "counter-clockwise": Variation(Rules(direction=Direction.COUNTER_CLOCKWISE, max_hands=1)),
    "board": Variation(Rules(minimum_team_bid=4, max_hands=1), private=True),
    "board-blind-nil": Variation(
        Rules(minimum_team_bid=4, blind_nil=True, blind_nil_deficit=0, max_hands=1),
        north_goes_blind,
    ),
    "concession": Variation(Rules(max_hands=2), concede_after_plays=9, private=True),
    "preset-deals": Variation(
        Rules(blind_nil=True, blind_nil_deficit=0, blind_nil_pass_cards=2, max_hands=2),
        north_goes_blind,
        preset_deals=preset_deals_for(Rules()),
    ),
    "preset-deals-cutthroat-concession": Variation(
        Rules(players=3, jokers=True, max_hands=2),
        concede_after_plays=5,
        preset_deals=preset_deals_for(Rules(players=3, jokers=True)),
    ),
}


@dataclass
class Knowledge:
    """What each viewer may know after each sequence number, from the unredacted log."""

    #: seats[n][seat]: the cards the seat may know after event n (n = 0 before any).
    seats: list[list[frozenset[Card]]]
    #: public[n]: the cards played in the current hand after event n.
    public: list[frozenset[Card]]
    #: pending[n]: the seats still to make their Blind Nil choice after event n.
    pending: list[tuple[int, ...]]
    #: The sequence number of MatchEnded.
    ended_at: int


def knowledge_of(events: list[ev.Event]) -> Knowledge:
    players = events[0].rules.players if isinstance(events[0], ev.TableCreated) else 4
    known: list[set[Card]] = [set() for _ in range(players)]
    played: set[Card] = set()
    state = MatchState()
    out = Knowledge([[frozenset()] * players], [frozenset()], [()], 0)
    for sequence, event in enumerate(events, 1):
        state.evolve(event)
        if isinstance(event, ev.HandStarted):
            known = [set() for _ in range(players)]
            played = set()
        elif isinstance(event, ev.CardsDealt):
            assert event.cards is not None
            if not event.face_down:
                known[event.seat].update(event.cards)
        elif isinstance(event, ev.CardsShown):
            assert event.cards is not None
            known[event.seat].update(event.cards)
        elif isinstance(event, ev.CardsPassed):
            assert event.cards is not None
            known[event.from_seat].update(event.cards)
            known[event.to_seat].update(event.cards)
        elif isinstance(event, ev.CardPlayed):
            played.add(event.card)
            for seat_known in known:
                seat_known.add(event.card)
        elif isinstance(event, ev.MatchEnded):
            out.ended_at = sequence
        out.seats.append([frozenset(seat_known) for seat_known in known])
        out.public.append(frozenset(played))
        out.pending.append(state.blind_pending if state.phase is Phase.BLIND_NIL_CHOICE else ())
    return out


def sequence_of(message: Any) -> int | None:
    """The sequence number a stream message reflects (None for one that carries no state)."""
    kind = message.WhichOneof("kind")
    if kind in ("snapshot", "event", "prompt"):
        return int(getattr(message, kind).sequence)
    return None


@dataclass
class Secrets:
    seed: bytes
    join_code_digest: bytes
    token_digests: list[bytes]
    #: The key of the sealed notes' salts.
    note_key: bytes = b""

    def never_shown(self) -> list[bytes]:
        """What no stream message, view or unfinished record may hold at all."""
        return [
            digest
            for digest in (self.join_code_digest, *self.token_digests, self.note_key)
            if digest
        ] + [NOTE_MARKER.encode()]


@dataclass
class Audit:
    """Checks messages against the knowledge and the secrets, counting what was checked."""

    knowledge: Knowledge
    secrets: Secrets
    checked: int = 0
    checked_while_pending: int = 0

    def check(self, viewer: int | None, message: Message, where: str) -> None:
        self.checked += 1
        data = message.SerializeToString()
        for secret in self.secrets.never_shown():
            assert secret not in data, f"{where}: a secret or a sealed note leaked: {message}"
        sequence = sequence_of(message)
        shown = cards_in(message)
        if sequence is None:
            assert not shown, f"{where}: cards in a message about no sequence: {message}"
            return
        if sequence < self.knowledge.ended_at:
            assert self.secrets.seed not in data, f"{where}: the seed before the end: {message}"
        allowed = (
            self.knowledge.public[sequence]
            if viewer is None
            else self.knowledge.seats[sequence][viewer]
        )
        leaked = sorted(set(shown) - allowed)
        assert not leaked, (
            f"{where}: {'the spectator' if viewer is None else f'seat {viewer}'} was shown "
            f"{[card.symbol for card in leaked]} at sequence {sequence}: {message}"
        )
        if viewer is not None and viewer in self.knowledge.pending[sequence]:
            self.checked_while_pending += 1
            assert not shown, f"{where}: seat {viewer} saw cards before its Blind Nil choice"

    def check_batch(self, viewer: int | None, message: Message, where: str) -> None:
        """A batch whole: no secret digest anywhere in it, the seed not before the end, and
        each part checked as the message it stands for."""
        batch = message.batch  # type: ignore[attr-defined]
        data = message.SerializeToString()
        for secret in self.secrets.never_shown():
            assert secret not in data, f"{where}: a secret or a sealed note leaked: {message}"
        sequences = [event.sequence for event in batch.events]
        assert sequences == sorted(sequences), f"{where}: events out of order"
        if batch.events and batch.events[-1].sequence < self.knowledge.ended_at:
            assert self.secrets.seed not in data, f"{where}: the seed before the end: {message}"
        for event in batch.events:
            self.check(viewer, play_pb2.PlayResponse(event=event), f"{where} event")
        for result in batch.action_results:
            self.check(viewer, play_pb2.PlayResponse(action_result=result), f"{where} result")
        if batch.HasField("prompt"):
            last = sequences[-1] if sequences else batch.prompt.sequence
            assert batch.prompt.sequence == last, f"{where}: a prompt not after the last event"
            self.check(viewer, play_pb2.PlayResponse(prompt=batch.prompt), f"{where} prompt")

    def check_record(self, record: Message, finished: bool, where: str) -> None:
        """A record fetched during the match is public; the final one is whole."""
        self.checked += 1
        data = record.SerializeToString()
        for digest in (self.secrets.join_code_digest, *self.secrets.token_digests):
            if digest:
                assert digest not in data, f"{where}: a secret digest leaked into a record"
        events = list(record.events)  # type: ignore[attr-defined]
        created = events[0].table_created
        # No field of a public message can hold a digest any more (test_public_messages.py).
        assert "join_code_sha256" not in created.DESCRIPTOR.fields_by_name
        for event in events:
            if event.WhichOneof("kind") == "seat_taken":
                assert "seat_token_sha256" not in event.seat_taken.DESCRIPTOR.fields_by_name
        if finished:
            assert record.seed == self.secrets.seed  # type: ignore[attr-defined]
            return
        assert not record.seed, f"{where}: the seed in an unfinished match's record"  # type: ignore[attr-defined]
        assert not record.preset_deals, where  # type: ignore[attr-defined]
        assert not record.notes and not record.note_key, f"{where}: notes before the end"  # type: ignore[attr-defined]
        for secret in self.secrets.never_shown():
            assert secret not in data, f"{where}: a secret or a sealed note in a public record"
        assert self.secrets.seed not in data, f"{where}: the seed in a public record"
        for event in events:
            self.check(None, event_message(event), f"{where} event {event.sequence}")


def event_message(event: events_pb2.Event) -> play_pb2.WatchResponse:
    return play_pb2.WatchResponse(event=event)


#: GetView answers, each as the viewer (a seat, None for the public) and its snapshot.
Views = list[tuple[int | None, play_pb2.PlayResponse]]


async def view_now(client: Client, table_id: str, token: str | None) -> play_pb2.PlayResponse:
    """GetView (the seat's with ``token``, else the public view) as a stream's snapshot."""
    metadata = ((TOKEN_KEY, token),) if token is not None else None
    response = await client.play.GetView(
        play_pb2.GetViewRequest(table_id=table_id), metadata=metadata
    )
    return play_pb2.PlayResponse(snapshot=response.snapshot)


async def act_with_note(
    stream: SeatStream, action: actions_pb2.Action, sequence: int, note: str
) -> play_pb2.ActionResult:
    """Send ``action`` with the sealed ``note`` (empty: none) and wait for its result."""
    action_id = uuid.uuid4().hex
    await stream.call.write(
        play_pb2.PlayRequest(
            action=play_pb2.ActionRequest(
                action_id=action_id, sequence=sequence, action=action, note=note.encode()
            )
        )
    )
    return await stream.act_result(action_id)


def sealed_note(seat: int, turn: int) -> str:
    """The note a seat attaches to its ``turn``-th action ("" for none, now and then)."""
    if turn % NOTELESS_EVERY == NOTELESS_EVERY - 1:
        return ""
    return f"{NOTE_MARKER} seat {seat} action {turn}: because ♠"


async def play_seat(
    stream: SeatStream,
    seat: int,
    choose: Choose,
    rng: random.Random,
    concede_after_plays: int | None,
    on_demand: tuple[Client, str, str, Views] | None = None,
    notes_sent: dict[int, str] | None = None,
) -> None:
    """Answer every prompt until the match ends (East may concede), asking for the seat's view
    on demand (``on_demand``: client, table, token, where to keep them) at every prompt, with a
    sealed note on most actions (kept in ``notes_sent`` by the sequence of the action's first
    event)."""
    plays = 0
    turn = 0
    while True:
        message = await stream.next()
        kind = message.WhichOneof("kind")
        if kind == "event":
            event_kind = message.event.WhichOneof("kind")
            if event_kind == "seed_revealed":
                return
            if event_kind == "card_played":
                plays += 1
        if kind != "prompt":
            continue
        prompt = message.prompt
        if on_demand is not None:
            client, table_id, token, views = on_demand
            views.append((seat, await view_now(client, table_id, token)))
        if concede_after_plays is not None and seat == 1 and plays >= concede_after_plays:
            action = CONCEDE
        else:
            action = choose(seat, prompt, rng)
        note = sealed_note(seat, turn)
        turn += 1
        result = await act_with_note(stream, action, prompt.sequence, note)
        assert result.accepted, result
        if notes_sent is not None:
            notes_sent[result.sequence] = note


async def spectate(
    client: Client,
    table_id: str,
    records_seen: list[tuple[play_pb2.GetRecordResponse, int]] | None,
    views: Views,
    *,
    batched: bool = False,
    watching: asyncio.Event | None = None,
) -> list[play_pb2.WatchResponse]:
    """A spectator from the table's creation to the end, fetching the record now and then
    (unless ``records_seen`` is None); its every message, and each batch whole. ``watching``
    is set once it has the table's snapshot."""
    stream = watch(client, table_id, batched=batched)
    await stream.snapshot()
    if watching is not None:
        watching.set()
    try:
        while True:
            message = await stream.next()
            if message.WhichOneof("kind") != "event":
                continue
            kind = message.event.WhichOneof("kind")
            if records_seen is not None and kind in (
                "hand_started",
                "trick_won",
                "bid_made",
                "cards_passed",
            ):
                response = await client.play.GetRecord(play_pb2.GetRecordRequest(table_id=table_id))
                records_seen.append((response, message.event.sequence))
                views.append((None, await view_now(client, table_id, None)))
            if kind == "seed_revealed":
                if batched:
                    assert stream.batches
                return stream.received + stream.batches
    finally:
        stream.close()


async def snapshots_at(
    client: Client, table_id: str, tokens: list[str], logged: list[events_pb2.Event]
) -> list[tuple[int | None, Message]]:
    """Snapshots for every seat and a spectator at many sequence numbers, after the match:
    after every event but card plays and tricks (deals, choices, bids, passes, scores: where
    what a seat may see changes) and after every few others."""
    taken: list[tuple[int | None, Message]] = []
    for event in logged:
        after = event.sequence
        routine = event.WhichOneof("kind") in ("card_played", "trick_won")
        if routine and after % SNAPSHOT_STRIDE and after != logged[-1].sequence:
            continue
        spectator = watch(client, table_id, after_sequence=after)
        taken.append((None, (await spectator.next())))
        spectator.close()
        for seat, token in enumerate(tokens):
            stream = client.seat_stream(token)
            await stream.start(after_sequence=after)
            taken.append((seat, stream.received[0]))
            await stream.close()
    return taken


def variation_index(name: str) -> int:
    return list(VARIATIONS).index(name)


#: The variations also played on PostgreSQL. What a viewer may see is decided above the log
#: (the table's views and frames), the same on both backends, so every variation runs on
#: SQLite; what the backend changes is how the messages reach a viewer (the lobby and Watch
#: follow PostgreSQL's final prefix, a stream catches up from its rows), which these cover:
#: a public and a private table, a card pass, and an operator's table with preset deals,
#: three seats, jokers and a concession.
ON_POSTGRES = ("default", "blind-nil-pass", "preset-deals-cutthroat-concession")
CASES = [("sqlite", name) for name in VARIATIONS] + [("postgres", name) for name in ON_POSTGRES]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("log_backend", "name"), CASES, indirect=["log_backend"], ids=[f"{b}-{n}" for b, n in CASES]
)
async def test_no_viewer_ever_sees_what_it_may_not(
    client: Client, server: SpadesServer, name: str
) -> None:
    variation = VARIATIONS[name]
    rules = variation.rules
    join_code = ""
    if variation.preset_deals:
        table_id = await create_admin_table(
            server, rules, seed=bytes(range(32)), preset_deals=variation.preset_deals
        )
    else:
        created = await client.create_table(rules, private=variation.private)
        table_id, join_code = created.table.table_id, created.join_code
        assert bool(join_code) == variation.private

    records_seen: list[tuple[play_pb2.GetRecordResponse, int]] = []
    views: Views = []
    watching = [asyncio.Event(), asyncio.Event()]
    spectator = asyncio.create_task(
        spectate(client, table_id, records_seen, views, watching=watching[0])
    )
    # Batched streams too (play.proto's Batch): half the seats (which half alternates with the
    # variation, so every seat is covered both ways) and a second spectator.
    batched_spectator = asyncio.create_task(
        spectate(client, table_id, None, [], batched=True, watching=watching[1])
    )
    batched_seats = {seat for seat in range(rules.players) if seat % 2 == variation_index(name) % 2}
    async with asyncio.timeout(READ_TIMEOUT):  # both watch from before the first seat is taken
        await asyncio.gather(*(event.wait() for event in watching))
    rng = random.Random(name)
    streams: list[SeatStream] = []
    tokens: list[str] = []
    for seat in range(rules.players):
        joined = await client.lobby.JoinTable(
            lobby_pb2.JoinTableRequest(
                table_id=table_id, player_name=f"seat {seat}", bot=True, join_code=join_code
            )
        )
        assert protocol.seat_from_proto(joined.seat) == seat
        tokens.append(joined.seat_token)
        stream = client.seat_stream(joined.seat_token, batched=seat in batched_seats)
        await stream.start()  # before the others sit down: it sees them join and the deal
        streams.append(stream)
    notes_sent: dict[int, str] = {}
    players = [
        play_seat(
            stream,
            seat,
            variation.choose,
            rng,
            variation.concede_after_plays,
            (client, table_id, tokens[seat], views),
            notes_sent,
        )
        for seat, stream in enumerate(streams)
    ]
    await asyncio.wait_for(asyncio.gather(*players), 30)
    watched = await asyncio.wait_for(spectator, 10)
    watched_batched = await asyncio.wait_for(batched_spectator, 10)

    logged = await log_events(server, table_id)
    entries = await log_entries(server, table_id)
    engine_events = [entry.event for entry in entries]
    knowledge = knowledge_of(engine_events)
    created_event = engine_events[0]
    assert isinstance(created_event, ev.TableCreated)
    secrets = Secrets(
        seed=created_event.seed or b"",
        join_code_digest=entries[0].secrets.join_code_sha256,
        token_digests=[
            entry.secrets.seat_token_sha256 for entry in entries if entry.secrets.seat_token_sha256
        ],
        # Drawn at CreateTable; a table made straight through the store (create_admin_table)
        # has none in its log, and derives one from its seed (Table.note_key).
        note_key=(await server.store.load(table_id)).note_key,
    )
    assert bool(entries[0].secrets.note_key) != bool(variation.preset_deals)
    assert len(secrets.note_key) == notes.NOTE_KEY_BYTES
    assert len(secrets.seed) >= 16 and len(secrets.token_digests) == rules.players
    assert bool(secrets.join_code_digest) == variation.private
    assert secrets.token_digests == [hashlib.sha256(token.encode()).digest() for token in tokens]
    audit = Audit(knowledge, secrets)

    for seat, stream in enumerate(streams):
        for index, received in enumerate(stream.received):
            audit.check(seat, received, f"seat {seat} message {index}")
        # Each batch whole, too: no secret in it, and its events (a prompt, too) are the ones
        # checked above, in order.
        assert bool(stream.batches) == (seat in batched_seats)
        for index, batch in enumerate(stream.batches):
            audit.check_batch(seat, batch, f"seat {seat} batch {index}")
    for index, public in enumerate(watched):
        audit.check(None, public, f"spectator message {index}")
    for index, public in enumerate(watched_batched):
        if public.WhichOneof("kind") == "batch":
            audit.check_batch(None, public, f"batched spectator batch {index}")
        else:
            audit.check(None, public, f"batched spectator message {index}")
    # The batched spectator saw what the other one did, from where both had started (each at
    # the latest sequence, a moment apart), to the end.
    seen_batched = [m.event for m in watched_batched if m.WhichOneof("kind") == "event"]
    seen_unbatched = [m.event for m in watched if m.WhichOneof("kind") == "event"]
    assert seen_batched[-1].HasField("seed_revealed")
    common = max(seen_batched[0].sequence, seen_unbatched[0].sequence)
    assert [e for e in seen_batched if e.sequence >= common] == [
        e for e in seen_unbatched if e.sequence >= common
    ]
    for viewer, snapshot in await snapshots_at(client, table_id, tokens, logged):
        audit.check(viewer, snapshot, f"snapshot for {viewer}")
    assert {viewer for viewer, _ in views} == {None, *range(rules.players)}
    for viewer, on_demand in views:
        audit.check(viewer, on_demand, f"GetView for {viewer}")
    for viewer, token in [(None, None), *enumerate(tokens)]:
        audit.check(viewer, await view_now(client, table_id, token), f"final GetView {viewer}")
    assert records_seen, "records were fetched during the match"
    unfinished = 0
    for response, seen in records_seen:
        # The table may have moved on since the spectator saw `seen`: the record says where.
        ended = any(event.HasField("match_ended") for event in response.record.events)
        unfinished += not ended
        audit.check_record(response.record, ended, f"record fetched after {seen}")
    assert unfinished, "some records were fetched before the end"

    # After the end: the whole record, the seed revealed and every deal verifiable.
    final = (await client.play.GetRecord(play_pb2.GetRecordRequest(table_id=table_id))).record
    audit.check_record(final, True, "final record")
    assert final.seed == secrets.seed
    assert hashlib.sha256(final.seed).digest() == final.seed_commitment
    assert records.events_of(final) == engine_events  # the seed and deals from the record
    if not variation.preset_deals:
        records.verify(final)
    check_revealed_notes(final, notes_sent, secrets.note_key)

    # The check covered what it claims to.
    assert audit.checked > 200
    if any(knowledge.pending):
        assert audit.checked_while_pending > 0, "some message reached a seat before it looked"
    if variation.preset_deals:
        dealt = [e for e in engine_events if isinstance(e, ev.CardsDealt)][: rules.players]
        assert [sorted(e.cards or ()) for e in dealt] == [
            sorted(CARDS[n] for n in hand) for hand in variation.preset_deals[0]
        ]
    for stream in streams:
        await stream.close()


def check_revealed_notes(
    final: record_pb2.GameRecord, notes_sent: dict[int, str], note_key: bytes
) -> None:
    """The finished match's record reveals every note sent (by the sequence of its action's
    first event) and the key, and every action's event commits to its note or the empty one."""
    assert notes_sent and any(notes_sent.values()) and not all(notes_sent.values())
    assert final.note_key == note_key
    revealed = {note.sequence: note.text for note in final.notes}
    assert revealed == {sequence: text for sequence, text in notes_sent.items() if text}
    committed = {event.sequence: event.note_sha256 for event in final.events if event.note_sha256}
    assert set(committed) == set(notes_sent), "each action's first event, and only those"
    for sequence, digest in committed.items():
        sent = notes_sent[sequence].encode()
        assert digest == notes.note_digest(note_key, sequence, sent), sequence
        assert digest == hashlib.sha256(notes.note_salt(note_key, sequence) + sent).digest()
    for note in final.notes:
        acted = final.events[note.sequence - 1]
        assert acted.sequence == note.sequence and acted.note_sha256
        assert f"seat {protocol.seat_from_proto(note.seat)} " in note.text


@pytest.mark.asyncio
async def test_the_lobby_and_joins_carry_no_secret(client: Client, server: SpadesServer) -> None:
    """The lobby never shows a join code, a digest, a seed or a token of another seat."""
    created = await client.create_table(Rules(max_hands=1), private=True)
    table_id, join_code = created.table.table_id, created.join_code
    tokens = await client.seat_all(table_id, join_code=join_code)
    logged = await log_entries(server, table_id)
    created_event = logged[0].event
    assert isinstance(created_event, ev.TableCreated) and created_event.seed
    secrets = [
        created_event.seed,
        logged[0].secrets.join_code_sha256,
        join_code.encode(),
        *(token.encode() for token in tokens),
        *(hashlib.sha256(token.encode()).digest() for token in tokens),
    ]
    table = (await client.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table_id))).table
    listed = await client.lobby.ListTables(lobby_pb2.ListTablesRequest())
    for message in (table, listed, created.table):
        data = message.SerializeToString()
        for secret in secrets:
            assert secret not in data


@pytest.mark.asyncio
async def test_a_blind_nil_bidder_gets_no_legal_card_before_it_may_see_its_cards(
    client: Client, server: SpadesServer
) -> None:
    """Blind Nil with the card pass: South passes two cards to North (Blind Nil), then North
    is shown its cards. A snapshot taken between those two events (a client resuming there)
    must not list North's unseen cards as legal actions while its hand is still hidden."""
    rules = Rules(blind_nil=True, blind_nil_deficit=0, blind_nil_pass_cards=2, max_hands=1)
    table_id = await create_admin_table(server, rules, seed=bytes(32))
    tokens = await client.seat_all(table_id)
    streams = await client.started_streams(tokens)

    def passed_to_north(now: play_pb2.Snapshot) -> bool:
        return now.view.phase == view_pb2.PHASE_PASSING and now.view.turn == cards_pb2.SEAT_NORTH

    await play_turns(
        client, table_id, streams, random.Random(1), until=passed_to_north, choose=north_goes_blind
    )
    logged = await log_events(server, table_id)
    passed = next(event for event in logged if event.WhichOneof("kind") == "cards_passed")
    assert passed.cards_passed.to_seat == cards_pb2.SEAT_NORTH
    shown = logged[passed.sequence]  # the next event: North may now look
    assert (
        shown.WhichOneof("kind") == "cards_shown" and shown.cards_shown.seat == cards_pb2.SEAT_NORTH
    )

    resumed = client.seat_stream(tokens[0])
    at_pass = (await resumed.start(after_sequence=passed.sequence)).view
    seen = {protocol.card_from_proto(card) for card in passed.cards_passed.cards}
    assert not at_pass.hand, "North has not been shown its cards yet"
    unseen = set(cards_in(at_pass)) - seen
    assert not unseen, (
        f"North's snapshot at {passed.sequence} lists cards it has not seen: "
        f"{sorted(card.symbol for card in unseen)}"
    )
    await resumed.close()
    await close_streams(streams)
