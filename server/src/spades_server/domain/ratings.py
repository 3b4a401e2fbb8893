"""Rated play: rating pools, the Weng-Lin model, and each pool's stream of rated matches.

A **pool** is a family of rule sets rated together (:func:`pool_of`): "partnership" (four
players, the default rules, any match length) and "cutthroat" (three players, likewise). Each
pool is one stream of the event log, ``ratings-<pool>``, of ``MatchRated`` events: a finished
rated table is rated by appending its MatchRated with the pool's expected version, after
checking that the pool has not rated the table yet, so a match is rated exactly once whichever
replica sees it end first, and every match of a pool is rated in one order. A pool's ratings are
the fold of its stream (:class:`Pool`), and the stream is a function of the tables' logs
(:func:`match_result`, :func:`rate`), so it can be recomputed from them.

The model is openskill's Plackett-Luce (Weng-Lin): every entrant starts at mu 25, sigma 25/3;
an account playing both seats of a side is one entrant (a team of one), partners are a team of
two. Sides are ranked by the engine's result: the winners first, then by final score. A player
is provisional until it has played :data:`PROVISIONAL_MATCHES` rated matches in the pool.

Fair to the absent: when a house bot finished a seat for its player (the table's log has a
``SeatSubstituted``), the match counts as a loss for that player alone, rated against the
opposing side(s), and changes nothing for anyone else, its partner included."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

from openskill.models import PlackettLuce, PlackettLuceRating

from spades.engine import Clock, Rules
from spades.engine import events as ev
from spades.reasons import Reason
from spades.v1 import rating_pb2
from spades_server.domain import errors
from spades_server.domain.tables import Table

#: Rated matches in a pool before a player's rating there is no longer provisional.
PROVISIONAL_MATCHES = 10


PARTNERSHIP = "partnership"


CUTTHROAT = "cutthroat"


POOLS = (PARTNERSHIP, CUTTHROAT)


MODEL = PlackettLuce()


_DEFAULT = MODEL.rating()


DEFAULT_MU: float = _DEFAULT.mu


DEFAULT_SIGMA: float = _DEFAULT.sigma


def pool_of(rules: Rules) -> str | None:
    """The pool a rule set is rated in, None when it is rated in none.

    >>> pool_of(Rules(max_hands=25)), pool_of(Rules(players=3)), pool_of(Rules(jokers=True))
    ('partnership', 'cutthroat', None)
    """
    # The match's length and clock do not change what is being measured.
    normalized = dataclasses.replace(
        rules, target_score=500, max_hands=None, loss_threshold=None, clock=Clock()
    )
    if normalized == Rules():
        return PARTNERSHIP
    if normalized == Rules(players=3):
        return CUTTHROAT
    return None


def pool_not_found(pool: str) -> errors.RequestError:
    return errors.refuse(
        Reason.POOL_NOT_FOUND, f"there is no rating pool {pool!r}; the pools are {', '.join(POOLS)}"
    )


# ---------------------------------------------------------------------------------- aggregate


@dataclass
class Standing:
    """A player's rating in one pool."""

    mu: float = DEFAULT_MU
    sigma: float = DEFAULT_SIGMA
    matches: int = 0

    @classmethod
    def of(cls, rating: rating_pb2.Rating) -> Standing:
        return cls(rating.mu, rating.sigma, rating.matches)

    def to_proto(self) -> rating_pb2.Rating:
        return rating_pb2.Rating(
            mu=self.mu,
            sigma=self.sigma,
            score=self.mu - 3 * self.sigma,
            matches=self.matches,
            provisional=self.matches < PROVISIONAL_MATCHES,
        )


@dataclass
class Pool:
    """One pool, as its stream says: every player's standing and every rated match."""

    name: str
    version: int = 0
    standings: dict[str, Standing] = field(default_factory=dict)
    rated_tables: set[str] = field(default_factory=set)
    #: Every rated match, oldest first.
    matches: list[rating_pb2.MatchRated] = field(default_factory=list)
    #: Each rated table's match.
    by_table: dict[str, rating_pb2.MatchRated] = field(default_factory=dict)

    def fold(self, version: int, match: rating_pb2.MatchRated) -> None:
        if version <= self.version:
            return
        for change in match.changes:
            self.standings[change.account_id] = Standing.of(change.after)
        self.rated_tables.add(match.table_id)
        self.matches.append(match)
        self.by_table[match.table_id] = match
        self.version = version

    def standing(self, account_id: str) -> Standing:
        return self.standings.get(account_id) or Standing()

    def leaderboard(self) -> list[tuple[str, Standing]]:
        """Every player, best score first (ties: more matches, then by id, for a stable order)."""
        return sorted(
            self.standings.items(),
            key=lambda item: (-(item[1].mu - 3 * item[1].sigma), -item[1].matches, item[0]),
        )


# ---------------------------------------------------------------------------------- decisions


