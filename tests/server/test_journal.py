"""The journal: rows to entries and back, old rows included, secrets never in public messages."""

from __future__ import annotations

import dataclasses

import pytest
from google.protobuf.message import DecodeError

from spades.engine import Card, MatchState, Rules, apply, apply_seat, legal_actions, new_match
from spades.engine import events as ev
from spades.engine.events import SubstitutionReason
from spades.protocol import ProtocolError
from spades.v1 import cards_pb2, events_pb2
from spades_server.domain import table_events
from spades_server.domain.table_events import ACCEPTED_CLAIM, Draft, Listing, Refusal, Secrets
from spades_server.eventlog.base import StoredEvent
from spades_server.store import journal
from spades_server.store.journal import ENVELOPE_MARKER, decode, encode
from spades_server.v1 import log_pb2

DEAL = [list(range(seat * 13, seat * 13 + 13)) for seat in range(4)]
SEED = bytes(range(32))


def stored(data: bytes, version: int = 1) -> StoredEvent:
    return StoredEvent("table-1", version, 10 + version, 1_700_000_000.25, data)


def test_a_table_created_round_trips_with_its_secrets_beside_the_public_event() -> None:
    _, events = new_match(Rules(), seed=SEED, preset_deals=[DEAL])
    draft = Draft(
        events[0],
        secrets=Secrets(join_code_sha256=b"j" * 32),
        listing=Listing("Pond", private=True, quick_match=False),
    )
    data = journal.encode(draft)
    assert data.startswith(journal.ENVELOPE_MARKER)
    entry = journal.decode(stored(data))
    assert entry.event == events[0]  # the seed and preset deals are back in the engine event
    assert entry.secrets == draft.secrets
    assert (entry.table_id, entry.sequence, entry.position) == ("table-1", 1, 11)
    created = entry.message.table_created
    assert (created.name, created.private) == ("Pond", True)
    assert entry.message.sequence == 1
    assert abs(entry.message.time.ToNanoseconds() - 1_700_000_000_250_000_000) < 1_000
    public = entry.message.SerializeToString()
    assert SEED not in public and b"j" * 32 not in public
    # The entry made right after the append is the one a later read makes.
    assert journal.appended(stored(data), draft) == entry


def test_action_ids_and_token_digests_round_trip() -> None:
    state, _ = new_match(Rules(), seed=SEED)
    _, seated = apply_seat(state, 2, "Eve", bot=True)
    draft = Draft(seated[0], "act-1", Secrets(seat_token_sha256=b"t" * 32))
    entry = journal.decode(stored(journal.encode(draft), 2))
    assert (entry.event, entry.action_id, entry.secrets) == (seated[0], "act-1", draft.secrets)
    assert not entry.message.action_id  # only its actor's stream gets it
    assert entry.actor == 2


def test_drafts_put_the_action_id_and_secrets_on_the_first_event_only() -> None:
    card = Card.parse("QS")
    events: list[ev.Event] = [ev.CardPlayed(0, card), ev.TrickWon(1, 0, card)]
    made = table_events.drafts(events, "a", Secrets(seat_token_sha256=b"x"))
    assert [d.action_id for d in made] == ["a", ""]
    assert [d.secrets for d in made] == [Secrets(seat_token_sha256=b"x"), Secrets()]


def legacy_row(event: events_pb2.Event, secrets: log_pb2.LegacyEvent) -> bytes:
    # What the server wrote before the envelope: one spades.v1.Event, the secrets inside it
    # (the same bytes as the two messages merged, field numbers being the old ones).
    return event.SerializeToString() + secrets.SerializeToString()


