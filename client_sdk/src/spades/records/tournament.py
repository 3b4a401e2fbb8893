"""Duplicate tournaments, the pure part: deals from the seed, pairings, scores, standings, and
the offline check of a tournament record (``spades-record tournament FILE``).

The server runs tournaments with these very functions
(``spades_server.domain.tournaments``), so what the verifier recomputes is what the server
computed (docs/tournaments.md).

Deals (``spades-tournament-v2``): pairing ``p`` (its index, from 0) of round ``r`` (from 1) of a
tournament with seed ``S`` deals its boards from the pairing's deal seed
``SHA-256("spades-tournament-v2/deals" || S || u32(r) || u32(p))``: board ``b`` is hand ``b`` of the
``spades-shuffle-v1`` shuffle of that seed (docs/deals.md). The pairing's two tables are given
those boards as preset deals and the table seed
``SHA-256("spades-tournament-v2/table" || S || u32(r) || u32(p))`` (so both have the same first
dealer; a table reveals its own seed when it ends, which says nothing of the boards). Each pairing
has its own boards, so no table of another pairing shows the cards a seat hides: duplicate scoring
compares only a pairing's two tables. Tournaments created before v2 (``spades-tournament-v1``)
gave every table of a round the round's boards; their records still verify.

>>> seed = bytes(32)
>>> pairing_deal_seed(seed, 1, 0) != pairing_deal_seed(seed, 1, 1) != pairing_table_seed(seed, 1, 0)
True
>>> round_robin(["a", "b", "c", "d"], 0), len(rounds_for(["a", "b", "c"]))
([('a', 'd'), ('c', 'b')], 3)
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from google.protobuf import json_format
from google.protobuf.message import DecodeError

from spades.engine import Rules, Seat, Seating
from spades.engine import events as ev
from spades.engine.cards import iter_cards
from spades.engine.shuffle import SEED_BYTES, SHUFFLE_VERSION, commitment, deal
from spades.protocol import rules_from_proto
from spades.records.record import RecordError, events_of
from spades.records.replay import replay
from spades.records.verify import verify
from spades.v1 import tournament_pb2

#: The derivation of a new tournament's deals from its seed (docs/tournaments.md).
DERIVATION = "spades-tournament-v2"
#: Every derivation this module knows: v1 dealt a round's boards to every table of the round.
DERIVATIONS = ("spades-tournament-v1", DERIVATION)
#: The two partnerships of a table of four, as the engine seats them.
_NORTH_SOUTH, _EAST_WEST = Seating(players=4, step=1).sides
#: The home entrant's seats at the first table of a pairing (North-South), and at the second.
HOME_SEATS: tuple[tuple[Seat, ...], tuple[Seat, ...]] = (_NORTH_SOUTH, _EAST_WEST)
#: The away entrant's.
AWAY_SEATS: tuple[tuple[Seat, ...], tuple[Seat, ...]] = (_EAST_WEST, _NORTH_SOUTH)


class TournamentVerificationError(RecordError):
    """A tournament record that does not check out."""


def derivation_of(shuffle_version: str) -> str:
    """The derivation a tournament's ``TournamentCreated.shuffle_version`` names
    (``"spades-shuffle-v1+spades-tournament-v2"``).

    >>> derivation_of("spades-shuffle-v1+spades-tournament-v1")
    'spades-tournament-v1'
    """
    shuffle, _, derivation = shuffle_version.partition("+")
    if shuffle != SHUFFLE_VERSION or derivation not in DERIVATIONS:
        raise TournamentVerificationError(
            f"unknown deal derivation {shuffle_version!r} (this verifier knows "
            f"{', '.join(f'{SHUFFLE_VERSION}+{known}' for known in DERIVATIONS)})"
        )
    return derivation


def _derive(label: str, seed: bytes, round_number: int, pairing: int, derivation: str) -> bytes:
    message = f"{derivation}/{label}".encode() + seed + round_number.to_bytes(4, "big")
    if derivation != "spades-tournament-v1":  # v1: one seed for every pairing of the round
        message += pairing.to_bytes(4, "big")
    return hashlib.sha256(message).digest()[:SEED_BYTES]


def pairing_deal_seed(
    seed: bytes, round_number: int, pairing: int, derivation: str = DERIVATION
) -> bytes:
    """The seed the boards of pairing ``pairing`` (from 0) of round ``round_number`` (from 1)
    are shuffled from."""
    return _derive("deals", seed, round_number, pairing, derivation)


def pairing_table_seed(
    seed: bytes, round_number: int, pairing: int, derivation: str = DERIVATION
) -> bytes:
    """The seed of both tables of the pairing (their first dealer, and any hand past the
    boards)."""
    return _derive("table", seed, round_number, pairing, derivation)


def pairing_boards(
    seed: bytes,
    round_number: int,
    pairing: int,
    rules: Rules,
    boards: int,
    derivation: str = DERIVATION,
) -> list[list[list[int]]]:
    """The pairing's boards: one deal (each seat's cards) per board."""
    deck = list(iter_cards(rules.deck_mask))
    deal_seed = pairing_deal_seed(seed, round_number, pairing, derivation)
    return [
        deal(deal_seed, board, deck, rules.players, rules.hand_size)
        for board in range(1, boards + 1)
    ]


def round_robin(entrants: Sequence[str], round_index: int) -> list[tuple[str, str]]:
    """The pairings (home, away) of round ``round_index`` (from 0) by the circle method; with
    an odd field one entrant has a bye each round (away empty)."""
    players = list(entrants) + ([""] if len(entrants) % 2 else [])
    count = len(players)
    if count < 2:
        return []
    others = players[1:]
    shift = round_index % (count - 1)
    rotated = [players[0], *others[len(others) - shift :], *others[: len(others) - shift]]
    pairs = []
    for index in range(count // 2):
        home, away = rotated[index], rotated[count - 1 - index]
        if (round_index + index) % 2 and home and away:
            home, away = away, home  # home only says which table comes first: vary it
        if not home:
            home, away = away, home
        pairs.append((home, away))
    return pairs


def rounds_for(entrants: Sequence[str]) -> list[list[tuple[str, str]]]:
    """Every round of a round robin of ``entrants``."""
    count = len(entrants) + len(entrants) % 2
    return [round_robin(entrants, index) for index in range(max(count - 1, 0))]


def swiss_round(
    ranked: Sequence[str], met: set[frozenset[str]], had_bye: set[str]
) -> list[tuple[str, str]]:
    """A Swiss round: entrants in standings order (best first) are paired top down, each with
    the best-placed entrant it has not met (the first such pairing of everyone, by search); with
    an odd field the lowest-placed entrant without a bye sits out. When every pairing of the
    field would repeat a match, entrants are paired in order regardless.

    >>> swiss_round(["a", "b", "c", "d"], {frozenset("ab")}, set())
    [('a', 'c'), ('b', 'd')]
    """
    players = list(ranked)
    bye = ""
    if len(players) % 2:
        bye = next((p for p in reversed(players) if p not in had_bye), players[-1])
        players.remove(bye)

    def solve(rest: list[str]) -> list[tuple[str, str]] | None:
        if not rest:
            return []
        first, others = rest[0], rest[1:]
        for other in others:
            if frozenset((first, other)) in met:
                continue
            tail = solve([p for p in others if p != other])
            if tail is not None:
                return [(first, other), *tail]
        return None

    pairs = solve(players)
    if pairs is None:
        pairs = [(players[i], players[i + 1]) for i in range(0, len(players), 2)]
    return [*pairs, (bye, "")] if bye else pairs


def swiss_rounds(entrants: int, wanted: int) -> int:
    """Rounds a Swiss of ``entrants`` plays: ``wanted``, at most one per possible opponent."""
    return max(1, min(wanted, entrants - 1 + entrants % 2))


def pair_round(
    format: tournament_pb2.TournamentFormat.ValueType,
    entrants: Sequence[str],
    round_number: int,
    events: Sequence[tournament_pb2.TournamentEvent],
) -> list[tuple[str, str]]:
    """The pairings (home, away) of round ``round_number``, from the tournament's events so
    far (a Swiss pairs by the standings they give)."""
    if format != tournament_pb2.TOURNAMENT_FORMAT_SWISS:
        return round_robin(entrants, round_number - 1)
    met: set[frozenset[str]] = set()
    had_bye: set[str] = set()
    for event in events:
        if event.WhichOneof("kind") == "round_paired":
            for pairing in event.round_paired.pairings:
                if pairing.away_account_id:
                    met.add(frozenset((pairing.home_account_id, pairing.away_account_id)))
                else:
                    had_bye.add(pairing.home_account_id)
    ranked = [line.account_id for line in standings(events).lines] if round_number > 1 else []
    return swiss_round(ranked or list(entrants), met, had_bye)


# ---------------------------------------------------------------------------------- scoring


def _hand_points(hand: ev.HandScored, seats: tuple[Seat, ...]) -> int:
    for side in hand.sides:
        if set(seats) <= set(side.seats):
            return side.hand_points
    return 0


@dataclass
class PairingScore:
    """What a pairing's two tables say so far."""

    boards: list[tournament_pb2.BoardScored] = field(default_factory=list)
    match: tournament_pb2.MatchScored | None = None


