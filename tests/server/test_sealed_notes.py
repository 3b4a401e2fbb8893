"""Sealed notes (docs/records.md): a seat's note on an action reaches no one before the match
ends, not its partner, not a browser over gRPC-Web, not the lobby; it is kept in the log (a
restarted server reveals it); and a note the server cannot keep is refused, changing nothing.

On both log backends. tests/server/test_no_leaks.py checks every stream, snapshot, view and
record of whole matches of every variation for the notes, natively; this suite adds the web
port, the lobby, the partner's own stream over gRPC-Web, refusals and durability.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import struct
import uuid
from collections.abc import AsyncIterator

import aiohttp
import grpc
import pytest

from spades import notes, protocol, records
from spades.engine import Rules
from spades.v1 import actions_pb2, lobby_pb2, play_pb2, record_pb2
from spades_server.api.web import frame, unframe
from spades_server.app.server import SpadesServer
from spades_server.ops.settings import Settings
from tests.support.backends import LogStorage, Storages
from tests.support.clients import (
    READ_TIMEOUT,
    TOKEN_KEY,
    Client,
    SeatStream,
    close_streams,
    current_view,
    rpc_error,
)
from tests.support.refusals import assert_action_refused, assert_call_refused, nothing_written
from tests.support.seats import choices_of
from tests.support.servers import log_entries, log_head, running_server

#: In every note of these tests: found nowhere but in the finished match's record.
MARKER = "sealed-note-c41f"
WEB = "application/grpc-web+proto"
RULES = Rules(max_hands=1)


def note_for(seat: int, sequence: int) -> bytes:
    return f"{MARKER} from seat {seat} at {sequence}: ♠ led because…".encode()


async def act_with_note(
    stream: SeatStream, action: actions_pb2.Action, sequence: int, note: bytes
) -> play_pb2.ActionResult:
    action_id = uuid.uuid4().hex
    await stream.call.write(
        play_pb2.PlayRequest(
            action=play_pb2.ActionRequest(
                action_id=action_id, sequence=sequence, action=action, note=note
            )
        )
    )
    return await stream.act_result(action_id)


async def play_with_notes(
    stream: SeatStream, seat: int, sent: dict[int, bytes], rng: random.Random
) -> None:
    """Answer the seat's every prompt with a note until SeedRevealed."""
    while True:
        message = await stream.next()
        kind = message.WhichOneof("kind")
        if kind == "event" and message.event.WhichOneof("kind") == "seed_revealed":
            return
        if kind != "prompt":
            continue
        prompt = message.prompt
        note = note_for(seat, prompt.sequence)
        result = await act_with_note(stream, rng.choice(choices_of(prompt)), prompt.sequence, note)
        assert result.accepted, result
        sent[result.sequence] = note


def check_revealed(record: record_pb2.GameRecord, sent: dict[int, bytes]) -> None:
    """The finished record has every note sent, each committed to by its action's event."""
    assert {note.sequence: note.text.encode() for note in record.notes} == sent
    for note in record.notes:
        event = record.events[note.sequence - 1]
        assert event.note_sha256 == notes.note_digest(
            record.note_key, note.sequence, note.text.encode()
        )


# ------------------------------------------------------------------------- refusals


