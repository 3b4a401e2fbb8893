"""Challenges and rule-set manifests through a real server on both log backends: a challenge
accepted by all opens one table with the proposed seats, told on every party's account stream
and played to the end by AccountRunners; declined, cancelled and expired challenges; every
refusal with its status and reason code, changing nothing."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import grpc
import pytest
import pytest_asyncio

from spades.bot.account import AccountRunner, Answer, accept_all
from spades.client import SpadesClient, SpadesError
from spades.client.challenges import ChallengeInfo
from spades.engine import Rules
from spades.manifest import manifest_of
from spades.v1 import account_pb2
from spades_bots.random_bot import RandomBot
from spades_server.app.server import SpadesServer
from spades_server.domain import challenges
from spades_server.processes import challenge_flow
from spades_server.store import challenge_store, codecs
from tests.support.backends import Storages
from tests.support.servers import log_head, running_server
from tests.support.time import ManualClock

pytestmark = pytest.mark.asyncio

Code = grpc.StatusCode
#: A short match: the runners play it to the end in a few seconds.
ONE_HAND = Rules(max_hands=1)


@dataclass
class Party:
    account_id: str
    name: str
    key: str
    client: SpadesClient


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest_asyncio.fixture
async def server(storage: Storages, clock: ManualClock) -> AsyncIterator[SpadesServer]:
    """The suite's server (tests/server/conftest.py's), keeping time by the test's clock: a
    challenge expires when the test moves the clock past its expiry."""
    async with running_server(storage(), clock) as running:
        yield running


@pytest_asyncio.fixture
async def parties(server: SpadesServer) -> AsyncIterator[dict[str, Party]]:
    """Four accounts (three bots, one person), each with a client sending its key."""
    address = f"127.0.0.1:{server.port}"
    made: dict[str, Party] = {}
    async with SpadesClient(address) as anonymous:
        for name, kind in (("Ada", "bot"), ("Bea", "bot"), ("Cy", "bot"), ("Pat", "person")):
            created = await anonymous.create_account(name, kind=kind)
            made[name] = Party(
                created.account.account_id,
                name,
                created.key,
                SpadesClient(address, account_key=created.key),
            )
    try:
        yield made
    finally:
        for party in made.values():
            await party.client.close()


async def events_of(party: Party, kinds: set[str], count: int) -> list[account_pb2.AccountEvent]:
    """The first ``count`` events of these kinds on the party's stream (bounded wait)."""
    found: list[account_pb2.AccountEvent] = []
    async with asyncio.timeout(20):
        async for event in party.client.connect():
            if event.WhichOneof("kind") in kinds:
                found.append(event)
                if len(found) == count:
                    break
    return found


async def refused(call: object, code: Code, reason_code: str) -> SpadesError:
    with pytest.raises(SpadesError) as raised:
        await call  # type: ignore[misc]
    assert (raised.value.code, raised.value.reason_code) == (code, reason_code), raised.value
    return raised.value


