"""The kinds of stream in the one event log: tables, accounts, rating pools, challenges and
tournaments.

Every aggregate is a stream of the same log, so each has the log's guarantees (expected
version, survives a kill, replayable). A table's id is lowercase hex; the others' stream ids
start with their kind's prefix, so a reader that folds tables (the lobby, the integrity check)
knows which streams are not tables'.

>>> is_table_stream("0a1b2c"), is_table_stream(ACCOUNT_PREFIX + "0a1b")
(True, False)
"""

from __future__ import annotations

from typing import Final

#: An account's stream: ``account-<account id>`` (spades_server.domain.accounts).
ACCOUNT_PREFIX: Final = "account-"
#: A rating pool's stream: ``ratings-<pool>`` (spades_server.domain.ratings).
POOL_PREFIX: Final = "ratings-"
#: A challenge's stream: ``challenge-<challenge id>`` (spades_server.domain.challenges).
CHALLENGE_PREFIX: Final = "challenge-"
#: A tournament's stream: ``tournament-<tournament id>``, and the index ``tournament-index``
#: (spades_server.domain.tournaments).
TOURNAMENT_PREFIX: Final = "tournament-"


def is_table_stream(stream_id: str) -> bool:
    return not stream_id.startswith(
        (ACCOUNT_PREFIX, POOL_PREFIX, CHALLENGE_PREFIX, TOURNAMENT_PREFIX)
    )