def score_pairing(
    round_number: int,
    pairing: int,
    first: Sequence[ev.Event],
    second: Sequence[ev.Event],
) -> PairingScore:
    """The boards both tables have scored, and the match once both ended."""
    hands = [
        {event.hand_number: event for event in table if isinstance(event, ev.HandScored)}
        for table in (first, second)
    ]
    score = PairingScore()
    total = 0
    for board in sorted(set(hands[0]) & set(hands[1])):
        home = [_hand_points(hands[leg][board], HOME_SEATS[leg]) for leg in (0, 1)]
        away = [_hand_points(hands[leg][board], AWAY_SEATS[leg]) for leg in (0, 1)]
        points = sum(home) - sum(away)
        total += points
        score.boards.append(
            tournament_pb2.BoardScored(
                round=round_number,
                pairing=pairing,
                board=board,
                home_scores=home,
                away_scores=away,
                duplicate_points=points,
            )
        )
    ended = [any(isinstance(event, ev.MatchEnded) for event in table) for table in (first, second)]
    if all(ended):
        helped = [_helped(table) for table in (first, second)]
        score.match = tournament_pb2.MatchScored(
            round=round_number,
            pairing=pairing,
            duplicate_points=total,
            home_substituted=any(set(HOME_SEATS[leg]) & helped[leg] for leg in (0, 1)),
            away_substituted=any(set(AWAY_SEATS[leg]) & helped[leg] for leg in (0, 1)),
        )
    return score