async def test_a_challenge_accepted_opens_one_table_with_the_seats_and_the_runners_play_it(
    server: SpadesServer, parties: dict[str, Party]
) -> None:
    ada, bea = parties["Ada"], parties["Bea"]
    made = await ada.client.create_challenge([bea.account_id], ONE_HAND, rated=False)
    assert made.state == "pending" and made.challenger_id == ada.account_id
    # The default seating at four seats with one opponent: North-South and East-West.
    assert made.seating == {
        0: ada.account_id,
        1: bea.account_id,
        2: ada.account_id,
        3: bea.account_id,
    }
    received = await events_of(bea, {"challenge_received"}, 1)
    assert received[0].challenge_received.challenge.challenge_id == made.challenge_id
    incoming = await bea.client.list_challenges("incoming")
    assert [c.challenge_id for c in incoming.challenges] == [made.challenge_id]
    assert (await ada.client.list_challenges("incoming")).challenges == ()
    assert [c.challenge_id for c in (await ada.client.list_challenges("outgoing")).challenges] == [
        made.challenge_id
    ]

    # Both accounts run unattended: Bea's policy accepts; each plays both of its seats.
    runners = [
        AccountRunner(party.client, RandomBot, policy=accept_all, max_games=2)
        for party in (ada, bea)
    ]
    tasks = [asyncio.create_task(runner.run()) for runner in runners]
    try:
        async with asyncio.timeout(90):
            while sum(len(r.stats.outcomes) for r in runners) < 4:
                await asyncio.sleep(0.2)
    finally:
        for runner in runners:
            runner.stop()
        await asyncio.gather(*tasks)
    accepted = await ada.client.get_challenge(made.challenge_id)
    assert accepted.state == "accepted" and accepted.table_id
    assert runners[1].stats.accepted == [made.challenge_id]
    table = await ada.client.get_table(accepted.table_id)
    assert table.status == "finished"
    assert [seat.account_id for seat in table.message.seats] == [
        ada.account_id,
        bea.account_id,
        ada.account_id,
        bea.account_id,
    ]
    seats = {r.client.account_key: sorted(o.seat for o in r.stats.outcomes) for r in runners}
    assert seats == {ada.key: [0, 2], bea.key: [1, 3]}
    assert all(o.end is not None for r in runners for o in r.stats.outcomes)
    # Every party heard of it once: the answer, then the table with the seats it holds.
    for party, held in ((ada, [1, 3]), (bea, [2, 4])):
        told = await events_of(party, {"challenge_answered", "table_assigned"}, 2)
        answered, assigned = told
        assert answered.challenge_answered.table_id == accepted.table_id
        assert answered.challenge_answered.state == challenges.ACCEPTED
        assert assigned.table_assigned.table_id == accepted.table_id
        assert list(assigned.table_assigned.seats) == held
    # Only one table was opened (the lobby lists no other).
    assert len(server.projection.tables) == 1


async def test_declined_cancelled_and_expired_challenges_end_so_and_open_no_table(
    server: SpadesServer, parties: dict[str, Party], clock: ManualClock
) -> None:
    ada, bea, cy = parties["Ada"], parties["Bea"], parties["Cy"]
    declined = await ada.client.create_challenge([bea.account_id])
    answer = await bea.client.decline_challenge(declined.challenge_id, "rules")
    assert (answer.state, answer.declined_by, answer.decline_reason) == (
        "declined",
        bea.account_id,
        "rules",
    )
    cancelled = await ada.client.create_challenge([cy.account_id])
    assert (await ada.client.cancel_challenge(cancelled.challenge_id)).state == "cancelled"
    expiring = await ada.client.create_challenge([bea.account_id], expiry_seconds=1)
    assert (await bea.client.get_challenge(expiring.challenge_id)).state == "pending"
    clock.advance(1.2)
    # Read as expired at once; the sweeper records it and tells both.
    assert (await bea.client.get_challenge(expiring.challenge_id)).state == "expired"
    told = await events_of(ada, {"challenge_answered"}, 3)
    states = {e.challenge_answered.challenge_id: e.challenge_answered.state for e in told}
    assert states == {
        declined.challenge_id: challenges.DECLINED,
        cancelled.challenge_id: challenges.CANCELLED,
        expiring.challenge_id: challenges.EXPIRED,
    }
    assert server.projection.tables == {}
    pending = await ada.client.list_challenges(pending_only=True)
    assert pending.challenges == ()
    # Answering any of them now changes nothing.
    for challenge_id in (declined.challenge_id, expiring.challenge_id):
        await refused(
            bea.client.accept_challenge(challenge_id), Code.FAILED_PRECONDITION, "CHALLENGE_CLOSED"
        )
    await refused(
        cy.client.accept_challenge(cancelled.challenge_id),
        Code.FAILED_PRECONDITION,
        "CHALLENGE_CLOSED",
    )
    assert server.projection.tables == {}


