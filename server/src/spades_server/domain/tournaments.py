"""Duplicate tournaments as event-sourced aggregates, and the driver that runs them.

Each tournament is one stream of the event log, ``tournament-<id>``, of
``spades.server.v1.TournamentLogEntry`` rows: the public ``spades.v1.TournamentEvent`` and,
beside the TournamentCreated, the secret seed every deal is derived from
(:mod:`spades.records.tournament`). Every event is appended with the stream's expected version,
so two replicas never pair a round twice, never score a board twice: the loser of a race finds
the stream moved, reloads, and decides again (finding nothing left to do). The stream
``tournament-index`` lists every tournament once (for ListTournaments and for the driver's
start).

The driver (:class:`TournamentDriver`) advances a tournament whenever one of its tables changes
on this replica, and every ``poll`` seconds for all of them (another replica's tables, a start
time, a server that was killed): it starts a tournament once its entrants are in, pairs rounds,
opens each pairing's two tables (ids derived from the tournament, the round, the pairing and the
leg, so a second replica's or a restarted server's attempt finds the table there), seats the
entrants' accounts, tells their account streams (TableAssigned), scores every board both tables
have played, scores the match once both ended, and ends the tournament (revealing the seed).
Everything it does is idempotent, so on start a server simply advances every tournament that is
not over."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

from spades import protocol
from spades.engine import Rules
from spades.engine.shuffle import SHUFFLE_VERSION, commitment
from spades.reasons import Reason
from spades.records import tournament as rules_of_play
from spades.v1 import tournament_pb2
from spades_server.domain import accounts, errors, ratings
from spades_server.domain.checks import rules_of
from spades_server.domain.tables import Table, timestamp

MAX_TOURNAMENT_NAME = 64


MAX_BOARDS = 13


MIN_ENTRANTS = 2


MAX_ENTRANTS = 16


#: Who may create tournaments (``--tournaments``): the operator only, or any account too.
ORGANISER_CHOICES = ("operator", "accounts")


Status = tournament_pb2.TournamentStatus


ENTERING = tournament_pb2.TOURNAMENT_STATUS_ENTERING


RUNNING = tournament_pb2.TOURNAMENT_STATUS_RUNNING


FINISHED = tournament_pb2.TOURNAMENT_STATUS_FINISHED


def table_id_for(tournament_id: str, round_number: int, pairing: int, leg: int) -> str:
    """The id of a pairing's table: derived, so that every replica opens the same one."""
    text = f"spades-tournament-table/{tournament_id}/{round_number}/{pairing}/{leg}"
    return hashlib.sha256(text.encode()).hexdigest()[:20]


# ---------------------------------------------------------------------------------- journal


@dataclass(frozen=True)
class TournamentEntry:
    sequence: int
    position: int
    recorded_at: float
    message: tournament_pb2.TournamentEvent
    seed: bytes = b""
    request_id_sha256: bytes = b""


# ---------------------------------------------------------------------------------- aggregate


@dataclass
class Tournament:
    tournament_id: str
    version: int = 0
    settings: tournament_pb2.TournamentSettings = field(
        default_factory=tournament_pb2.TournamentSettings
    )
    organiser: str = ""
    seed_commitment: bytes = b""
    #: The derivation of its deals from the seed (docs/tournaments.md), as created.
    derivation: str = rules_of_play.DERIVATION
    seed: bytes = b""
    created_by_request: bytes = b""
    created_at: float = 0.0
    status: Status.ValueType = ENTERING
    entrants: list[tournament_pb2.Entrant] = field(default_factory=list)
    rounds: int = 0
    paired: list[tournament_pb2.RoundPairings] = field(default_factory=list)
    boards_scored: set[tuple[int, int, int]] = field(default_factory=set)
    matches_scored: set[tuple[int, int]] = field(default_factory=set)
    revealed: bytes = b""
    entries: list[TournamentEntry] = field(default_factory=list)

    def fold(self, entry: TournamentEntry) -> None:
        if entry.sequence <= self.version:
            return
        message = entry.message
        match message.WhichOneof("kind"):
            case "created":
                self.settings = message.created.settings
                self.organiser = message.created.organiser_account_id
                self.seed_commitment = message.created.seed_commitment
                self.derivation = rules_of_play.derivation_of(message.created.shuffle_version)
                self.seed = entry.seed
                self.created_by_request = entry.request_id_sha256
                self.created_at = entry.recorded_at
            case "entered":
                self.entrants.append(message.entered)
            case "withdrew":
                gone = message.withdrew.account_id
                self.entrants = [e for e in self.entrants if e.account_id != gone]
            case "started":
                self.status = RUNNING
                self.rounds = message.started.rounds
                del self.entrants[:]
                self.entrants.extend(message.started.entrants)
            case "round_paired":
                self.paired.append(message.round_paired)
            case "board_scored":
                b = message.board_scored
                self.boards_scored.add((b.round, b.pairing, b.board))
            case "match_scored":
                self.matches_scored.add((message.match_scored.round, message.match_scored.pairing))
            case "ended":
                self.status = FINISHED
                self.revealed = message.ended.seed
        self.entries.append(entry)
        self.version = entry.sequence

    @property
    def events(self) -> list[tournament_pb2.TournamentEvent]:
        return [entry.message for entry in self.entries]

    @property
    def rules(self) -> Rules:
        return protocol.rules_from_proto(self.settings.rules)

    def entrant(self, account_id: str) -> tournament_pb2.Entrant | None:
        return next((e for e in self.entrants if e.account_id == account_id), None)

    def standings(self) -> tournament_pb2.Standings:
        return rules_of_play.standings(self.events)

    def to_proto(self, *, detail: bool = True) -> tournament_pb2.Tournament:
        message = tournament_pb2.Tournament(
            tournament_id=self.tournament_id,
            settings=self.settings,
            status=self.status,
            organiser_account_id=self.organiser,
            entrants=self.entrants,
            round=len(self.paired),
            rounds=self.rounds,
            seed_commitment=self.seed_commitment,
            seed=self.revealed,
            create_time=timestamp(self.created_at),
            sequence=self.version,
        )
        standings = self.standings()
        if detail:
            message.pairings.extend(self.paired)
        else:
            del standings.crosstable[:]
        message.standings.CopyFrom(standings)
        return message