def _helped(events: Iterable[ev.Event]) -> set[int]:
    """The seats a house bot (or the clock) played some turns of."""
    seats: set[int] = set()
    for event in events:
        if isinstance(event, ev.SeatSubstituted):
            seats.add(event.seat)
        elif isinstance(event, ev.HandScored):
            seats.update(event.automatic_play)
    return seats


# ---------------------------------------------------------------------------------- standings


@dataclass
class _Line:
    entrant: tournament_pb2.Entrant
    order: int
    match_points: float = 0.0
    won: int = 0
    tied: int = 0
    lost: int = 0
    duplicate_points: int = 0
    boards: int = 0
    substituted: int = 0
    cells: list[tournament_pb2.CrosstableCell] = field(default_factory=list)


def standings(events: Iterable[tournament_pb2.TournamentEvent]) -> tournament_pb2.Standings:
    """The standings a tournament's events lead to.

    Ranked by match points, then duplicate points, then matches won, then fewer substituted
    matches, then the order of entry (docs/tournaments.md, "Tie-breaks")."""
    lines: dict[str, _Line] = {}
    pairings: dict[tuple[int, int], tournament_pb2.Pairing] = {}
    sequence = 0
    for event in events:
        sequence = event.sequence or sequence + 1
        kind = event.WhichOneof("kind")
        if kind == "entered":
            lines[event.entered.account_id] = _Line(event.entered, len(lines))
        elif kind == "withdrew":
            lines.pop(event.withdrew.account_id, None)
        elif kind == "started":
            lines = {e.account_id: _Line(e, n) for n, e in enumerate(event.started.entrants)}
        elif kind == "round_paired":
            for pairing in event.round_paired.pairings:
                pairings[(event.round_paired.round, pairing.index)] = pairing
        elif kind == "board_scored":
            board = event.board_scored
            paired = pairings[(board.round, board.pairing)]
            for account, sign in ((paired.home_account_id, 1), (paired.away_account_id, -1)):
                line = lines[account]
                line.duplicate_points += sign * board.duplicate_points
                line.boards += 1
        elif kind == "match_scored":
            match = event.match_scored
            paired = pairings[(match.round, match.pairing)]
            sides = (
                (paired.home_account_id, paired.away_account_id, 1, match.home_substituted),
                (paired.away_account_id, paired.home_account_id, -1, match.away_substituted),
            )
            for account, opponent, sign, substituted in sides:
                line = lines[account]
                points = sign * match.duplicate_points
                won = 1.0 if points > 0 else 0.5 if points == 0 else 0.0
                line.match_points += won
                line.won += points > 0
                line.tied += points == 0
                line.lost += points < 0
                line.substituted += substituted
                line.cells.append(
                    tournament_pb2.CrosstableCell(
                        opponent_account_id=opponent, duplicate_points=points, match_points=won
                    )
                )
    ranked = sorted(
        lines.values(),
        key=lambda line: (
            -line.match_points,
            -line.duplicate_points,
            -line.won,
            line.substituted,
            line.order,
        ),
    )
    result = tournament_pb2.Standings(sequence=sequence)
    for rank, line in enumerate(ranked, start=1):
        result.lines.append(
            tournament_pb2.StandingsLine(
                rank=rank,
                account_id=line.entrant.account_id,
                name=line.entrant.name,
                match_points=line.match_points,
                won=line.won,
                tied=line.tied,
                lost=line.lost,
                duplicate_points=line.duplicate_points,
                boards=line.boards,
                substituted_matches=line.substituted,
            )
        )
        result.crosstable.append(
            tournament_pb2.CrosstableRow(account_id=line.entrant.account_id, cells=line.cells)
        )
    return result