async def test_every_bad_challenge_is_refused_with_its_reason_and_changes_nothing(
    server: SpadesServer, parties: dict[str, Party]
) -> None:
    ada, bea, cy, pat = (parties[name] for name in ("Ada", "Bea", "Cy", "Pat"))
    head = await log_head(server)
    anonymous = SpadesClient(f"127.0.0.1:{server.port}")
    cases: list[tuple[object, Code, str]] = [
        (ada.client.create_challenge(["0" * 20]), Code.NOT_FOUND, "ACCOUNT_NOT_FOUND"),
        (ada.client.create_challenge([ada.account_id]), Code.INVALID_ARGUMENT, "CHALLENGE_SELF"),
        (ada.client.create_challenge([]), Code.INVALID_ARGUMENT, "CHALLENGE_OPPONENTS_INVALID"),
        (
            ada.client.create_challenge([bea.account_id, bea.account_id]),
            Code.INVALID_ARGUMENT,
            "CHALLENGE_OPPONENTS_INVALID",
        ),
        # A bot challenges bots only (people are not spammed by programs).
        (
            ada.client.create_challenge([pat.account_id]),
            Code.PERMISSION_DENIED,
            "BOT_CHALLENGES_PERSON",
        ),
        # Bea declared no manifest: the default rules only.
        (
            ada.client.create_challenge([bea.account_id], Rules(jokers=True)),
            Code.FAILED_PRECONDITION,
            "RULES_NOT_DECLARED",
        ),
        (
            pat.client.create_challenge([bea.account_id], Rules(spades_must_be_broken=False)),
            Code.FAILED_PRECONDITION,
            "RULES_NOT_DECLARED",
        ),
        (
            ada.client.create_challenge([bea.account_id], Rules(blind_nil=True), rated=True),
            Code.FAILED_PRECONDITION,
            "RULES_NOT_RATED",
        ),
        (
            ada.client.create_challenge(
                [bea.account_id], seating={0: ada.account_id, 1: bea.account_id, 2: ada.account_id}
            ),
            Code.INVALID_ARGUMENT,
            "CHALLENGE_SEATING_INVALID",
        ),
        (
            ada.client.create_challenge(
                [bea.account_id, cy.account_id],
                seating={
                    0: ada.account_id,
                    1: bea.account_id,
                    2: ada.account_id,
                    3: ada.account_id,
                },
            ),
            Code.INVALID_ARGUMENT,
            "CHALLENGE_SEATING_INVALID",
        ),
        (
            ada.client.create_challenge(
                [bea.account_id],
                rated=True,
                seating={
                    0: ada.account_id,
                    1: ada.account_id,
                    2: bea.account_id,
                    3: bea.account_id,
                },
            ),
            Code.FAILED_PRECONDITION,
            "ACCOUNT_ON_BOTH_SIDES",
        ),
        (
            ada.client.create_challenge([bea.account_id], expiry_seconds=86_401),
            Code.INVALID_ARGUMENT,
            "CHALLENGE_EXPIRY_OUT_OF_RANGE",
        ),
        (
            anonymous.create_challenge([bea.account_id]),
            Code.UNAUTHENTICATED,
            "KEY_REQUIRED",
        ),
        (ada.client.get_challenge("f" * 20), Code.NOT_FOUND, "CHALLENGE_NOT_FOUND"),
    ]
    try:
        for call, code, reason_code in cases:
            await refused(call, code, reason_code)
    finally:
        await anonymous.close()
    assert await log_head(server) == head  # nothing was written

    made = await ada.client.create_challenge(
        [bea.account_id, cy.account_id],
        seating={0: ada.account_id, 1: bea.account_id, 2: ada.account_id, 3: cy.account_id},
    )
    before = await ada.client.get_challenge(made.challenge_id)
    await refused(
        pat.client.accept_challenge(made.challenge_id),
        Code.PERMISSION_DENIED,
        "CHALLENGE_NOT_ADDRESSED",
    )
    await refused(
        ada.client.accept_challenge(made.challenge_id),
        Code.PERMISSION_DENIED,
        "CHALLENGE_NOT_ADDRESSED",
    )
    await refused(
        bea.client.cancel_challenge(made.challenge_id),
        Code.PERMISSION_DENIED,
        "CHALLENGE_NOT_YOURS",
    )
    assert await ada.client.get_challenge(made.challenge_id) == before
    half = await bea.client.accept_challenge(made.challenge_id)
    assert half.state == "pending" and [o.accepted for o in half.opponents] == [True, False]
    await refused(
        bea.client.accept_challenge(made.challenge_id),
        Code.FAILED_PRECONDITION,
        "CHALLENGE_ALREADY_ANSWERED",
    )
    await refused(
        bea.client.decline_challenge(made.challenge_id),
        Code.FAILED_PRECONDITION,
        "CHALLENGE_ALREADY_ANSWERED",
    )
    # Cy's key revoked: it cannot answer, and the challenge waits.
    await cy.client.revoke_key()
    await refused(
        cy.client.accept_challenge(made.challenge_id), Code.UNAUTHENTICATED, "KEY_REVOKED"
    )
    assert await ada.client.get_challenge(made.challenge_id) == half
    assert server.projection.tables == {}


