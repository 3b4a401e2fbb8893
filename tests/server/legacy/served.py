"""What a server serves from the legacy fixture log, as JSON, to compare across versions.

``expected.json`` was written by :func:`main` with the server of commit 353ebd6 (before the
private log envelope), so the new server must serve the same: lobby summaries, records, and
every stream's snapshot and catch-up events, for spectators, each seat, and the substitute.
Action ids are left out (they reached every viewer then; now only the actor) and checked apart.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import grpc
from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message

from spades.v1 import lobby_pb2, play_pb2
from spades_server.eventlog.sqlite import SqliteEventLog
from tests.support.clients import Client, watch
from tests.support.servers import running_server

HERE = Path(__file__).parent
MANIFEST = json.loads((HERE / "legacy.json").read_text())


def as_json(message: Message) -> Any:
    return MessageToDict(message, preserving_proto_field_name=True)


def without_action_ids(messages: list[Any]) -> list[Any]:
    for message in messages:
        event = message.get("event")
        if event is not None:
            event.pop("action_id", None)
    return messages


async def seat_stream_catch_up(client: Client, token: str, count: int) -> list[Any]:
    """A Play stream from sequence 1: its snapshot, then events up to sequence ``count``
    (prompts skipped)."""
    stream = client.seat_stream(token)
    try:
        out = [as_json(await stream.start(after_sequence=1))]
        while len(out) < count:
            message = await stream.next()
            if message.WhichOneof("kind") == "event":
                out.append(as_json(message))
        return out
    finally:
        await stream.close()


async def logged_counts(database: Path) -> dict[str, int]:
    """How many events each fixture table's log holds (the server's clock may add more: a
    turn of the table in play timed out long ago)."""
    log = SqliteEventLog(str(database))
    await log.open()
    try:
        return {name: len(await log.read(entry["table_id"])) for name, entry in MANIFEST.items()}
    finally:
        await log.close()


async def served(client: Client, counts: dict[str, int]) -> dict[str, Any]:
    """Everything compared, up to each table's fixture events (``counts``)."""
    out: dict[str, Any] = {}
    for name, entry in MANIFEST.items():
        table_id = entry["table_id"]
        count = counts[name]
        summary = as_json(
            (await client.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table_id))).table
        )
        summary.pop("sequence")
        answer = await client.play.GetRecord(play_pb2.GetRecordRequest(table_id=table_id))
        record = as_json(answer.record)
        record["events"] = without_action_ids(
            [{"event": event} for event in record["events"][:count]]
        )
        spectator = watch(client, table_id, after_sequence=1)
        try:
            watched = [as_json(await spectator.snapshot())]
            while len(watched) < count:
                watched.append(as_json(await spectator.next()))
        finally:
            spectator.close()
        seats = {}
        substitute = entry.get("substitute")
        for seat, token in entry["tokens"].items():
            if substitute is not None and int(seat) == substitute["seat"]:
                continue  # its player's stream would take the seat back (checked apart)
            seats[seat] = without_action_ids(await seat_stream_catch_up(client, token, count))
        if substitute is not None:
            seats["substitute"] = without_action_ids(
                await seat_stream_catch_up(client, substitute["token"], count)
            )
        out[name] = {
            "summary": summary,
            "record": record,
            "watch": without_action_ids(watched),
            "seats": seats,
        }
    return out


async def main(scratch: Path) -> None:
    shutil.copy(HERE / "legacy.db", scratch / "legacy.db")
    counts = await logged_counts(scratch / "legacy.db")
    async with (
        running_server(scratch / "legacy.db", house_bots=0) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
    ):
        result = await served(Client(channel), counts)
    (HERE / "expected.json").write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))
