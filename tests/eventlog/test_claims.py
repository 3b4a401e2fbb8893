"""Claims: write-once keys beside a stream, alone or with an append, the first one winning.

The server keeps each action id's first result this way (an acceptance claims its id with its
events, a refusal alone), so these run on every backend, and on PostgreSQL also with two log
instances on one schema (two replicas).
"""

from __future__ import annotations

import asyncio

import pytest

from spades_server.eventlog import EventLog, PostgresEventLog
from spades_server.eventlog.base import ClaimTaken, VersionConflict

from .conftest import SHARED_LOG, NewLog

pytestmark = pytest.mark.asyncio

DEADLINE = 10.0


async def test_the_first_claim_of_a_key_wins(log: EventLog) -> None:
    assert await log.read_claim("t", "0/a") is None
    assert await log.claim("t", "0/a", b"first") is None
    assert await log.claim("t", "0/a", b"second") == b"first"
    assert await log.read_claim("t", "0/a") == b"first"
    # Keys are per stream, and a claim takes no version.
    assert await log.claim("other", "0/a", b"elsewhere") is None
    assert await log.stream_version("t") == 0
    assert await log.read_all() == []


async def test_an_append_claims_its_key_with_its_events_or_writes_nothing(log: EventLog) -> None:
    stored = await log.append("t", 0, [b"one"], claim=("0/a", b""))
    assert [event.version for event in stored] == [1]
    assert await log.read_claim("t", "0/a") == b""
    with pytest.raises(ClaimTaken) as taken:
        await log.append("t", 1, [b"two"], claim=("0/a", b"again"))
    assert taken.value.data == b"" and taken.value.key == "0/a"
    assert await log.stream_version("t") == 1, "nothing of the refused append was written"
    # A claim taken alone first keeps the append out too.
    assert await log.claim("t", "0/b", b"refused") is None
    with pytest.raises(ClaimTaken) as first:
        await log.append("t", 1, [b"two"], claim=("0/b", b""))
    assert first.value.data == b"refused"
    assert await log.stream_version("t") == 1


async def test_an_append_at_a_stale_version_claims_nothing(log: EventLog) -> None:
    await log.append("t", 0, [b"one"])
    with pytest.raises(VersionConflict):
        await log.append("t", 0, [b"other"], claim=("0/a", b""))
    assert await log.read_claim("t", "0/a") is None
    await log.append("t", 1, [b"two"], claim=("0/a", b""))
    assert await log.read_claim("t", "0/a") == b""


async def _race(logs: list[EventLog]) -> list[str]:
    """Ten claims and ten claiming appends of one key, at once: who won."""

    async def claim(log: EventLog, number: int) -> str:
        first = await log.claim("t", "2/x", f"refusal {number}".encode())
        return f"refusal {number}" if first is None else ""

    async def append(log: EventLog, number: int) -> str:
        while True:
            version = await log.stream_version("t")
            try:
                await log.append("t", version, [f"event {number}".encode()], claim=("2/x", b""))
            except VersionConflict:
                continue
            except ClaimTaken:
                return ""
            return f"event {number}"

    async with asyncio.timeout(DEADLINE):
        outcomes = await asyncio.gather(
            *(claim(logs[number % len(logs)], number) for number in range(10)),
            *(append(logs[number % len(logs)], number) for number in range(10)),
        )
    return [outcome for outcome in outcomes if outcome]


async def test_racing_claims_and_appends_have_one_winner(log: EventLog) -> None:
    winners = await _race([log])
    assert len(winners) == 1
    events = await log.read("t")
    kept = await log.read_claim("t", "2/x")
    if winners[0].startswith("event"):
        assert [event.data.decode() for event in events] == winners and kept == b""
    else:
        assert events == [] and kept == winners[0].encode()


# The embedded log has one process: only PostgreSQL is shared by replicas.
@pytest.mark.parametrize("backend", [SHARED_LOG], ids=["postgres"], indirect=True)
async def test_two_replicas_agree_on_the_first_claim(new_log: NewLog) -> None:
    first, second = new_log(), new_log()
    assert isinstance(first, PostgresEventLog)
    await first.open()
    await second.open()
    winners = await _race([first, second])
    assert len(winners) == 1
    assert await first.read_claim("t", "2/x") == await second.read_claim("t", "2/x")
    assert len(await second.read("t")) == (1 if winners[0].startswith("event") else 0)