async def test_a_retried_create_challenge_gets_the_first_challenge(
    parties: dict[str, Party],
) -> None:
    ada, bea = parties["Ada"], parties["Bea"]
    request_id = "r" * 32
    first = await ada.client.create_challenge([bea.account_id], request_id=request_id)
    again = await ada.client.create_challenge([bea.account_id], request_id=request_id)
    assert again.challenge_id == first.challenge_id
    assert len((await bea.client.list_challenges()).challenges) == 1


async def test_a_manifest_admits_the_rules_it_declares_and_only_a_bot_has_one(
    server: SpadesServer, parties: dict[str, Party]
) -> None:
    ada, bea, pat = parties["Ada"], parties["Bea"], parties["Pat"]
    jokers = manifest_of(players=(4, 3), target_scores=(200, 500), options=["jokers"])
    shown = await bea.client.set_manifest(jokers)
    assert shown.manifest == jokers
    assert (await ada.client.get_account(bea.account_id)).manifest == jokers
    # The person challenges the bot at rules inside the manifest (a bot challenger would have
    # to declare them too).
    inside = await pat.client.create_challenge(
        [bea.account_id], Rules(jokers=True, target_score=300)
    )
    assert inside.state == "pending"
    await refused(
        pat.client.create_challenge([bea.account_id], Rules(jokers=True, target_score=600)),
        Code.FAILED_PRECONDITION,
        "RULES_NOT_DECLARED",
    )
    await refused(pat.client.set_manifest(jokers), Code.FAILED_PRECONDITION, "MANIFEST_FOR_BOTS")
    await refused(
        bea.client.set_manifest(account_pb2.RuleManifest(players=[5])),
        Code.INVALID_ARGUMENT,
        "INVALID_MANIFEST",
    )
    assert (await ada.client.get_account(bea.account_id)).manifest == jokers
    # The rated queue plays the default rules at 500: inside Bea's manifest, not outside one
    # that stops at 400.
    seat = await bea.client.quick_match("Bea", bot=True, rated=True)
    assert seat.table_id
    await ada.client.set_manifest(manifest_of(target_scores=(100, 400)))
    await refused(
        ada.client.quick_match("Ada", bot=True, rated=True),
        Code.FAILED_PRECONDITION,
        "RULES_NOT_DECLARED",
    )
    assert len(server.projection.tables) == 1


async def test_a_policy_declines_with_its_reason(parties: dict[str, Party]) -> None:
    ada, bea = parties["Ada"], parties["Bea"]

    def unrated_only(challenge: ChallengeInfo) -> Answer:
        return Answer(False, "rated") if challenge.rated else Answer(True)

    runner = AccountRunner(bea.client, RandomBot, policy=unrated_only)
    task = asyncio.create_task(runner.run())
    try:
        made = await ada.client.create_challenge([bea.account_id], rated=True)
        async with asyncio.timeout(20):
            while (await ada.client.get_challenge(made.challenge_id)).state == "pending":
                await asyncio.sleep(0.1)
    finally:
        runner.stop()
        await task
    answer = await ada.client.get_challenge(made.challenge_id)
    assert (answer.state, answer.decline_reason) == ("declined", "rated")


