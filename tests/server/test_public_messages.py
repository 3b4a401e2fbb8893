"""No public ``spades.v1`` message has a field for a server secret, and an action id reaches
only the stream of the seat that acted."""

from __future__ import annotations

import importlib
import pkgutil
import random
import re
from pathlib import Path

import pytest
from google.protobuf.descriptor import Descriptor, FileDescriptor

import spades.v1
from spades import protocol
from spades.engine import Rules
from spades.v1 import events_pb2, lobby_pb2, play_pb2
from tests.support.clients import Client, watch
from tests.support.seats import play_turns

#: Every proto file of the public API (each generated ``*_pb2`` module of spades.v1).
FILES: list[FileDescriptor] = [
    importlib.import_module(info.name).DESCRIPTOR
    for info in pkgutil.iter_modules(spades.v1.__path__, "spades.v1.")
    if info.name.endswith("_pb2")
]
SECRET_LIKE = re.compile(r"seed|digest|sha256|token|secret|join_code|preset|key")
#: Fields named like a secret that are not one, each with why.
ALLOWED = {
    # Public by design: the commitment, and the seed once the match has ended.
    "spades.v1.TableCreated.seed_commitment": "a hash published so deals can be verified",
    "spades.v1.SeedRevealed.seed": "revealed when the match ends",
    "spades.v1.Event.seed_revealed": "the SeedRevealed event",
    "spades.v1.GameRecord.seed_commitment": "as TableCreated's",
    "spades.v1.GameRecord.seed": "only in the record of a finished match (revealed)",
    "spades.v1.GameRecord.preset_deals": "only in the record of a finished match (revealed)",
    "spades.v1.MatchView.seed_commitment": "as TableCreated's",
    "spades.v1.MatchView.seed": "only once the match has ended (revealed)",
    # Sealed notes (docs/records.md): a salted commitment public at once, the key at the end.
    "spades.v1.Event.note_sha256": "a salted commitment to the action's note, never the note",
    "spades.v1.GameRecord.note_key": "only in the record of a finished match (revealed)",
    # A caller's own secret, in its own request or answer: never in a message for others.
    "spades.v1.JoinTableRequest.join_code": "the joiner sends the code it was given",
    "spades.v1.AddHouseBotRequest.join_code": "the caller sends the code it was given",
    "spades.v1.CreateTableResponse.join_code": "to the table's creator only",
    "spades.v1.CreateTableWithDealsResponse.join_code": "to the operator only",
    "spades.v1.CreateTableWithDealsRequest.seed": "the operator's input",
    "spades.v1.JoinTableResponse.seat_token": "to the seat's own player only",
    "spades.v1.CreateAccountResponse.key": "to the account's creator only, once",
    "spades.v1.RotateKeyResponse.key": "to the account (or the operator) only, once",
    "spades.v1.Account.key_revoked": "whether the key is revoked, not the key",
    "spades.v1.AccountEvent.key_issued": "that a key was issued (its digest is the server's)",
    "spades.v1.AccountEvent.key_revoked": "that the key was revoked",
    "spades.v1.TableDetail.preset_deals": "a count, to the operator only",
    # Paging cursors, not credentials.
    "spades.v1.ListTablesRequest.page_token": "a cursor",
    "spades.v1.ListTablesResponse.next_page_token": "a cursor",
    "spades.v1.ListTablesDetailedRequest.page_token": "a cursor",
    "spades.v1.ListTablesDetailedResponse.next_page_token": "a cursor",
    "spades.v1.GetRatingsRequest.page_token": "a cursor",
    "spades.v1.GetRatingsResponse.next_page_token": "a cursor",
    "spades.v1.ListLeaderboardRequest.page_token": "a cursor",
    "spades.v1.ListLeaderboardResponse.next_page_token": "a cursor",
    "spades.v1.ListChallengesRequest.page_token": "a cursor",
    "spades.v1.ListChallengesResponse.next_page_token": "a cursor",
    "spades.v1.ListTournamentsRequest.page_token": "a cursor",
    "spades.v1.ListTournamentsResponse.next_page_token": "a cursor",
    "spades.v1.ListOnlineBotsRequest.page_token": "a cursor",
    "spades.v1.ListOnlineBotsResponse.next_page_token": "a cursor",
    "spades.v1.ListGamesRequest.page_token": "a cursor",
    "spades.v1.ListGamesResponse.next_page_token": "a cursor",
    # A tournament's seed: committed at creation, revealed when it ends (docs/tournaments.md).
    "spades.v1.Tournament.seed_commitment": "a hash published so every board can be verified",
    "spades.v1.Tournament.seed": "only once the tournament has ended (revealed)",
    "spades.v1.TournamentCreated.seed_commitment": "as Tournament's",
    "spades.v1.TournamentEnded.seed": "the seed revealed when the tournament ends",
    # An analysis's worlds are drawn from a seed of the analysis's own, not the table's.
    "spades.v1.Analysis.seed": "what the sampled worlds are drawn from (a finished match's)",
    # People (docs/accounts.md): each shown once, to whoever signed in or made the bot.
    "spades.v1.SignUpResponse.session_token": "the new session's token, shown once",
    "spades.v1.SignInResponse.session_token": "the new session's token, shown once",
    "spades.v1.CreateBotResponse.key": "the new bot's key, shown once to its owner",
}