def tournament_not_found(tournament_id: str) -> errors.RequestError:
    return errors.refuse(
        Reason.TOURNAMENT_NOT_FOUND,
        f"there is no tournament {tournament_id!r}",
    )


# ---------------------------------------------------------------------------------- decisions

Decided = list[tuple[tournament_pb2.TournamentEvent, bytes, bytes]]


TournamentDecision = Callable[[Tournament], Decided | None]


def check_settings(
    settings: tournament_pb2.TournamentSettings,
) -> tournament_pb2.TournamentSettings:
    """The settings as the tournament keeps them (rules with max_hands = boards), or
    INVALID_ARGUMENT (INVALID_TOURNAMENT_SETTINGS) naming the field."""

    def bad(why: str, where: str) -> errors.RequestError:
        return errors.refuse(Reason.INVALID_TOURNAMENT_SETTINGS, why, field=f"settings.{where}")

    name = settings.name.strip()
    if not name:
        raise errors.refuse(Reason.MISSING_FIELD, "the tournament name is required", field="name")
    if len(name) > MAX_TOURNAMENT_NAME or not name.isprintable():
        raise bad(f"the name must be 1..{MAX_TOURNAMENT_NAME} printable characters", "name")
    if settings.format not in (
        tournament_pb2.TOURNAMENT_FORMAT_ROUND_ROBIN,
        tournament_pb2.TOURNAMENT_FORMAT_SWISS,
    ):
        raise bad(
            "choose a format: TOURNAMENT_FORMAT_ROUND_ROBIN or TOURNAMENT_FORMAT_SWISS", "format"
        )
    if settings.format == tournament_pb2.TOURNAMENT_FORMAT_SWISS and not (
        1 <= settings.rounds <= MAX_ENTRANTS - 1
    ):
        raise bad(f"a Swiss plays 1..{MAX_ENTRANTS - 1} rounds", "rounds")
    if not 1 <= settings.boards <= MAX_BOARDS:
        raise bad(f"boards per round must be 1..{MAX_BOARDS}", "boards")
    start_when = settings.start_when_entrants
    if start_when and not MIN_ENTRANTS <= start_when <= MAX_ENTRANTS:
        raise bad(
            f"start_when_entrants must be {MIN_ENTRANTS}..{MAX_ENTRANTS} (0: by time)",
            "start_when_entrants",
        )
    if not start_when and not settings.HasField("start_time"):
        raise bad(
            "say when to start: start_when_entrants, start_time or both", "start_when_entrants"
        )
    rules = dataclasses.replace(rules_of(settings.rules), max_hands=settings.boards)
    if rules.players != 4:
        raise bad("a duplicate tournament plays four-player partnership tables", "rules.players")
    if settings.rated and ratings.pool_of(rules) is None:
        raise errors.refuse(
            Reason.RULES_NOT_RATED,
            "these rules belong to no rating pool, so the tournament cannot be rated",
        )
    kept = tournament_pb2.TournamentSettings()
    kept.CopyFrom(settings)
    kept.name = name
    kept.rules.CopyFrom(protocol.rules_to_proto(rules))
    return kept


def decide_creation(
    settings: tournament_pb2.TournamentSettings, organiser: str, seed: bytes, request_digest: bytes
) -> Decided:
    created = tournament_pb2.TournamentCreated(
        settings=settings,
        organiser_account_id=organiser,
        seed_commitment=commitment(seed),
        shuffle_version=f"{SHUFFLE_VERSION}+{rules_of_play.DERIVATION}",
    )
    return [(tournament_pb2.TournamentEvent(created=created), seed, request_digest)]