# ---------------------------------------------------------------------------------- verification


@dataclass(frozen=True, slots=True)
class TournamentVerification:
    """What a verified tournament record showed."""

    seed_commitment: bytes
    tables: int
    boards: int
    standings: tournament_pb2.Standings


def verify_tournament(record: tournament_pb2.TournamentRecord) -> TournamentVerification:
    """Check a finished tournament's record offline: the seed against its commitment, every
    table's GameRecord (seed, commitment, deals; then replayed by the engine, so every card and
    score is one the rules give), each table's boards against the deals the seed derives, every
    scored board and match against the tables, and the standings.

    Raises :class:`TournamentVerificationError` at the first check that fails."""
    events = list(record.events)
    if not events or events[0].WhichOneof("kind") != "created":
        raise TournamentVerificationError("the record does not start with TournamentCreated")
    created = events[0].created
    ended = [e.ended for e in events if e.WhichOneof("kind") == "ended"]
    if not ended:
        raise TournamentVerificationError("the tournament has not ended: its seed is not revealed")
    seed = ended[-1].seed
    if commitment(seed) != created.seed_commitment:
        raise TournamentVerificationError(
            f"bad commitment: SHA-256 of the revealed seed is {commitment(seed).hex()}, "
            f"but the tournament published {created.seed_commitment.hex()}"
        )
    derivation = derivation_of(created.shuffle_version)
    rules = rules_from_proto(created.settings.rules)
    boards = created.settings.boards
    tables = {table.table_id: table for table in record.tables}
    recorded: dict[tuple[int, int, int], tournament_pb2.BoardScored] = {}
    matches: dict[tuple[int, int], tournament_pb2.MatchScored] = {}
    for event in events:
        if event.WhichOneof("kind") == "board_scored":
            b = event.board_scored
            recorded[(b.round, b.pairing, b.board)] = b
        elif event.WhichOneof("kind") == "match_scored":
            matches[(event.match_scored.round, event.match_scored.pairing)] = event.match_scored
    checked_tables = 0
    checked_boards = 0
    for event in events:
        if event.WhichOneof("kind") != "round_paired":
            continue
        paired = event.round_paired
        before = events[: events.index(event)]
        entrant_ids = [
            e.account_id for e in next(e.started for e in events if e.HasField("started")).entrants
        ]
        expected_pairs = pair_round(created.settings.format, entrant_ids, paired.round, before)
        got_pairs = [(p.home_account_id, p.away_account_id) for p in paired.pairings]
        if got_pairs != expected_pairs:
            raise TournamentVerificationError(
                f"round {paired.round}: the pairings are not the ones the format gives"
            )
        for pairing in paired.pairings:
            if not pairing.away_account_id:
                continue
            expected_deals = pairing_boards(
                seed, paired.round, pairing.index, rules, boards, derivation
            )
            table_seed = pairing_table_seed(seed, paired.round, pairing.index, derivation)
            if len(pairing.table_ids) != 2:
                raise TournamentVerificationError(
                    f"round {paired.round}, pairing {pairing.index + 1}: a pairing has two tables"
                )
            legs: list[list[ev.Event]] = []
            for leg, table_id in enumerate(pairing.table_ids):
                where = f"round {paired.round}, pairing {pairing.index + 1}, table {leg + 1}"
                table = tables.get(table_id)
                if table is None:
                    raise TournamentVerificationError(
                        f"{where}: the record has no table {table_id}"
                    )
                try:
                    verify(table)
                    replay(table)  # every action legal and every result the engine's
                except RecordError as error:
                    raise TournamentVerificationError(f"{where}: {error}") from error
                table_events = events_of(table)
                first = table_events[0]
                assert isinstance(first, ev.TableCreated)
                preset = [[sorted(cards) for cards in d] for d in first.preset_deals or ()]
                if preset != [[sorted(cards) for cards in d] for d in expected_deals]:
                    raise TournamentVerificationError(
                        f"{where}: its boards are not the ones the revealed seed derives"
                    )
                if first.seed_commitment != commitment(table_seed):
                    raise TournamentVerificationError(
                        f"{where}: its seed is not the one the revealed seed derives"
                    )
                legs.append(table_events)
                checked_tables += 1
            score = score_pairing(paired.round, pairing.index, legs[0], legs[1])
            for board in score.boards:
                key = (board.round, board.pairing, board.board)
                if recorded.get(key) != board:
                    raise TournamentVerificationError(
                        f"round {board.round}, pairing {board.pairing + 1}, board {board.board}: "
                        "the scored board differs from the tables' scores"
                    )
                checked_boards += 1
            if score.match != matches.get((paired.round, pairing.index)):
                raise TournamentVerificationError(
                    f"round {paired.round}, pairing {pairing.index + 1}: the scored match "
                    "differs from the tables'"
                )
    if checked_boards != len(recorded):
        raise TournamentVerificationError("the record scores boards no pair of tables played")
    try:
        recomputed = standings(events)
    except KeyError as error:
        raise TournamentVerificationError(
            f"the events score an entrant or pairing the tournament does not have ({error})"
        ) from error
    final = ended[-1].standings
    without_sequence = tournament_pb2.Standings(lines=final.lines, crosstable=final.crosstable)
    again = tournament_pb2.Standings(lines=recomputed.lines, crosstable=recomputed.crosstable)
    if without_sequence != again:
        raise TournamentVerificationError(
            "the final standings differ from those the scored boards and matches give"
        )
    if record.HasField("standings") and record.standings.lines != recomputed.lines:
        raise TournamentVerificationError("the record's standings differ from the recomputed ones")
    return TournamentVerification(
        created.seed_commitment, checked_tables, checked_boards, recomputed
    )


