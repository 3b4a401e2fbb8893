"""A child process for the crash test: appends forever and prints every acknowledged append.

``python crash_writer.py PATH DURABILITY STREAMS``: one task per stream appends two events at a
time and, once the append returned (its COMMIT is done), prints ``STREAM VERSION`` and flushes.
The test SIGKILLs this process and checks that every printed version survived.
"""

from __future__ import annotations

import asyncio
import sys

from spades_server.eventlog import Durability, SqliteEventLog


def payload(stream_id: str, version: int) -> bytes:
    return f"{stream_id}#{version}".encode()


async def write_forever(log: SqliteEventLog, stream_id: str) -> None:
    version = 0
    while True:
        await log.append(
            stream_id, version, [payload(stream_id, version + 1), payload(stream_id, version + 2)]
        )
        version += 2
        print(stream_id, version, flush=True)


async def main(path: str, durability: Durability, streams: int) -> None:
    log = SqliteEventLog(path, durability=durability)
    await log.open()
    print("ready", flush=True)
    await asyncio.gather(*(write_forever(log, f"stream-{n}") for n in range(streams)))


if __name__ == "__main__":
    durability: Durability = "full" if sys.argv[2] == "full" else "normal"
    asyncio.run(main(sys.argv[1], durability, int(sys.argv[3])))