def secret_like_fields(message: Descriptor) -> list[str]:
    found = [
        f"{message.full_name}.{field.name}"
        for field in message.fields
        if SECRET_LIKE.search(field.name)
    ]
    for nested in message.nested_types:
        found += secret_like_fields(nested)
    return found


def test_no_public_message_has_a_field_for_a_secret() -> None:
    found = [
        name
        for file in FILES
        for message in file.message_types_by_name.values()
        for name in secret_like_fields(message)
    ]
    unexpected = sorted(set(found) - set(ALLOWED))
    assert not unexpected, f"fields named like a secret in spades.v1: {unexpected}"
    assert set(ALLOWED) <= set(found), "ALLOWED names a field that is gone: drop it"


def test_every_proto_file_of_the_api_is_walked() -> None:
    listed = {file.name for file in FILES}
    assert "spades/v1/events.proto" in listed and len(listed) >= 9
    imported = {dependency.name for file in FILES for dependency in file.dependencies}
    assert {name for name in imported if name.startswith("spades/v1/")} <= listed


@pytest.mark.asyncio
async def test_an_action_id_reaches_only_the_acting_seats_own_stream(client: Client) -> None:
    created = await client.create_table(Rules(max_hands=1))
    table_id = created.table.table_id
    tokens = await client.seat_all(table_id)
    streams = await client.started_streams(tokens)
    spectator = watch(client, table_id)
    await spectator.snapshot()

    def some_plays(now: play_pb2.Snapshot) -> bool:
        return now.sequence >= 40

    await play_turns(client, table_id, streams, random.Random(3), until=some_plays)
    head = (await client.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table_id))).table
    while not spectator.events() or spectator.events()[-1].sequence < head.sequence:
        await spectator.next()
    assert not any(event.action_id for event in spectator.events())
    acted = 0
    for seat, stream in streams.items():
        while not stream.events() or stream.events()[-1].event.sequence < head.sequence:
            await stream.next()
        for message in stream.events():
            event = message.event
            actor = protocol.event_from_proto(event).actor
            if actor == seat and event.WhichOneof("kind") in ("bid_made", "card_played"):
                assert event.action_id, f"seat {seat} lost its own action id"
                acted += 1
            elif event.action_id:
                assert actor == seat, f"seat {seat} saw seat {actor}'s action id"
        await stream.close()
    spectator.close()
    assert acted >= 12


DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"
PROTOS = Path(__file__).resolve().parents[2] / "protos" / "spades" / "v1"
REMOVED_ROW = re.compile(r"^\| `(\w+)` \| `(\w+)` \((\d+)\) \| removed, number reserved \|$", re.M)


def test_the_protocol_note_names_every_removed_field_and_each_is_reserved() -> None:
    removed = REMOVED_ROW.findall(DOC.read_text())
    assert len(removed) == 5
    source = (PROTOS / "events.proto").read_text()
    for message, field, number in removed:
        descriptor = events_pb2.DESCRIPTOR.message_types_by_name[message]
        assert field not in descriptor.fields_by_name
        assert int(number) not in descriptor.fields_by_number
        body = source[source.index(f"message {message} {{") :]
        body = body[: body.index("\n}")]
        assert re.search(rf"reserved [\d, ]*\b{number}\b", body), (message, number)
        assert f'"{field}"' in body, (message, field)