# ---------------------------------------------------------------------------------- files


def save_tournament_record(record: tournament_pb2.TournamentRecord, path: str | Path) -> None:
    """Write a tournament record: protobuf JSON for a ``.json`` path, else binary."""
    if str(path).endswith(".json"):
        Path(path).write_text(json_format.MessageToJson(record) + "\n", encoding="utf-8")
    else:
        Path(path).write_bytes(record.SerializeToString())


def load_tournament_record(path: str | Path) -> tournament_pb2.TournamentRecord:
    """Read a tournament record (JSON for a ``.json`` path, else binary); RecordError if not."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise RecordError(f"{path}: {error.strerror or error}") from error
    record = tournament_pb2.TournamentRecord()
    try:
        if str(path).endswith(".json"):
            json_format.Parse(data.decode("utf-8"), record)
        else:
            record.ParseFromString(data)
    except (json_format.ParseError, DecodeError, UnicodeDecodeError) as error:
        raise RecordError(f"{path}: not a tournament record ({error})") from error
    return record


def render_standings(standings: tournament_pb2.Standings) -> str:
    """The standings as a plain text table; every entrant's name whole (account names run to
    32 characters: two that begin alike must not look the same)."""
    width = max([24, *(len(line.name) for line in standings.lines)])
    heads = f"{'MP':>5} {'W-T-L':>7} {'dup':>6} {'boards':>6}  note"
    lines = [f"{'#':>2}  {'entrant':<{width}} {heads}"]
    for line in standings.lines:
        note = (
            f"house bot or clock in {line.substituted_matches}" if line.substituted_matches else ""
        )
        lines.append(
            f"{line.rank:>2}  {line.name:<{width}} {line.match_points:>5g} "
            f"{f'{line.won}-{line.tied}-{line.lost}':>7} {line.duplicate_points:>+6} "
            f"{line.boards:>6}  {note}".rstrip()
        )
    return "\n".join(lines) + "\n"
