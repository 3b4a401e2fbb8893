"""A tournament through the public API, in process, on both backends: accounts enter, the
server pairs, opens the tables, seats the accounts and tells them; every board is scored; the
record verifies offline."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import grpc
import pytest

from spades import protocol
from spades.bot import Bot
from spades.engine import Rules
from spades.records.tournament import (
    TournamentVerificationError,
    standings,
    verify_tournament,
)
from spades.v1 import (
    account_pb2,
    account_pb2_grpc,
    events_pb2,
    rating_pb2,
    rating_pb2_grpc,
    tournament_pb2,
    tournament_pb2_grpc,
)
from spades_bots.heuristic import HeuristicBot
from spades_bots.random_bot import RandomBot
from tests.support.accounts import bearer
from tests.support.admin import OPERATOR_TOKEN, operator
from tests.support.backends import Storages
from tests.support.players import AccountPlayer
from tests.support.servers import running_server

pytestmark = pytest.mark.asyncio
FINISH_TIMEOUT = 90.0


def settings(entrants: int, boards: int = 2) -> tournament_pb2.TournamentSettings:
    return tournament_pb2.TournamentSettings(
        name="Test Cup",
        format=tournament_pb2.TOURNAMENT_FORMAT_ROUND_ROBIN,
        rules=protocol.rules_to_proto(Rules()),
        boards=boards,
        start_when_entrants=entrants,
    )


def tampered(
    record: tournament_pb2.TournamentRecord,
    change: Callable[[tournament_pb2.TournamentRecord], None],
) -> tournament_pb2.TournamentRecord:
    copy = tournament_pb2.TournamentRecord()
    copy.CopyFrom(record)
    change(copy)
    return copy


def assert_tampering_is_caught(record: tournament_pb2.TournamentRecord) -> None:
    """Each change a cheat might make fails the offline check, saying where."""

    def other_seed(r: tournament_pb2.TournamentRecord) -> None:
        r.events[-1].ended.seed = bytes(32)

    def board_points(r: tournament_pb2.TournamentRecord) -> None:
        board = next(e for e in r.events if e.WhichOneof("kind") == "board_scored")
        board.board_scored.duplicate_points += 10

    def lost_table(r: tournament_pb2.TournamentRecord) -> None:
        del r.tables[3]

    def swapped_standings(r: tournament_pb2.TournamentRecord) -> None:
        lines = r.events[-1].ended.standings.lines
        lines[0].match_points, lines[1].match_points = lines[1].match_points + 1, 0

    def other_boards(r: tournament_pb2.TournamentRecord) -> None:
        # A table whose preset boards came from another round's deals.
        r.tables[0].preset_deals[0].CopyFrom(r.tables[-1].preset_deals[0])

    def older_derivation(r: tournament_pb2.TournamentRecord) -> None:
        # The same tables claimed as dealt round-wide (spades-tournament-v1).
        r.events[0].created.shuffle_version = "spades-shuffle-v1+spades-tournament-v1"

    def unknown_derivation(r: tournament_pb2.TournamentRecord) -> None:
        r.events[0].created.shuffle_version = "spades-shuffle-v1+spades-tournament-v0"

    def foreign_card(r: tournament_pb2.TournamentRecord) -> None:
        # A table's first card changed to one another seat held: the deals still check out,
        # and only replaying the play shows the seat never had it.
        played = [e.card_played for e in r.tables[0].events if e.HasField("card_played")]
        other = next(play for play in played if play.seat != played[0].seat)
        played[0].card.CopyFrom(other.card)

    for change, says in (
        (other_seed, "bad commitment"),
        (older_derivation, "round 1, pairing 1, table 1: its boards are not"),
        (unknown_derivation, "unknown deal derivation"),
        (board_points, "the scored board differs"),
        (lost_table, "the record has no table"),
        (swapped_standings, "final standings differ"),
        (other_boards, "round 1, pairing 1, table 1"),
        (foreign_card, r"round \d, pairing \d, table \d: event \d+: .* is illegal"),
    ):
        with pytest.raises(TournamentVerificationError, match=says):
            verify_tournament(tampered(record, change))


def hands(dealt: events_pb2.Deal) -> list[tuple[int, ...]]:
    """Each seat's cards in a deal, as the engine numbers them."""
    return [tuple(sorted(map(protocol.card_from_proto, hand.cards))) for hand in dealt.hands]


