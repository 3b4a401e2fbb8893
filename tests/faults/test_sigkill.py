"""SIGKILL in the middle of many running matches, then a restart on the same log and port.

A real ``spades-server`` process serves ``TABLES`` tables, each played by four SDK bots (one
client, so one channel, per table) in this process. Once every table has accepted actions, the
server is killed with SIGKILL (no shutdown: streams just break) and a new process is started on
the same log (the SQLite file, or the PostgreSQL schema: the test runs on both) and the same
port. The bots are left alone: they reconnect with back-off, resume from their last sequence,
resend what was never answered, and finish every match. Then, from the log itself:

- every action the server acknowledged (an accepted ActionResult, journaled by the client) is in
  the log exactly once, at the sequence the result named, as the acting seat's;
- no action id causes events twice, and each seat's action ids in the log are exactly those its
  bot counted as applied;
- each table's versions are contiguous (1..n);
- each table replays from scratch to the state the server serves: its GetTable summary, its
  record (GetRecord), and the spectator's view at the latest sequence.
"""

from __future__ import annotations

import asyncio
import functools
import signal
import time
from pathlib import Path

import pytest

from spades.bot import MatchOutcome, play_match
from spades.client import SpadesClient
from spades.client.client import DEFAULT_CHANNEL_OPTIONS
from spades.engine import Rules
from spades.records import events_of
from tests.support.backends import Storages
from tests.support.faults import (
    Accepted,
    Paced,
    RecordingClient,
    assert_acknowledged_once,
    assert_contiguous,
    assert_each_action_id_in_one_place,
    assert_log_is_truth,
    engine_events,
    eventually,
    read_log,
    replayed_state,
    seat_four,
    sequence_reaches,
    served_snapshots,
)
from tests.support.processes import free_port, kill, server_args, server_process

TABLES = 8
RULES = Rules(max_hands=3)
#: SIGKILLs in a row (each restart is killed again once every table has moved on).
KILLS = 2
#: Accepted actions every table must have gained before each kill.
PROGRESS = 12
#: Until the last kill, a table this many accepted actions ahead of the slowest one waits for
#: it: on a loaded machine some tables get many more turns than others, and no match may end
#: before the kills.
LEAD = 24
FINISH_TIMEOUT = 60.0


def note(ids: set[str], accepted: Accepted) -> None:
    ids.add(accepted.action_id)