def _not_started(tournament: Tournament, doing: str) -> None:
    if tournament.status != ENTERING:
        raise errors.refuse(
            Reason.TOURNAMENT_STARTED, f"this tournament has already started, so you cannot {doing}"
        )


def decide_entry(tournament: Tournament, account: accounts.Account) -> Decided:
    _not_started(tournament, "enter it")
    if tournament.entrant(account.account_id) is not None:
        raise errors.refuse(Reason.ALREADY_ENTERED, "this account has entered this tournament")
    if len(tournament.entrants) >= MAX_ENTRANTS:
        raise errors.refuse(
            Reason.TOURNAMENT_FULL, f"this tournament has its {MAX_ENTRANTS} entrants"
        )
    entrant = tournament_pb2.Entrant(account_id=account.account_id, name=account.name)
    return [(tournament_pb2.TournamentEvent(entered=entrant), b"", b"")]


def decide_withdrawal(tournament: Tournament, account_id: str) -> Decided:
    _not_started(tournament, "withdraw")
    entrant = tournament.entrant(account_id)
    if entrant is None:
        raise errors.refuse(Reason.NOT_ENTERED, "this account has not entered this tournament")
    return [(tournament_pb2.TournamentEvent(withdrew=entrant), b"", b"")]


def _pair(
    tournament: Tournament,
    round_number: int,
    events: list[tournament_pb2.TournamentEvent] | None = None,
) -> tournament_pb2.TournamentEvent:
    ids = [e.account_id for e in tournament.entrants]
    so_far = tournament.events if events is None else events
    pairs = rules_of_play.pair_round(tournament.settings.format, ids, round_number, so_far)
    paired = tournament_pb2.RoundPairings(round=round_number)
    for index, (home, away) in enumerate(pairs):
        tables = (
            [table_id_for(tournament.tournament_id, round_number, index, leg) for leg in (0, 1)]
            if away
            else []
        )
        paired.pairings.append(
            tournament_pb2.Pairing(
                index=index, home_account_id=home, away_account_id=away, table_ids=tables
            )
        )
    return tournament_pb2.TournamentEvent(round_paired=paired)


def should_start(tournament: Tournament, now: float) -> bool:
    settings = tournament.settings
    count = len(tournament.entrants)
    if settings.start_when_entrants and count >= settings.start_when_entrants:
        return True
    return (
        settings.HasField("start_time")
        and now >= settings.start_time.ToNanoseconds() / 1e9
        and count >= MIN_ENTRANTS
    )


def decide_progress(tournament: Tournament, tables: dict[str, Table], now: float) -> Decided | None:
    """What the tournament's tables (and the clock) call for next, or None."""
    if tournament.status == FINISHED:
        return None
    if tournament.status == ENTERING:
        if not should_start(tournament, now):
            return None
        count = len(tournament.entrants)
        if tournament.settings.format == tournament_pb2.TOURNAMENT_FORMAT_SWISS:
            rounds = rules_of_play.swiss_rounds(count, tournament.settings.rounds)
        else:
            rounds = len(rules_of_play.rounds_for([e.account_id for e in tournament.entrants]))
        started = tournament_pb2.TournamentStarted(entrants=tournament.entrants, rounds=rounds)
        return [
            (tournament_pb2.TournamentEvent(started=started), b"", b""),
            (_pair(tournament, 1), b"", b""),
        ]
    events: Decided = []
    current = tournament.paired[-1]
    round_over = True
    for pairing in current.pairings:
        if not pairing.away_account_id:
            continue
        legs = [tables[t] for t in pairing.table_ids if t in tables]
        if len(legs) != 2:
            round_over = False
            continue
        score = rules_of_play.score_pairing(
            current.round, pairing.index, legs[0].events, legs[1].events
        )
        for board in score.boards:
            if (board.round, board.pairing, board.board) not in tournament.boards_scored:
                events.append((tournament_pb2.TournamentEvent(board_scored=board), b"", b""))
        if score.match is None:
            round_over = False
        elif (current.round, pairing.index) not in tournament.matches_scored:
            events.append((tournament_pb2.TournamentEvent(match_scored=score.match), b"", b""))
    if round_over:
        so_far = [*tournament.events, *(event for event, _, _ in events)]
        if current.round < tournament.rounds:
            events.append((_pair(tournament, current.round + 1, so_far), b"", b""))
        else:
            final = rules_of_play.standings(so_far)
            ended = tournament_pb2.TournamentEnded(seed=tournament.seed, standings=final)
            events.append((tournament_pb2.TournamentEvent(ended=ended), b"", b""))
    return events or None
