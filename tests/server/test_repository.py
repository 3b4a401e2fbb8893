"""The one repository, as every aggregate gets it: what the table's store had alone before
(settling a command in the log's commit callback, the change hub, the bounded cache with pins)
holds for an account too. The table's own paths are tested where they are used (test_feeds,
test_table_cache, tests/replicas/test_followed_cache)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import pytest

from spades.reasons import Reason
from spades.v1 import account_pb2
from spades_server.domain import accounts, errors
from spades_server.domain.accounts import Account, AccountDecided
from spades_server.eventlog.base import StoredEvent
from spades_server.store.account_store import ACCOUNTS, AccountStore
from spades_server.store.repository import AggregateStore
from spades_server.store.turns import Turn
from tests.support.backends import Storages

BOT = account_pb2.ACCOUNT_KIND_BOT


@pytest.mark.asyncio
async def test_an_accounts_command_whose_caller_is_cancelled_mid_append_is_still_folded(
    storage: Storages,
) -> None:
    """The revocation reaches the log before its caller goes: it is folded into the cached
    account and the account's waiters are woken, so the key is refused at once."""
    async with storage().new_log() as log:
        store = AccountStore(log)
        account, key = await store.create("Gone", BOT)
        before = account.version
        woken = store.changed(account.account_id)
        decided = asyncio.Event()

        def decide(latest: Account) -> AccountDecided | None:
            try:
                return accounts.decide_revocation(latest, by_operator=False)
            finally:
                decided.set()

        command = asyncio.ensure_future(store.execute(account.account_id, decide))
        await decided.wait()  # the command went on, without a pause, to its append
        assert not command.done()
        command.cancel()
        await asyncio.wait_for(woken, 5)  # woken by the fold, with no caller left
        assert command.cancelled()
        assert account.version == before + 1
        assert store.cached_one(account.account_id) is account
        with pytest.raises(errors.RequestError) as refused:
            await store.authenticate(key)
        assert refused.value.reason_code == "KEY_REVOKED"


@pytest.mark.asyncio
async def test_an_account_past_the_caches_bound_leaves_it_unless_a_stream_holds_it(
    storage: Storages,
) -> None:
    async with storage().new_log() as log:
        made = AccountStore(log)
        first, _ = await made.create("First", BOT)
        second, _ = await made.create("Second", BOT)
        store = AggregateStore(log, ACCOUNTS, cache_size=1)
        async with store.holding(first.account_id) as held:
            await store.load(second.account_id)
            # The held one stays (one object for every holder and command); the other goes.
            assert store.cached_one(first.account_id) is held
            assert store.cached_version(second.account_id) == -1
            revoked = await store.execute(
                first.account_id, lambda a: accounts.decide_revocation(a, by_operator=True)
            )
            assert revoked is held and held.version == first.version + 1
        # Let go, it is the least recently used: the next load past the bound evicts it.
        assert store.cached_one(first.account_id) is held
        await store.load(second.account_id)
        assert store.cached_version(first.account_id) == -1
        assert store.cached_version(second.account_id) == second.version
        # Loaded again, it is read whole from the log: a new object, as it was left.
        again = await store.load(first.account_id)
        assert again is not held and again.version == held.version
        assert again.key_sha256 == held.key_sha256 == b""


@pytest.mark.asyncio
async def test_a_refusal_on_the_sole_writers_log_reads_nothing_again(storage: Storages) -> None:
    """A refusal decided on a cache trusted without a read is decided again after one only
    where the cache may be behind (a log others append to); on the sole writer's log every
    append went through the cache, so the refusal stands with no read."""
    async with storage().new_log() as log:
        store = AccountStore(log)
        account, _ = await store.create("Refused", BOT)
        async with store.holding(account.account_id):  # followed on a shared log: trusted
            reads: list[str] = []
            read = log.read

            async def counted(
                stream_id: str, after_version: int = 0, limit: int | None = None
            ) -> list[StoredEvent]:
                reads.append(stream_id)
                return await read(stream_id, after_version, limit)

            log.read = counted  # type: ignore[method-assign]

            def decide(latest: Account) -> AccountDecided | None:
                raise errors.refuse(Reason.MISSING_FIELD, "refused whatever the account")

            with pytest.raises(errors.RequestError):
                await store.execute(account.account_id, decide)
            if log.sole_writer:
                assert reads == []
            else:  # read before the refusal stands (by the command, or its follower's catch-up)
                assert reads


@pytest.mark.asyncio
async def test_a_waiting_command_decides_on_what_the_commit_settled_before_the_first_caller_runs(
    storage: Storages,
) -> None:
    """Two commands of one aggregate: the second decides on the first one's rows as soon as
    the commit settled them, not after the first one's caller was scheduled again (a table's
    next seat acts while the last one's stream is still being woken). On a log others append
    to, the second reads the log first (the cache may be behind), and so waits for a read."""
    async with storage().new_log() as log:
        store = AccountStore(log)
        account, _ = await store.create("Busy", BOT)
        before = account.version
        seen: list[tuple[int, bool]] = []

        def rotate(latest: Account) -> AccountDecided | None:
            return accounts.decide_rotation(latest, f"key-{latest.version}", by_operator=True)

        first = asyncio.ensure_future(store.execute(account.account_id, rotate))

        def second_decision(latest: Account) -> AccountDecided | None:
            seen.append((latest.version, first.done()))
            return rotate(latest)

        second = asyncio.ensure_future(store.execute(account.account_id, second_decision))
        await asyncio.wait_for(asyncio.gather(first, second), 10)
        # Decided once, on the first command's rows; on the sole writer's log (nothing to read
        # first) while the first command's caller had not run again.
        assert seen == [(before + 1, False)] if log.sole_writer else seen[0][0] == before + 1
        assert account.version == before + 2


def test_a_turn_let_go_twice_is_handed_on_once() -> None:
    """A command's hold is let go by whichever comes first, its end (a cancelled caller) or the
    commit that settled its rows; the later one must not hand on the turn the earlier one
    handed to the next command, or two commands would decide on one version. (Each waiting
    ``take`` is run by hand to its wait, so what it waits on can be looked at.)"""

    def finished(take: Coroutine[Any, Any, int]) -> int:
        with pytest.raises(StopIteration) as done:
            take.send(None)
        return int(done.value.value)

    async def run() -> None:
        turn = Turn()
        first = turn.take_now()
        assert first is not None and turn.take_now() is None
        second, third = turn.take(), turn.take()
        second_waits, third_waits = second.send(None), third.send(None)
        turn.release(first)  # the first caller went (cancelled mid-append)
        assert second_waits.done() and not third_waits.done()
        second_hold = finished(second)
        turn.release(first)  # its rows settled later: the turn is the second's, and stays so
        assert not third_waits.done()
        turn.release(second_hold)
        third_hold = finished(third)
        turn.release(third_hold)
        assert not turn.in_use() and turn.take_now() is not None

    asyncio.run(run())