@pytest.mark.asyncio
async def test_sigkill_mid_play_loses_nothing_and_every_match_finishes(
    tmp_path: Path, storage: Storages
) -> None:
    database = storage()
    await database.prepare()
    args = server_args(database, free_port())
    clients: dict[str, RecordingClient] = {}
    tokens: dict[str, list[str]] = {}
    tasks: dict[str, list[asyncio.Future[MatchOutcome]]] = {}
    #: The ids of each table's accepted actions (kept up to date by the clients' journals).
    accepted_ids: dict[str, set[str]] = {}
    pacing = True
    killed_after: list[list[int]] = []
    observer: SpadesClient | None = None

    def progress(table_id: str) -> int:
        return len(accepted_ids[table_id])

    def reached(target: dict[str, int]) -> bool:
        return all(progress(table_id) >= count for table_id, count in target.items())

    def too_far_ahead(table_id: str) -> bool:
        return pacing and progress(table_id) > min(map(len, accepted_ids.values())) + LEAD

    try:
        for run in range(KILLS):
            async with server_process(tmp_path / f"run-{run}.log", *args) as running:
                if run == 0:
                    for index in range(TABLES):
                        client = RecordingClient(running.address)
                        table_id, seat_tokens = await seat_four(client, RULES, f"sigkill {index}")
                        clients[table_id], tokens[table_id] = client, seat_tokens
                        ids: set[str] = set()
                        accepted_ids[table_id] = ids
                        for token in seat_tokens:
                            client.journals[token].on_accepted = functools.partial(note, ids)
                    for table_id, seat_tokens in tokens.items():
                        hold = functools.partial(too_far_ahead, table_id)
                        tasks[table_id] = [
                            asyncio.ensure_future(
                                play_match(
                                    clients[table_id], Paced(seat, hold), token, table_id=table_id
                                )
                            )
                            for seat, token in enumerate(seat_tokens)
                        ]
                target = {table_id: progress(table_id) + PROGRESS for table_id in tokens}
                await eventually(
                    functools.partial(reached, target),
                    30,
                    f"every table accepts {PROGRESS} more actions",
                )
                # Nothing awaited between this check and the signal: every match is in play.
                ended = [table for table, each in tasks.items() if any(t.done() for t in each)]
                running.terminate(signal.SIGKILL)
                killed_at = time.monotonic()
                killed_after.append(sorted(progress(table_id) for table_id in tokens))
                assert ended == [], "a match ended before the kill"
                assert await kill(running, signal.SIGKILL) == -signal.SIGKILL
        pacing = False

        async with server_process(tmp_path / "last.log", *args) as last:
            restarted_at = time.monotonic()
            # What the restarted server serves at once, rebuilt from the log alone (the bots
            # may already be back: each view is checked at its own sequence). A channel of its
            # own (gRPC shares subchannels between channels to one address): the bots' may
            # still be waiting out their reconnection back-off.
            observer = SpadesClient(
                last.address,
                channel_options=(*DEFAULT_CHANNEL_OPTIONS, ("grpc.use_local_subchannel_pool", 1)),
            )
            recovered = await served_snapshots(observer, list(tokens))
            everything = asyncio.gather(*(task for each in tasks.values() for task in each))
            await asyncio.wait_for(everything, FINISH_TIMEOUT)
            finished_at = time.monotonic()
            outcomes = {
                table_id: [task.result() for task in each] for table_id, each in tasks.items()
            }
            records = {table_id: await observer.get_record(table_id) for table_id in tokens}
            # The lobby may lag the log a moment on PostgreSQL (servers.lobby_caught_up says why).
            for table_id, record in records.items():
                await sequence_reaches(observer, table_id, len(record.events))
            summaries = {table_id: await observer.get_table(table_id) for table_id in tokens}
            snapshots = await served_snapshots(observer, list(tokens))
            assert await kill(last, signal.SIGTERM) == 0, last.log_path.read_text()
    finally:
        for each in tasks.values():
            for task in each:
                task.cancel()
        everyone: list[SpadesClient] = [*clients.values()]
        for each_client in [*everyone, *([observer] if observer is not None else [])]:
            await each_client.close()

    spans = ", ".join(f"{counts[0]}..{counts[-1]}" for counts in killed_after)
    print(
        f"\n{TABLES} tables killed {KILLS} times, after {spans} accepted actions; all finished"
        f" {finished_at - restarted_at:.2f} s after the last restart"
        f" ({finished_at - killed_at:.2f} s after the last kill); resent"
        f" {sum(o.resent for each in outcomes.values() for o in each)}, reconnects"
        f" {sum(o.reconnects for each in outcomes.values() for o in each)}"
    )

    streams = await read_log(database)
    assert_contiguous(streams)
    assert_each_action_id_in_one_place(streams)

    for table_id, seat_tokens in tokens.items():
        stored = streams[table_id]
        for outcome in outcomes[table_id]:
            assert outcome.end is not None, "the match must have ended"
            assert outcome.reconnects >= 1, "every bot had to resume on its own"
        assert_acknowledged_once(
            stored,
            clients[table_id].journals,
            dict(zip(seat_tokens, outcomes[table_id], strict=True)),
        )

        # Replayed from scratch: the state the server serves.
        state = replayed_state(stored)
        assert state.is_over
        summary = summaries[table_id]
        assert summary.status == "finished"
        assert summary.sequence == len(stored)
        assert summary.scores == tuple(state.scores)
        assert summary.hand_number == state.hand_number
        record = records[table_id]
        # (events_of: the seed and preset deals come from the record, not from TableCreated)
        assert events_of(record) == engine_events(stored), "the finished match's record is its log"
        assert all(outcome.end == state.end for outcome in outcomes[table_id])
        assert all(outcome.view.scores == tuple(state.scores) for outcome in outcomes[table_id])

    assert_log_is_truth(recovered, streams, latest=False)
    assert_log_is_truth(snapshots, streams)
