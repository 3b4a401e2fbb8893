"""LobbyService.ListGames: an account's finished matches ("my games"), paged and filtered.

A mixin of :class:`~spades_server.api.lobby.LobbyServicer`: the account and the opponent are
named by id or name (:mod:`spades_server.domain.accounts`), the filters and page tokens read by
:mod:`spades_server.domain.games`, the games paged from the lobby's index
(:mod:`spades_server.processes.games`), and each rated game given the account's change from
its pool (:mod:`spades_server.store.rating_store`). Games at private tables are listed only to
the account itself (its key or session as Bearer).
"""

from __future__ import annotations

from typing import Any

import grpc

from spades import protocol
from spades.reasons import Reason
from spades.v1 import games_pb2
from spades_server.api.auth import bearer_key_from, caller_address
from spades_server.domain import accounts, errors, games, paging, ratings
from spades_server.domain.accounts import Account
from spades_server.processes.projection import LobbyProjection
from spades_server.store.account_store import AccountStore
from spades_server.store.rating_store import PoolStore

Context = grpc.aio.ServicerContext[Any, Any]

DEFAULT_GAMES_PAGE = 20
MAX_GAMES_PAGE = 100
MAX_ID = 64


class GamesCalls:
    """ListGames."""

    _projection: LobbyProjection
    _accounts: AccountStore | None
    _pools: PoolStore | None

    async def ListGames(
        self, request: games_pb2.ListGamesRequest, context: Context
    ) -> games_pb2.ListGamesResponse:
        store = self._accounts
        if store is None:  # a lobby served without accounts (some tests): no account's games
            raise accounts.account_not_found(repr(request.account_id or request.name))
        if bool(request.account_id) == bool(request.name):
            raise errors.refuse(
                Reason.ACCOUNT_ID_OR_NAME,
                "name the account by account_id or by name (one of the two)",
            )
        games.check_filters(request)
        if len(request.page_token) > MAX_ID:
            raise errors.refuse(
                Reason.INVALID_PAGE_TOKEN,
                "page_token is not one this server gave out",
                field="page_token",
            )
        _, size = paging.window(request.page_size, "", DEFAULT_GAMES_PAGE, MAX_GAMES_PAGE)
        account = await _named(store, request.account_id or request.name)
        opponent = await _named(store, request.opponent) if request.opponent.strip() else None
        query = games.GamesQuery(
            account.account_id,
            rated=request.rated,
            opponents=request.opponents,
            opponent_id=opponent.account_id if opponent else "",
            include_private=await _is_caller(store, account, context),
        )
        games.check_opponent(query)
        offset = games.read_token(request.page_token, query)
        found, next_offset = await self._projection.games.page(query, offset, size)
        for game in found:
            if game.rated and self._pools is not None:
                await self._rating_change(game, account.account_id)
        return games_pb2.ListGamesResponse(
            account_id=account.account_id,
            games=found,
            next_page_token="" if next_offset is None else games.token_of(next_offset, query),
        )

    async def _rating_change(self, game: games_pb2.Game, account_id: str) -> None:
        assert self._pools is not None
        for name in _pools_of(game):
            match = (await self._pools.load(name)).by_table.get(game.table_id)
            if match is None:
                continue
            game.pool = name
            for change in match.changes:
                if change.account_id == account_id:
                    game.rating_change.CopyFrom(change)


def _pools_of(game: games_pb2.Game) -> list[str]:
    pool = ratings.pool_of(protocol.rules_from_proto(game.rules))
    return [pool] if pool else []


async def _named(store: AccountStore, which: str) -> Account:
    """The account ``which`` names: its id, else its name (any case)."""
    which = which.strip()
    if len(which) > MAX_ID:
        raise accounts.account_not_found(f"{which[:MAX_ID]!r}…")
    if "\x00" not in which:
        try:
            return await store.load(which)
        except errors.RequestError as error:
            if error.code is not grpc.StatusCode.NOT_FOUND:
                raise
    try:
        return await store.load(accounts.account_id_for(which))
    except errors.RequestError:
        raise accounts.account_not_found(f"named {which!r}") from None


async def _is_caller(store: AccountStore, account: Account, context: Context) -> bool:
    """Whether the call is made with the account's own key or session."""
    key = bearer_key_from(context)
    if key is None:
        return False
    caller = await store.authenticate(key, address=caller_address(context))
    return caller.account_id == account.account_id
