"""An account's finished matches ("my games"): each match as one account played it, the filters
of a listing, and its page tokens.

When a match ends, :func:`games_of` turns the table's lobby summary and its ``MatchEnded`` into
one :class:`~spades.v1.games_pb2.Game` per account that sat there (its seats marked SELF, its
partners and opponents, its side's outcome); the lobby keeps them as projection rows
(:mod:`spades_server.processes.games`). A listing (:class:`GamesQuery`) filters them by rated
or not, the opponents' kind and one opponent. Its page token is ``<offset>.<digest>``: the
offset in the account's rows, and a digest of the query, so a token is refused with another
account or other filters (PAGE_TOKEN_MISMATCH) instead of paging a listing it was not made for.

>>> query = GamesQuery("a1", rated=games_pb2.RATED_FILTER_RATED)
>>> read_token(token_of(40, query), query)
40
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from spades import protocol
from spades.reasons import Reason
from spades.v1 import events_pb2, games_pb2, lobby_pb2
from spades_server.domain import errors
from spades_server.domain.tables import timestamp

_RATED = frozenset(games_pb2.RatedFilter.values())
_OPPONENTS = frozenset(games_pb2.OpponentsFilter.values())


def games_of(
    summary: lobby_pb2.Table, ended: events_pb2.MatchEnded, ended_at: float
) -> dict[str, games_pb2.Game]:
    """Each account's game at a table whose match ended so (anonymous seats have none)."""
    sides = protocol.rules_from_proto(summary.rules).sides
    side_of = {seat: index for index, side in enumerate(sides) for seat in side}
    winners = {protocol.seat_from_proto(seat) for seat in ended.winners}
    games: dict[str, games_pb2.Game] = {}
    for status in summary.seats:
        account_id = status.account_id
        if not account_id or account_id in games:
            continue
        held = [
            protocol.seat_from_proto(s.seat) for s in summary.seats if s.account_id == account_id
        ]
        side = side_of[held[0]]
        game = games_pb2.Game(
            table_id=summary.table_id,
            name=summary.name,
            rules=summary.rules,
            badges=summary.badges,
            rated=summary.rated,
            private=summary.private,
            create_time=summary.create_time,
            end_time=timestamp(ended_at),
            final_scores=ended.final_scores,
            side=side,
        )
        if not winners:
            game.outcome = games_pb2.GAME_OUTCOME_CLOSED
        elif winners.intersection(sides[side]):
            game.outcome = games_pb2.GAME_OUTCOME_WON
        else:
            game.outcome = games_pb2.GAME_OUTCOME_LOST
        for seat_status in summary.seats:
            seat = protocol.seat_from_proto(seat_status.seat)
            if seat in held:
                relation = games_pb2.GAME_RELATION_SELF
            elif side_of[seat] == side:
                relation = games_pb2.GAME_RELATION_PARTNER
            else:
                relation = games_pb2.GAME_RELATION_OPPONENT
            game.players.add(
                seat=seat_status.seat,
                name=seat_status.player_name,
                bot=seat_status.bot,
                account_id=seat_status.account_id,
                relation=relation,
            )
        games[account_id] = game
    return games


@dataclass(frozen=True)
class GamesQuery:
    """One listing of an account's games: whose, which, and whether private tables count (only
    for the account itself)."""

    account_id: str
    rated: games_pb2.RatedFilter.ValueType = games_pb2.RATED_FILTER_UNSPECIFIED
    opponents: games_pb2.OpponentsFilter.ValueType = games_pb2.OPPONENTS_FILTER_UNSPECIFIED
    opponent_id: str = ""
    include_private: bool = False

    def admits(self, game: games_pb2.Game) -> bool:
        """Whether ``game`` is in this listing."""
        if self.rated == games_pb2.RATED_FILTER_RATED and not game.rated:
            return False
        if self.rated == games_pb2.RATED_FILTER_UNRATED and game.rated:
            return False
        if game.private and not self.include_private:
            return False
        opponents = [p for p in game.players if p.relation == games_pb2.GAME_RELATION_OPPONENT]
        if self.opponents == games_pb2.OPPONENTS_FILTER_BOTS and not all(p.bot for p in opponents):
            return False
        if self.opponents == games_pb2.OPPONENTS_FILTER_PEOPLE and all(p.bot for p in opponents):
            return False
        return not self.opponent_id or any(p.account_id == self.opponent_id for p in opponents)

    def digest(self) -> str:
        """8 hex digits that differ between listings (a page token carries them)."""
        text = (
            f"{self.account_id}|{self.rated}|{self.opponents}|{self.opponent_id}|"
            f"{self.include_private}"
        )
        return hashlib.sha256(text.encode()).hexdigest()[:8]


def check_filters(request: games_pb2.ListGamesRequest) -> None:
    """INVALID_ARGUMENT (INVALID_GAMES_FILTER) for a filter value the listing does not have."""
    if request.rated not in _RATED:
        raise errors.refuse(
            Reason.INVALID_GAMES_FILTER,
            f"there is no rated filter {request.rated}: any (0), rated (1) or unrated (2)",
            field="rated",
        )
    if request.opponents not in _OPPONENTS:
        raise errors.refuse(
            Reason.INVALID_GAMES_FILTER,
            f"there is no opponents filter {request.opponents}: any (0), bots (1) or people (2)",
            field="opponents",
        )


def check_opponent(query: GamesQuery) -> None:
    """INVALID_GAMES_FILTER for an opponent that is the account itself."""
    if query.opponent_id and query.opponent_id == query.account_id:
        raise errors.refuse(
            Reason.INVALID_GAMES_FILTER,
            "an account never plays against itself: name another account as the opponent",
            field="opponent",
        )


def token_of(offset: int, query: GamesQuery) -> str:
    return f"{offset}.{query.digest()}"


def read_token(token: str, query: GamesQuery) -> int:
    """The offset a page token names (0 for none); INVALID_PAGE_TOKEN for a token this server
    did not give out, PAGE_TOKEN_MISMATCH for one of another listing."""
    if not token:
        return 0
    offset, _, digest = token.partition(".")
    if not (offset.isascii() and offset.isdigit() and len(digest) == 8 and len(offset) < 12):
        raise errors.refuse(
            Reason.INVALID_PAGE_TOKEN,
            "page_token is not one this server gave out",
            field="page_token",
        )
    if digest != query.digest():
        raise errors.refuse(
            Reason.PAGE_TOKEN_MISMATCH,
            "this page_token belongs to another listing (another account or other filters): "
            "send the same account and filters, or start from the first page",
            field="page_token",
        )
    return int(offset)
