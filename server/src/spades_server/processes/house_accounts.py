"""House-bot accounts: the rated accounts the server's house bots play the rated queue with.

The server owns one bot account per house-bot kind, ``House Heuristic``, ``House Search`` and
``House Random`` (:data:`NAMES`), made when the rated queue first needs them (a rated table has
waited ``--rated-fill-after``; a log that never sees one holds none): each is created with its
stream's expected version 0, so the first replica to make it does and every other one finds it
there (:meth:`AccountStore.create_house`), on every start after that too.
Their creation rows say ``house``, so an account someone else made under such a name (before
names starting with "House " were kept for the server) is never taken for the house's. They have
no key: the pool seats them in-process (the lobby's own join, with all its checks) and each
house bot plays its seat with the seat token that join returns, through the public Play API.
They are rated like any account, and leaderboards mark them (``LeaderboardEntry.house``).

Which account fills which seat (:func:`fill_plan`): each side with free seats gets one house
account for all of them (one entrant, as a bot playing both seats of a side is), the first of
the pool's kinds, in order, that sits on no other side; an account already on the side keeps
it. So a lone player at a partnership table gets ``House Heuristic`` as partner and
``House Search`` (both seats) as opponents.

>>> fill_plan(["ada", "", "", ""], [(0, 2), (1, 3)], ["heuristic", "search"], NAMES)
[(2, 'heuristic'), (1, 'search'), (3, 'search')]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import structlog

from spades_server.domain.accounts import Account, account_id_for
from spades_server.store.account_store import AccountStore

log = structlog.get_logger(__name__)

#: The house account of each house-bot kind.
NAMES: dict[str, str] = {
    "heuristic": "House Heuristic",
    "search": "House Search",
    "random": "House Random",
}
#: The kinds the rated queue is filled with, in order of preference: the heuristic and the
#: search bot are close in strength (a lone player's partner and opponents are matched), the
#: random bot is the last resort.
RATED_FILL_KINDS = ("heuristic", "search", "random")


def available_kinds(kinds: Sequence[str]) -> list[str]:
    """The kinds of ``kinds`` whose bot this installation has (the bots distribution's)."""
    from spades_bots.registry import bot_class  # the bots are only needed once one plays

    found = []
    for kind in kinds:
        try:
            bot_class(kind)
        except (ImportError, ValueError):
            log.warning("house bot kind unavailable", kind=kind)
            continue
        found.append(kind)
    return found


async def ensure(store: AccountStore, kinds: Sequence[str]) -> dict[str, Account]:
    """The house account of each kind, made if missing (idempotent, once across replicas)."""
    made: dict[str, Account] = {}
    for kind in kinds:
        account = await store.create_house(NAMES[kind])
        if account is None:
            log.warning("house account name taken by another account", name=NAMES[kind])
            continue
        made[kind] = account
    return made


def fill_plan(
    seat_accounts: Sequence[str],
    sides: Sequence[Sequence[int]],
    kinds: Sequence[str],
    names: Mapping[str, str],
) -> list[tuple[int, str]]:
    """(seat, house kind) for every free seat (an empty ``seat_accounts`` entry) that a house
    account may take: per side, one account for all its free seats, never one that sits on
    another side (a rated table seats an account on one side only)."""
    ids = {kind: account_id_for(names[kind]) for kind in kinds}
    kind_of = {account_id: kind for kind, account_id in ids.items()}
    taken: dict[str, int] = {}  # account id -> its side
    for number, side in enumerate(sides):
        for seat in side:
            if seat_accounts[seat]:
                taken[seat_accounts[seat]] = number
    plan: list[tuple[int, str]] = []
    for number, side in enumerate(sides):
        free = [seat for seat in side if not seat_accounts[seat]]
        if not free:
            continue
        own = [kind_of[a] for a in (seat_accounts[s] for s in side) if a in kind_of]
        choice = own[0] if own else next((k for k in kinds if ids[k] not in taken), None)
        if choice is None:
            continue
        taken[ids[choice]] = number
        plan.extend((seat, choice) for seat in free)
    return plan