def assert_pairings_share_no_board(record: tournament_pb2.TournamentRecord) -> None:
    """A pairing's two tables play the same boards from the same seed; no other table of the
    round holds any of those hands, so watching another pairing shows no hidden card."""
    tables = {table.table_id: table for table in record.tables}
    for event in record.events:
        if event.WhichOneof("kind") != "round_paired":
            continue
        hands_of_pairing: list[set[tuple[int, ...]]] = []
        for pairing in event.round_paired.pairings:
            legs = [tables[table_id] for table_id in pairing.table_ids]
            if not legs:
                continue  # a bye
            deals, other = ([hands(d) for d in leg.preset_deals] for leg in legs)
            assert deals == other
            assert legs[0].seed_commitment == legs[1].seed_commitment
            hands_of_pairing.append({hand for dealt in deals for hand in dealt})
        assert len(hands_of_pairing) == 2
        assert not hands_of_pairing[0] & hands_of_pairing[1]


async def test_a_round_robin_of_four_accounts_plays_to_the_end_and_verifies(
    storage: Storages,
) -> None:
    async with running_server(storage(), operator_token=OPERATOR_TOKEN) as server:
        address = f"127.0.0.1:{server.port}"
        async with grpc.aio.insecure_channel(address) as channel:
            accounts = account_pb2_grpc.AccountServiceStub(channel)
            service = tournament_pb2_grpc.TournamentServiceStub(channel)
            rated_cup = settings(4)
            rated_cup.rated = True  # every table is rated in the partnership pool
            created = await service.CreateTournament(
                tournament_pb2.CreateTournamentRequest(settings=rated_cup), metadata=operator()
            )
            tid = created.tournament.tournament_id
            assert created.tournament.status == tournament_pb2.TOURNAMENT_STATUS_ENTERING
            bots: list[tuple[str, Callable[[], Bot]]] = [
                ("Heuristic A", HeuristicBot),
                ("Random A", lambda: RandomBot(seed=1)),
                ("Heuristic B", HeuristicBot),
                ("Random B", lambda: RandomBot(seed=2)),
            ]
            players = []
            for name, make in bots:
                key = (
                    await accounts.CreateAccount(
                        account_pb2.CreateAccountRequest(
                            name=name, kind=account_pb2.ACCOUNT_KIND_BOT
                        )
                    )
                ).key
                players.append(AccountPlayer(address, key, make))
                await service.EnterTournament(
                    tournament_pb2.EnterTournamentRequest(tournament_id=tid), metadata=bearer(key)
                )
            runs = [asyncio.create_task(player.run()) for player in players]
            watch = service.WatchTournament(
                tournament_pb2.WatchTournamentRequest(tournament_id=tid)
            )
            seen: list[tournament_pb2.WatchTournamentResponse] = []
            try:
                async with asyncio.timeout(FINISH_TIMEOUT):
                    async for message in watch:
                        seen.append(message)
                    # Each entrant's stream is told its rank once the tournament ended.
                    while not all(player.finished for player in players):
                        await asyncio.sleep(0.05)
            finally:
                for run in runs:
                    run.cancel()
                for player in players:
                    await player.stop()
            kinds = [m.event.WhichOneof("kind") for m in seen]
            assert kinds[0] == "created" and kinds[-1] == "ended"
            assert kinds.count("round_paired") == 3 and kinds.count("match_scored") == 6
            # Every board of 3 rounds x 2 pairings x 2 boards, each once; a hand past the boards
            # counts only where both tables played it (a match tied after its boards plays on,
            # docs/tournaments.md), so there may be more.
            boards = [
                (e.board_scored.round, e.board_scored.pairing, e.board_scored.board)
                for e in (m.event for m in seen)
                if e.WhichOneof("kind") == "board_scored"
            ]
            assert len(boards) == len(set(boards))
            assert {key for key in boards if key[2] <= 2} == {
                (r, p, b) for r in (1, 2, 3) for p in (0, 1) for b in (1, 2)
            }
            # Every message's standings are those of the events up to it.
            events = [m.event for m in seen]
            for number, message in enumerate(seen, start=1):
                assert message.standings == standings(events[:number])
            final = (
                await service.GetTournament(tournament_pb2.GetTournamentRequest(tournament_id=tid))
            ).tournament
            assert final.status == tournament_pb2.TOURNAMENT_STATUS_FINISHED
            assert final.seed and len(final.standings.lines) == 4
            record = (
                await service.GetTournamentRecord(
                    tournament_pb2.GetTournamentRecordRequest(tournament_id=tid)
                )
            ).record
            checked = verify_tournament(record)
            # The offline check scores each pairing's boards from its two tables: those scored.
            assert checked.tables == 12 and checked.boards == len(boards)
            assert_pairings_share_no_board(record)
            assert_tampering_is_caught(record)
            # Rated: each entrant played six rated tables (three matches, two tables each).
            ratings = rating_pb2_grpc.RatingServiceStub(channel)
            for line in final.standings.lines:
                for _ in range(200):
                    got = await ratings.GetRatings(
                        rating_pb2.GetRatingsRequest(account_id=line.account_id)
                    )
                    if got.ratings and got.ratings[0].rating.matches == 6:
                        break
                    await asyncio.sleep(0.05)
                assert [(r.pool, r.rating.matches) for r in got.ratings] == [("partnership", 6)]
            ranks = {line.account_id: line.rank for line in final.standings.lines}
            for player in players:
                told = player.finished[0]
                assert told.tournament_id == tid
                assert told.rank in ranks.values()