@pytest.mark.asyncio
async def test_a_note_too_long_or_not_utf8_is_refused_and_nothing_changes(
    client: Client, server: SpadesServer
) -> None:
    created = await client.create_table(RULES)
    table_id = created.table.table_id
    tokens = await client.seat_all(table_id)
    turn = protocol.seat_from_proto((await current_view(client, table_id)).view.turn)
    stream = client.seat_stream(tokens[turn])
    await stream.start(after_sequence=0)
    prompt = (await stream.next_of("prompt")).prompt
    action = choices_of(prompt)[0]
    head = await log_head(server)
    too_long = ("é" * (notes.MAX_NOTE_BYTES // 2) + "!").encode()
    for note, reason in ((too_long, "FIELD_TOO_LONG"), (b"ok \xff\xfe", "INVALID_NOTE")):
        async with nothing_written(server):
            on_stream = await act_with_note(stream, action, prompt.sequence, note)
            assert_action_refused(on_stream, grpc.StatusCode.INVALID_ARGUMENT, reason, "note")
        assert MARKER not in on_stream.reason and "é" not in on_stream.reason
        acting = client.play.Act(
            play_pb2.ActRequest(
                action=play_pb2.ActionRequest(
                    action_id=uuid.uuid4().hex, sequence=prompt.sequence, action=action, note=note
                )
            ),
            metadata=((TOKEN_KEY, tokens[turn]),),
        )
        if reason == "FIELD_TOO_LONG":  # Act's lengths are checked as the call's, like any
            async with nothing_written(server):
                error = await rpc_error(acting)
                assert_call_refused(error, grpc.StatusCode.INVALID_ARGUMENT, reason, "action.note")
        else:
            result = (await acting).result
            assert_action_refused(result, grpc.StatusCode.INVALID_ARGUMENT, reason, "note")
    assert await log_head(server) == head, "a refused note changed the log"
    # At the limit: accepted, and kept in the log's envelope, never in the public event.
    longest = "é" * (notes.MAX_NOTE_BYTES // 2)
    accepted = await act_with_note(stream, action, prompt.sequence, longest.encode())
    assert accepted.accepted, accepted
    entry = (await log_entries(server, table_id))[accepted.sequence - 1]
    assert entry.secrets.note == longest.encode()
    assert longest.encode()[:64] not in entry.message.SerializeToString()
    await stream.close()


# ------------------------------------------------------------------------- gRPC-Web, lobby


async def web_unary(
    session: aiohttp.ClientSession, server: SpadesServer, method: str, request: bytes
) -> bytes:
    """A unary gRPC-Web call's whole response body (messages and trailers, as sent)."""
    async with session.post(
        f"{server.web_url}{method}",
        data=frame(0, request),
        headers={"Content-Type": WEB, "X-Grpc-Web": "1"},
    ) as response:
        assert response.status == 200
        return await response.read()


def web_message(body: bytes) -> bytes:
    """The one message of a unary gRPC-Web response body."""
    messages = [payload for flag, payload in unframe(body) if not flag & 0x80]
    assert len(messages) == 1, body[:200]
    return messages[0]


async def read_frame(response: aiohttp.ClientResponse) -> tuple[int, bytes]:
    header = await asyncio.wait_for(response.content.readexactly(5), READ_TIMEOUT)
    flag, length = struct.unpack(">BI", header)
    return flag, await asyncio.wait_for(response.content.readexactly(length), READ_TIMEOUT)


@contextlib.asynccontextmanager
async def web_stream(
    session: aiohttp.ClientSession,
    server: SpadesServer,
    method: str,
    request: bytes,
    token: str | None = None,
) -> AsyncIterator[aiohttp.ClientResponse]:
    headers = {"Content-Type": WEB, "X-Grpc-Web": "1"}
    if token is not None:
        headers[TOKEN_KEY] = token
    async with session.post(
        f"{server.web_url}{method}", data=frame(0, request), headers=headers
    ) as response:
        assert response.status == 200
        yield response


async def web_watch(
    session: aiohttp.ClientSession, server: SpadesServer, table_id: str, bodies: list[bytes]
) -> None:
    """A browser's Watch stream from the start to SeedRevealed: every frame kept, raw."""
    request = play_pb2.WatchRequest(table_id=table_id).SerializeToString()
    async with web_stream(session, server, "spades.v1.PlayService/Watch", request) as response:
        while True:
            flag, payload = await read_frame(response)
            bodies.append(payload)
            if flag & 0x80:
                return
            message = play_pb2.WatchResponse.FromString(payload)
            if message.WhichOneof("kind") == "event" and message.event.HasField("seed_revealed"):
                return


async def web_seat(
    session: aiohttp.ClientSession,
    server: SpadesServer,
    token: str,
    seat: int,
    sent: dict[int, bytes],
    bodies: list[bytes],
    rng: random.Random,
) -> None:
    """A browser playing ``seat``: its Seat stream over gRPC-Web (every frame kept, raw), its
    actions through Act over gRPC-Web, each with a note."""
    request = play_pb2.SeatRequest().SerializeToString()
    async with web_stream(
        session, server, "spades.v1.PlayService/Seat", request, token
    ) as response:
        while True:
            flag, payload = await read_frame(response)
            bodies.append(payload)
            assert not flag & 0x80, payload
            message = play_pb2.SeatResponse.FromString(payload)
            kind = message.WhichOneof("kind")
            if kind == "event" and message.event.HasField("seed_revealed"):
                return
            if kind != "prompt":
                continue
            prompt = message.prompt
            note = note_for(seat, prompt.sequence)
            act = play_pb2.ActRequest(
                action=play_pb2.ActionRequest(
                    action_id=uuid.uuid4().hex,
                    sequence=prompt.sequence,
                    action=rng.choice(choices_of(prompt)),
                    note=note,
                )
            )
            async with session.post(
                f"{server.web_url}spades.v1.PlayService/Act",
                data=frame(0, act.SerializeToString()),
                headers={"Content-Type": WEB, "X-Grpc-Web": "1", TOKEN_KEY: token},
            ) as answer:
                result = play_pb2.ActResponse.FromString(web_message(await answer.read())).result
            assert result.accepted, result
            sent[result.sequence] = note


@contextlib.asynccontextmanager
async def web_served(storage: LogStorage) -> AsyncIterator[SpadesServer]:
    """A started server on ``storage`` (either backend) with its web port, for gRPC-Web."""
    server = SpadesServer(
        Settings(
            listen="127.0.0.1:0",
            database=str(storage.database),
            metrics="off",
            web="127.0.0.1:0",
            house_bots=0,
        ),
        storage.new_log() if storage.backend == "postgres" else None,
    )
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@pytest.mark.asyncio
async def test_no_note_reaches_a_browser_the_partner_or_the_lobby_before_the_end(
    storage: Storages,
) -> None:
    async with (
        web_served(storage()) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
        aiohttp.ClientSession() as session,
    ):
        client = Client(channel)
        created = await client.create_table(RULES)
        table_id = created.table.table_id
        tokens = await client.seat_all(table_id)
        seen: list[bytes] = []  # every byte a browser or the lobby was sent before the end
        watched: list[bytes] = []
        watching = asyncio.create_task(web_watch(session, server, table_id, watched))
        sent: dict[int, bytes] = {}
        rng = random.Random(7)
        # North, East and West play natively; South, North's partner, in a browser.
        streams = {seat: client.seat_stream(tokens[seat]) for seat in (0, 1, 3)}
        for stream in streams.values():
            await stream.start(after_sequence=0)
        south: list[bytes] = []
        players = [
            *(play_with_notes(stream, seat, sent, rng) for seat, stream in streams.items()),
            web_seat(session, server, tokens[2], 2, sent, south, rng),
        ]
        playing = asyncio.gather(*players)

        async def look_around() -> None:
            """While the match is played: the record, views and the lobby, over gRPC-Web."""
            record_request = play_pb2.GetRecordRequest(table_id=table_id).SerializeToString()
            view_request = play_pb2.GetViewRequest(table_id=table_id).SerializeToString()
            lobby = (
                ("spades.v1.LobbyService/GetTable", lobby_pb2.GetTableRequest(table_id=table_id)),
                ("spades.v1.LobbyService/ListTables", lobby_pb2.ListTablesRequest()),
            )
            while not playing.done():
                body = await web_unary(
                    session, server, "spades.v1.PlayService/GetRecord", record_request
                )
                record = play_pb2.GetRecordResponse.FromString(web_message(body)).record
                if any(event.HasField("match_ended") for event in record.events):
                    return
                seen.append(body)
                assert not record.notes and not record.note_key
                seen.append(
                    await web_unary(session, server, "spades.v1.PlayService/GetView", view_request)
                )
                for method, request in lobby:
                    seen.append(
                        await web_unary(session, server, method, request.SerializeToString())
                    )
                await asyncio.sleep(0)

        looking = asyncio.create_task(look_around())
        await asyncio.wait_for(playing, 60)
        await asyncio.wait_for(looking, READ_TIMEOUT)
        await asyncio.wait_for(watching, READ_TIMEOUT)
        await close_streams(streams)

        assert len(seen) > 8 and south and watched
        assert {sequence for sequence in sent} and len(sent) > 20
        note_key = (await server.store.load(table_id)).note_key
        marker = MARKER.encode()
        for where, bodies in (("the lobby and records", seen), ("Watch", watched)):
            for body in bodies:
                assert marker not in body and note_key not in body, f"a note reached {where}"
        # South's own notes go out on no stream either, its own included: only the record.
        for body in south:
            assert marker not in body and note_key not in body, "a note reached South's stream"
        committed = [play_pb2.SeatResponse.FromString(body) for body in south]
        assert sum(bool(m.event.note_sha256) for m in committed) == len(sent)

        # After the end, over gRPC-Web: the record reveals every note, South's and North's.
        body = await web_unary(
            session,
            server,
            "spades.v1.PlayService/GetRecord",
            play_pb2.GetRecordRequest(table_id=table_id).SerializeToString(),
        )
        final = play_pb2.GetRecordResponse.FromString(web_message(body)).record
        assert final.note_key == note_key
        check_revealed(final, sent)
        assert {protocol.seat_from_proto(note.seat) for note in final.notes} == {0, 1, 2, 3}
        records.verify(final)


# ------------------------------------------------------------------------- durability


@pytest.mark.asyncio
async def test_a_note_survives_a_restart_and_another_server_reveals_it(
    storage: Storages,
) -> None:
    """Acknowledged is kept: a note accepted by one server is revealed by the next, which
    finishes the match on the same log."""
    rng = random.Random(3)
    sent: dict[int, bytes] = {}
    async with (
        running_server(storage(), house_bots=0) as first,
        grpc.aio.insecure_channel(f"127.0.0.1:{first.port}") as channel,
    ):
        client = Client(channel)
        table_id = (await client.create_table(RULES)).table.table_id
        tokens = await client.seat_all(table_id)
        turn = protocol.seat_from_proto((await current_view(client, table_id)).view.turn)
        stream = client.seat_stream(tokens[turn])
        await stream.start(after_sequence=0)
        prompt = (await stream.next_of("prompt")).prompt
        note = note_for(turn, prompt.sequence)
        result = await act_with_note(stream, choices_of(prompt)[0], prompt.sequence, note)
        assert result.accepted, result
        sent[result.sequence] = note
        await stream.close()
    async with (
        running_server(storage(), house_bots=0) as second,
        grpc.aio.insecure_channel(f"127.0.0.1:{second.port}") as channel,
    ):
        client = Client(channel)
        early = (await client.play.GetRecord(play_pb2.GetRecordRequest(table_id=table_id))).record
        assert not early.notes and MARKER.encode() not in early.SerializeToString()
        streams = [client.seat_stream(token) for token in tokens]
        for stream in streams:
            await stream.start(after_sequence=0)
        await asyncio.wait_for(
            asyncio.gather(
                *(play_with_notes(stream, seat, sent, rng) for seat, stream in enumerate(streams))
            ),
            60,
        )
        final = (await client.play.GetRecord(play_pb2.GetRecordRequest(table_id=table_id))).record
        check_revealed(final, sent)
        assert note in {n.text.encode() for n in final.notes}
        for stream in streams:
            await stream.close()