async def test_a_rated_challenge_played_to_the_end_is_rated_for_both_accounts(
    parties: dict[str, Party],
) -> None:
    ada, bea = parties["Ada"], parties["Bea"]
    runners = [AccountRunner(party.client, RandomBot, policy=accept_all) for party in (ada, bea)]
    tasks = [asyncio.create_task(runner.run()) for runner in runners]
    try:
        made = await ada.client.create_challenge([bea.account_id], ONE_HAND, rated=True)
        async with asyncio.timeout(90):
            while sum(len(r.stats.outcomes) for r in runners) < 4:
                await asyncio.sleep(0.2)
    finally:
        for runner in runners:
            runner.stop()
        await asyncio.gather(*tasks)
    # Rated once the match ended: every entrant's stream is told (read once the runners are
    # gone: one stream per account).
    for party in (ada, bea):
        changed = await events_of(party, {"rating_changed"}, 1)
        assert changed[0].rating_changed.match.pool == "partnership"
    accepted = await ada.client.get_challenge(made.challenge_id)
    table = await ada.client.get_table(accepted.table_id)
    assert accepted.rated and table.message.rated
    for party in (ada, bea):
        (rating,) = await ada.client.ratings(party.account_id)
        assert (rating.pool, rating.matches) == ("partnership", 1)


async def test_an_acceptance_a_crash_left_without_its_table_is_finished_when_read(
    server: SpadesServer, parties: dict[str, Party]
) -> None:
    ada, bea = parties["Ada"], parties["Bea"]
    made = await ada.client.create_challenge([bea.account_id], ONE_HAND)
    # The last acceptance is in the log, but the server "died" before opening the table.
    bea_account = await server.accounts.load(bea.account_id)
    await server.challenges.store.execute(
        made.challenge_id,
        lambda challenge: challenges.decide_acceptance(challenge, bea_account, time.time()),
    )
    assert server.projection.tables == {}
    # The next read finishes it: the table with its seats, and both parties told.
    seen = await ada.client.get_challenge(made.challenge_id)
    assert seen.state == "accepted"
    table = await ada.client.get_table(seen.table_id)
    assert [s.account_id for s in table.message.seats] == [
        ada.account_id,
        bea.account_id,
        ada.account_id,
        bea.account_id,
    ]
    for party in (ada, bea):
        (assigned,) = await events_of(party, {"table_assigned"}, 1)
        assert assigned.table_assigned.table_id == seen.table_id
    assert await ada.client.get_challenge(made.challenge_id) == seen  # once: nothing more
    assert len(server.projection.tables) == 1


async def test_the_sweeper_expires_once_and_forgets_what_ended(
    server: SpadesServer,
    parties: dict[str, Party],
    monkeypatch: pytest.MonkeyPatch,
    clock: ManualClock,
) -> None:
    ada, bea = parties["Ada"], parties["Bea"]
    made = await ada.client.create_challenge([bea.account_id], expiry_seconds=1)
    assert await server.challenge_sweeper.sweep() == 0  # not due yet
    clock.advance(1.1)
    await asyncio.gather(server.challenge_sweeper.sweep(), server.challenge_sweeper.sweep())
    rows = await server.log.read(challenge_store.stream_of(made.challenge_id))
    assert [codecs.decode_challenge(row).WhichOneof("kind") for row in rows] == [
        "created",
        "expired",
    ]
    cached = {c.challenge_id for c in server.challenges.store.cached()}
    assert made.challenge_id in cached
    monkeypatch.setattr(challenge_flow, "FORGET_AFTER", 0.0)
    await server.challenge_sweeper.sweep()
    assert made.challenge_id not in {c.challenge_id for c in server.challenges.store.cached()}
    assert (await bea.client.get_challenge(made.challenge_id)).state == "expired"  # from the log