def test_a_legacy_row_is_read_with_its_secrets_taken_out_of_the_public_message() -> None:
    _, events = new_match(Rules(), seed=SEED, preset_deals=[DEAL])
    public = events_pb2.Event(action_id="old-action")
    public.table_created.name = "Old"
    public.table_created.shuffle_version = events[0].shuffle_version  # type: ignore[union-attr]
    public.table_created.seed_commitment = events[0].seed_commitment  # type: ignore[union-attr]
    public.table_created.rules.SetInParent()
    secrets = log_pb2.LegacyEvent()
    secrets.table_created.seed = SEED
    secrets.table_created.preset_deals.add().hands.add().cards.add(suit=1, rank=2)
    secrets.table_created.join_code_sha256 = b"j" * 32
    entry = journal.decode(stored(legacy_row(public, secrets)))
    assert isinstance(entry.event, ev.TableCreated)
    assert entry.event.seed == SEED and entry.event.preset_deals
    assert entry.secrets.join_code_sha256 == b"j" * 32
    assert entry.action_id == "old-action" and not entry.message.action_id
    data = entry.message.SerializeToString()
    assert SEED not in data and b"j" * 32 not in data
    assert entry.message.table_created.name == "Old"


def test_legacy_seat_rows_keep_their_token_digests() -> None:
    taken = events_pb2.Event()
    taken.seat_taken.player.name = "Eve"
    taken.seat_taken.player.seat = cards_pb2.SEAT_EAST
    secrets = log_pb2.LegacyEvent()
    secrets.seat_taken.seat_token_sha256 = b"t" * 32
    entry = journal.decode(stored(legacy_row(taken, secrets), 2))
    assert entry.event == ev.SeatTaken(1, "Eve", False)
    assert entry.secrets.seat_token_sha256 == b"t" * 32
    assert b"t" * 32 not in entry.message.SerializeToString()
    substituted = events_pb2.Event()
    substituted.seat_substituted.reason = events_pb2.SUBSTITUTION_REASON_TIMEOUTS
    substituted.seat_substituted.seat = cards_pb2.SEAT_NORTH
    secrets = log_pb2.LegacyEvent()
    secrets.seat_substituted.substitute_token_sha256 = b"s" * 32
    entry = journal.decode(stored(legacy_row(substituted, secrets), 3))
    assert entry.event == ev.SeatSubstituted(0, SubstitutionReason.TIMEOUTS)
    assert entry.secrets.substitute_token_sha256 == b"s" * 32


def test_a_state_folded_from_entries_is_the_one_the_engine_decided() -> None:
    state, created = new_match(Rules(), seed=SEED)
    rows = [journal.encode(Draft(created[0]))]
    for seat in range(4):
        state, seated = apply_seat(state, seat, f"p{seat}")
        rows += [journal.encode(Draft(event)) for event in seated]
    folded = MatchState.from_events(
        journal.decode(stored(row, number)).event for number, row in enumerate(rows, 1)
    )
    assert legal_actions(folded, folded.seat_to_act()) == legal_actions(state, state.seat_to_act())
    assert folded.hands == state.hands


def test_a_row_framed_without_a_message_of_its_own_decodes_as_one_built_whole() -> None:
    """Rows of events with no secret are framed from the public message's bytes: they parse
    as the LogEntry built as a message would, action id and all."""
    taken = ev.SeatTaken(seat=2, name="Ann", bot=False)
    for draft in (Draft(taken), Draft(taken, action_id="a" * 200)):
        row = encode(draft)
        built = log_pb2.LogEntry(event=draft.message, action_id=draft.action_id)
        assert log_pb2.LogEntry.FromString(row[len(ENVELOPE_MARKER) :]) == built
        entry = decode(StoredEvent("t1", 2, 2, 1.0, row))
        assert entry.event == taken and entry.action_id == draft.action_id
        assert entry.secrets == Secrets()