@dataclass(frozen=True)
class MatchResult:
    """What a finished rated table says for its ratings."""

    table_id: str
    pool: str
    #: The entrants of each side (account ids, one per account: a bot on both seats is one).
    sides: list[list[str]]
    #: Each side's rank, 0 the best (equal ranks are a draw).
    ranks: list[int]
    #: Accounts a house bot substituted for during the match.
    substituted: frozenset[str] = frozenset()


def match_result(table: Table) -> MatchResult | None:
    """The result to rate for a finished rated table; None when there is nothing to rate (not
    rated, not over, closed by the operator, or a seat without an account)."""
    if not table.rated or not table.finished:
        return None
    pool = pool_of(table.state.rules)
    ended = next((e for e in reversed(table.events) if isinstance(e, ev.MatchEnded)), None)
    if pool is None or ended is None or ended.reason is ev.EndReason.CLOSED:
        return None
    sides: list[list[str]] = []
    for side in table.state.rules.sides:
        accounts = [table.seat_accounts.get(seat, "") for seat in side]
        if not all(accounts):
            return None
        sides.append(list(dict.fromkeys(accounts)))
    everyone = [account for side in sides for account in side]
    if len(everyone) != len(set(everyone)):
        return None  # one account on two sides: refused at the join, never rated
    substituted = frozenset(
        table.seat_accounts[event.seat]
        for event in table.events
        if isinstance(event, ev.SeatSubstituted)
    )
    return MatchResult(
        table_id=table.table_id,
        pool=pool,
        sides=sides,
        ranks=side_ranks(table.state.rules.sides, ended),
        substituted=substituted,
    )


def side_ranks(sides: Sequence[Sequence[int]], ended: ev.MatchEnded) -> list[int]:
    """Each side's rank in a match that ended so, 0 the best: the winners first, then by final
    score (equal ranks are a draw).

    >>> ended = ev.MatchEnded(ev.EndReason.TARGET_SCORE, winners=(1, 3), final_scores=(320, 510))
    >>> side_ranks([(0, 2), (1, 3)], ended)
    [1, 0]
    """
    winners = set(ended.winners)
    keys = [
        (not winners.intersection(side), -ended.final_scores[index])
        for index, side in enumerate(sides)
    ]
    distinct = sorted(set(keys))
    return [distinct.index(key) for key in keys]


def rate(pool: Pool, result: MatchResult) -> rating_pb2.MatchRated:
    """The pool's MatchRated for ``result``: every entrant's rating before and after."""
    changes: dict[str, rating_pb2.RatingChange] = {}
    if not result.substituted:
        teams = [[_model_rating(pool.standing(a)) for a in side] for side in result.sides]
        rated = MODEL.rate(teams, ranks=[float(rank) for rank in result.ranks])
        for side, rank, new_side in zip(result.sides, result.ranks, rated, strict=True):
            outcome = rating_pb2.MATCH_OUTCOME_WON if rank == 0 else rating_pb2.MATCH_OUTCOME_LOST
            for account, new in zip(side, new_side, strict=True):
                changes[account] = _change(pool.standing(account), account, new, outcome)
    else:
        for index, side in enumerate(result.sides):
            for account in side:
                before = pool.standing(account)
                if account not in result.substituted:
                    changes[account] = rating_pb2.RatingChange(
                        account_id=account,
                        before=before.to_proto(),
                        after=before.to_proto(),
                        outcome=rating_pb2.MATCH_OUTCOME_NOT_RATED,
                    )
                    continue
                # A loss for this player alone, against the opposing side(s) as they stand.
                opponents = [
                    [_model_rating(pool.standing(a)) for a in other]
                    for number, other in enumerate(result.sides)
                    if number != index
                ]
                teams = [[_model_rating(before)], *opponents]
                rated = MODEL.rate(teams, ranks=[1.0] + [0.0] * len(opponents))
                changes[account] = _change(
                    before, account, rated[0][0], rating_pb2.MATCH_OUTCOME_SUBSTITUTED
                )
    ordered = [changes[account] for side in result.sides for account in side]
    return rating_pb2.MatchRated(table_id=result.table_id, pool=result.pool, changes=ordered)


def _model_rating(standing: Standing) -> PlackettLuceRating:
    return MODEL.rating(mu=standing.mu, sigma=standing.sigma)


def _change(
    before: Standing,
    account: str,
    new: PlackettLuceRating,
    outcome: rating_pb2.MatchOutcome.ValueType,
) -> rating_pb2.RatingChange:
    after = Standing(float(new.mu), float(new.sigma), before.matches + 1)
    return rating_pb2.RatingChange(
        account_id=account, before=before.to_proto(), after=after.to_proto(), outcome=outcome
    )


def recompute(results: Sequence[MatchResult]) -> dict[str, Pool]:
    """Every pool as rating ``results`` in this order gives (what the pools' streams hold)."""
    pools = {name: Pool(name) for name in POOLS}
    for result in results:
        pool = pools[result.pool]
        pool.fold(pool.version + 1, rate(pool, result))
    return pools
