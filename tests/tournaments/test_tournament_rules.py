"""The pure part of tournaments (spades.records.tournament): the round robin's pairings, the
derivation of deals from the seed as docs/tournaments.md states it, and the standings' order."""

from __future__ import annotations

import hashlib
from itertools import combinations

import pytest

from spades.engine import Rules
from spades.engine.shuffle import deal
from spades.records.tournament import (
    TournamentVerificationError,
    derivation_of,
    pairing_boards,
    pairing_deal_seed,
    pairing_table_seed,
    rounds_for,
    standings,
)
from spades.v1 import tournament_pb2


@pytest.mark.parametrize("count", range(2, 17))
def test_a_round_robin_pairs_every_two_entrants_exactly_once(count: int) -> None:
    entrants = [f"e{n}" for n in range(count)]
    rounds = rounds_for(entrants)
    assert len(rounds) == count - 1 + count % 2
    met = [frozenset(pair) for pairing in rounds for pair in pairing if all(pair)]
    assert sorted(map(sorted, met)) == sorted(
        map(sorted, map(frozenset, combinations(entrants, 2)))
    )
    for pairing in rounds:
        seated = [who for pair in pairing for who in pair if who]
        assert sorted(seated) == sorted(entrants)  # each once a round (a bye included)
    byes = [home for pairing in rounds for home, away in pairing if not away]
    assert sorted(byes) == (sorted(entrants) if count % 2 else [])


def test_the_deals_derive_from_the_seed_as_documented() -> None:
    seed = bytes(range(32))
    for round_number in (1, 2, 7):
        for pairing in (0, 1, 5):
            suffix = seed + round_number.to_bytes(4, "big") + pairing.to_bytes(4, "big")
            deals = hashlib.sha256(b"spades-tournament-v2/deals" + suffix).digest()
            table = hashlib.sha256(b"spades-tournament-v2/table" + suffix).digest()
            assert pairing_deal_seed(seed, round_number, pairing) == deals
            assert pairing_table_seed(seed, round_number, pairing) == table
            boards = pairing_boards(seed, round_number, pairing, Rules(), 3)
            assert boards == [deal(deals, b, list(range(52)), 4, 13) for b in (1, 2, 3)]
    assert pairing_boards(seed, 1, 0, Rules(), 2) != pairing_boards(seed, 2, 0, Rules(), 2)
    # Each pairing of a round its own boards, and its own table seed.
    assert pairing_boards(seed, 1, 0, Rules(), 2) != pairing_boards(seed, 1, 1, Rules(), 2)
    assert pairing_table_seed(seed, 1, 0) != pairing_table_seed(seed, 1, 1)


def test_tournaments_created_before_v2_keep_their_round_wide_deals() -> None:
    seed = bytes(range(32))
    v1 = "spades-tournament-v1"
    for round_number in (1, 3):
        suffix = seed + round_number.to_bytes(4, "big")
        deals = hashlib.sha256(b"spades-tournament-v1/deals" + suffix).digest()
        table = hashlib.sha256(b"spades-tournament-v1/table" + suffix).digest()
        for pairing in (0, 1):
            assert pairing_deal_seed(seed, round_number, pairing, v1) == deals
            assert pairing_table_seed(seed, round_number, pairing, v1) == table
    assert derivation_of("spades-shuffle-v1+spades-tournament-v1") == v1
    assert derivation_of("spades-shuffle-v1+spades-tournament-v2") == "spades-tournament-v2"
    for unknown in ("spades-shuffle-v1+spades-tournament-v9", "spades-shuffle-v2+" + v1, ""):
        with pytest.raises(TournamentVerificationError, match="unknown deal derivation"):
            derivation_of(unknown)


def event(**kind: object) -> tournament_pb2.TournamentEvent:
    return tournament_pb2.TournamentEvent(**kind)  # type: ignore[arg-type]


def test_standings_rank_by_match_points_then_duplicate_points_then_entry() -> None:
    names = ["a", "b", "c", "d"]
    entrants = [tournament_pb2.Entrant(account_id=n, name=n.upper()) for n in names]
    pairings = tournament_pb2.RoundPairings(
        round=1,
        pairings=[
            tournament_pb2.Pairing(index=0, home_account_id="a", away_account_id="b"),
            tournament_pb2.Pairing(index=1, home_account_id="c", away_account_id="d"),
        ],
    )
    events = [
        event(started=tournament_pb2.TournamentStarted(entrants=entrants, rounds=3)),
        event(round_paired=pairings),
        event(
            board_scored=tournament_pb2.BoardScored(
                round=1, pairing=0, board=1, duplicate_points=-30
            )
        ),
        event(
            board_scored=tournament_pb2.BoardScored(round=1, pairing=1, board=1, duplicate_points=0)
        ),
        event(match_scored=tournament_pb2.MatchScored(round=1, pairing=0, duplicate_points=-30)),
        event(
            match_scored=tournament_pb2.MatchScored(
                round=1, pairing=1, duplicate_points=0, away_substituted=True
            )
        ),
    ]
    table = standings(events)
    # b won (+30); c and d tied at 0.5 each, d substituted so c first; a lost.
    assert [line.account_id for line in table.lines] == ["b", "c", "d", "a"]
    assert [line.match_points for line in table.lines] == [1.0, 0.5, 0.5, 0.0]
    assert [line.duplicate_points for line in table.lines] == [30, 0, 0, -30]
    assert table.lines[2].substituted_matches == 1 and table.lines[0].boards == 1
    row_b = table.crosstable[0]
    assert row_b.account_id == "b" and row_b.cells[0].opponent_account_id == "a"
    assert row_b.cells[0].duplicate_points == 30 and row_b.cells[0].match_points == 1.0