def test_kind_of_reads_every_kind_off_the_bytes_as_a_full_parse_would() -> None:
    """The lobby reads only the kind of most events: read off the row's first bytes, it must
    name the same kind as parsing the whole row, for every kind a match writes."""
    state, events = new_match(Rules(), seed=bytes(32))
    for taker in range(4):
        state, taken = apply_seat(state, taker, f"p{taker}", bot=True)
        events += taken
    while not state.is_over and len(events) < 400:
        seat = state.turn
        assert seat is not None
        state, acted = apply(state, seat, legal_actions(state, seat)[0])
        events += acted
    kinds = set()
    for version, event in enumerate(events, 1):
        # An action's first event carries the commitment to its note (Event.note_sha256 = 4,
        # before the kind), and its note in the envelope.
        for action_id, note in (("", b""), ("an-action", b""), ("an-action", b"why \xe2\x99\xa0")):
            draft = Draft(
                event,
                action_id,
                Secrets(note=note) if note else table_events.NO_SECRETS,
                note_sha256=bytes(range(32)) if action_id else b"",
            )
            stored = StoredEvent("t1", version, version, 0.0, encode(draft))
            assert decode(stored).secrets.note == note
            parsed = log_pb2.LogEntry.FromString(stored.data[len(ENVELOPE_MARKER) :])
            kind = parsed.event.WhichOneof("kind")
            assert journal.kind_of(stored) == kind
            # ... read off the bytes, not by the parse kind_of falls back to: a row whose end
            # no parse accepts (a field of wire type 7) still names its kind.
            unparsable = StoredEvent("t1", version, version, 0.0, stored.data + b"\xff")
            with pytest.raises(DecodeError):
                log_pb2.LogEntry.FromString(unparsable.data[len(ENVELOPE_MARKER) :])
            assert journal.kind_of(unparsable) == kind
            kinds.add(kind)
    assert {"table_created", "seat_taken", "cards_dealt", "bid_made", "card_played"} <= kinds


def test_every_secret_and_the_rows_time_round_trip() -> None:
    state, _ = new_match(Rules(), seed=SEED)
    _, seated = apply_seat(state, 1, "Eve", bot=True)
    secrets = Secrets(
        join_code_sha256=b"j" * 32,
        seat_token_sha256=b"t" * 32,
        substitute_token_sha256=b"s" * 32,
        request_id_sha256=b"r" * 32,
    )
    entry = journal.decode(stored(journal.encode(Draft(seated[0], "act-1", secrets)), 2))
    assert entry.secrets == secrets
    assert entry.recorded_at == 1_700_000_000.25


def test_a_table_created_without_a_seed_reads_back_without_one() -> None:
    _, events = new_match(Rules(), seed=SEED)
    created = events[0]
    assert isinstance(created, ev.TableCreated)
    unseeded = dataclasses.replace(created, seed=None)
    entry = journal.decode(stored(journal.encode(Draft(unseeded))))
    assert isinstance(entry.event, ev.TableCreated) and entry.event.seed is None


def test_a_bad_card_in_a_rows_preset_deals_is_named_where_it_is() -> None:
    _, events = new_match(Rules(), seed=SEED, preset_deals=[DEAL])
    row = log_pb2.LogEntry.FromString(journal.encode(Draft(events[0]))[len(ENVELOPE_MARKER) :])
    row.secrets.preset_deals[0].hands[1].cards[2].rank = cards_pb2.Rank.ValueType(99)
    with pytest.raises(ProtocolError) as raised:
        journal.decode(stored(ENVELOPE_MARKER + row.SerializeToString()))
    assert raised.value.field == "preset_deals[0].hands[1].cards[2]"


def test_a_refused_actions_claim_keeps_the_whole_refusal_and_an_accepted_one_none() -> None:
    refused = Refusal(
        code=9,
        reason="the match is over",
        reason_code="MATCH_OVER",
        field="action.bid.tricks",
        metadata={"sequence": "7"},
    )
    assert journal.decode_claim(journal.encode_refusal(refused)) == refused
    assert journal.decode_claim(ACCEPTED_CLAIM) is None


def test_kind_of_reads_a_legacy_row_and_an_empty_event() -> None:
    taken = events_pb2.Event()
    taken.seat_taken.player.name = "Eve"
    taken.seat_taken.player.seat = cards_pb2.SEAT_EAST
    assert journal.kind_of(stored(legacy_row(taken, log_pb2.LegacyEvent()))) == "seat_taken"
    assert journal.kind_of(stored(taken.SerializeToString())) == "seat_taken"
    empty = log_pb2.LogEntry(event=events_pb2.Event(), action_id="a")
    assert journal.kind_of(stored(ENVELOPE_MARKER + empty.SerializeToString())) == ""