async def test_a_missing_entrant_is_played_by_house_bots_and_the_standings_say_so(
    storage: Storages,
) -> None:
    # The absent entrant never connects: after the grace a house bot takes each of its seats.
    async with running_server(
        storage(), operator_token=OPERATOR_TOKEN, disconnect_grace=0.3, substitute_after_timeouts=1
    ) as server:
        address = f"127.0.0.1:{server.port}"
        async with grpc.aio.insecure_channel(address) as channel:
            accounts = account_pb2_grpc.AccountServiceStub(channel)
            service = tournament_pb2_grpc.TournamentServiceStub(channel)
            cup = settings(2, boards=1)
            cup.rules.clock.turn_millis = 3000
            tid = (
                await service.CreateTournament(
                    tournament_pb2.CreateTournamentRequest(settings=cup), metadata=operator()
                )
            ).tournament.tournament_id
            keys = []
            for name in ("Present", "Absent"):
                key = (
                    await accounts.CreateAccount(
                        account_pb2.CreateAccountRequest(
                            name=name, kind=account_pb2.ACCOUNT_KIND_BOT
                        )
                    )
                ).key
                keys.append(key)
                await service.EnterTournament(
                    tournament_pb2.EnterTournamentRequest(tournament_id=tid), metadata=bearer(key)
                )
            present = AccountPlayer(address, keys[0], HeuristicBot)
            run = asyncio.create_task(present.run())
            try:
                async with asyncio.timeout(FINISH_TIMEOUT):
                    watch = service.WatchTournament(
                        tournament_pb2.WatchTournamentRequest(tournament_id=tid)
                    )
                    async for message in watch:
                        last = message
            finally:
                run.cancel()
                await present.stop()
            lines = {line.name: line for line in last.standings.lines}
            assert lines["Absent"].substituted_matches == 1
            assert lines["Present"].substituted_matches == 0
            assert lines["Present"].boards == lines["Absent"].boards >= 1
            record = (
                await service.GetTournamentRecord(
                    tournament_pb2.GetTournamentRecordRequest(tournament_id=tid)
                )
            ).record
            verify_tournament(record)
            substituted = 0
            for table in record.tables:
                substituted += sum(e.WhichOneof("kind") == "seat_substituted" for e in table.events)
            assert substituted == 4  # both of Absent's seats at both tables
