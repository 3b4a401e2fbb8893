"""``spades-bot --config FILE.toml``: an account's bot, run unattended (like lichess-bot's
``config.yml``).

The file names the server, the account's key (or the environment variable holding it), the
bot, which challenges to accept, how many games at once, whether to stay in the rated queue,
and the rule-set manifest to declare. :func:`load_config` reads it (a mistake is a
:class:`ConfigError` naming the key, which the command prints on one line and exits 2);
:func:`run_config` runs it through :class:`~spades.bot.account.AccountRunner` until SIGINT or
SIGTERM. The documented example is ``docs/examples/spades-bot.toml``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import grpc

from spades.bot import Backoff, Bot
from spades.bot.account import AccountRunner, Answer
from spades.bot.runner import first_contact
from spades.client import SpadesClient, SpadesError
from spades.client.challenges import ChallengeInfo
from spades.manifest import (
    MAX_SERIES_LENGTH,
    OPTION_NAMES,
    manifest_allows,
    manifest_of,
    manifest_problem,
)
from spades.reasons import Reason
from spades.v1 import account_pb2

log = logging.getLogger("spades.bot")

#: Where the key is read from when the file names neither ``key`` nor ``key_env``.
DEFAULT_KEY_VARIABLE: Final = "SPADES_ACCOUNT_KEY"
RATED_CHOICES: Final = ("any", "rated", "unrated")
_TOP_KEYS: Final = {
    "server",
    "key",
    "key_env",
    "bot",
    "think_ms",
    "max_games",
    "rated_queue",
    "tournaments",
    "challenges",
    "manifest",
}
_CHALLENGE_KEYS: Final = {"accept", "rated", "opponents", "decline_opponents", "max_series"}
_MANIFEST_KEYS: Final = {"players", "target_scores", "options"}


class ConfigError(Exception):
    """A config file that cannot be run: the message names the file and the key."""


@dataclass(frozen=True)
class ChallengeRules:
    """Which challenges to accept."""

    accept: bool = True
    #: "any", "rated" (rated only) or "unrated" (unrated only).
    rated: str = "any"
    #: Accept only from these challengers (names, any case); empty: from anyone.
    opponents: frozenset[str] = frozenset()
    #: Never from these.
    decline_opponents: frozenset[str] = frozenset()
    #: The most matches in a row (a challenge's series) it plays; 1: no rematches.
    max_series: int = 1


@dataclass(frozen=True)
class BotConfig:
    server: str
    key: str
    bot: str = "heuristic"
    think_ms: float | None = None
    max_games: int = 1
    rated_queue: bool = False
    tournaments: tuple[str, ...] = ()
    challenges: ChallengeRules = field(default_factory=ChallengeRules)
    #: Declared with SetManifest at start (None: keep what the account has).
    manifest: account_pb2.RuleManifest | None = None


def _expect(table: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = table[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    # bool is an int in Python, never what an integer key means.
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise ConfigError(f"{where}{key}: expected {_kind_name(kinds)}, got {value!r}")
    return value


def _kind_name(kinds: tuple[type, ...]) -> str:
    names = {
        str: "a string",
        bool: "true or false",
        int: "an integer",
        float: "a number",
        list: "a list",
        dict: "a table",
    }
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def _strings(table: dict[str, Any], key: str, where: str) -> list[str]:
    values = _expect(table, key, list, where)
    if not all(isinstance(value, str) for value in values):
        raise ConfigError(f"{where}{key}: expected a list of strings")
    return [str(value) for value in values]


def _unknown(table: dict[str, Any], known: set[str], where: str) -> None:
    for key in table:
        if key not in known:
            raise ConfigError(f"{where}{key}: unknown key (known: {', '.join(sorted(known))})")


def parse_config(
    data: dict[str, Any], *, default_server: str, environ: dict[str, str]
) -> BotConfig:
    """The config a parsed TOML document says (ConfigError naming the key otherwise)."""
    _unknown(data, _TOP_KEYS, "")
    server = _expect(data, "server", str, "") if "server" in data else default_server
    if "key" in data and "key_env" in data:
        raise ConfigError("key: give key or key_env, not both")
    if "key" in data:
        key = _expect(data, "key", str, "")
    else:
        variable = _expect(data, "key_env", str, "") if "key_env" in data else DEFAULT_KEY_VARIABLE
        key = environ.get(variable, "")
        if not key:
            which = "key_env" if "key_env" in data else "key"
            raise ConfigError(f"{which}: the environment variable {variable} holds no key")
    if not key.startswith("spk."):
        raise ConfigError("key: not an account key (it starts with 'spk.')")
    bot = _expect(data, "bot", str, "") if "bot" in data else "heuristic"
    think_ms = float(_expect(data, "think_ms", (int, float), "")) if "think_ms" in data else None
    max_games = _expect(data, "max_games", int, "") if "max_games" in data else 1
    if max_games < 1:
        raise ConfigError(f"max_games: at least 1, got {max_games}")
    rated_queue = _expect(data, "rated_queue", bool, "") if "rated_queue" in data else False
    tournaments = tuple(_strings(data, "tournaments", "")) if "tournaments" in data else ()
    challenges = ChallengeRules()
    if "challenges" in data:
        table = _expect(data, "challenges", dict, "")
        where = "challenges."
        _unknown(table, _CHALLENGE_KEYS, where)
        rated = _expect(table, "rated", str, where) if "rated" in table else "any"
        max_series = _expect(table, "max_series", int, where) if "max_series" in table else 1
        if not 1 <= max_series <= MAX_SERIES_LENGTH:
            raise ConfigError(f"challenges.max_series: 1 to {MAX_SERIES_LENGTH}, got {max_series}")
        if rated not in RATED_CHOICES:
            raise ConfigError(f"challenges.rated: one of {', '.join(RATED_CHOICES)}, got {rated!r}")
        challenges = ChallengeRules(
            accept=_expect(table, "accept", bool, where) if "accept" in table else True,
            rated=rated,
            opponents=frozenset(
                n.casefold()
                for n in (_strings(table, "opponents", where) if "opponents" in table else [])
            ),
            decline_opponents=frozenset(
                n.casefold()
                for n in (
                    _strings(table, "decline_opponents", where)
                    if "decline_opponents" in table
                    else []
                )
            ),
            max_series=max_series,
        )
    manifest = None
    if "manifest" in data:
        table = _expect(data, "manifest", dict, "")
        where = "manifest."
        _unknown(table, _MANIFEST_KEYS, where)
        players = _expect(table, "players", list, where) if "players" in table else [4]
        scores = (
            _expect(table, "target_scores", list, where) if "target_scores" in table else [0, 0]
        )
        if len(scores) != 2 or not all(
            isinstance(s, int) and not isinstance(s, bool) for s in scores
        ):
            raise ConfigError("manifest.target_scores: expected [lowest, highest], two integers")
        options = _strings(table, "options", where) if "options" in table else []
        for option in options:
            if option not in OPTION_NAMES:
                raise ConfigError(
                    f"manifest.options: {option!r} is not an option ({', '.join(OPTION_NAMES)})"
                )
        if not all(isinstance(p, int) and not isinstance(p, bool) for p in players):
            raise ConfigError("manifest.players: expected a list of integers (4, 3)")
        manifest = manifest_of(
            players=players,
            target_scores=(scores[0], scores[1]),
            options=options,
            max_series=challenges.max_series if challenges.max_series > 1 else 0,
        )
        problem = manifest_problem(manifest)
        if problem is not None:
            raise ConfigError(f"manifest: {problem}")
    return BotConfig(
        server=server,
        key=key,
        bot=bot,
        think_ms=think_ms,
        max_games=max_games,
        rated_queue=rated_queue,
        tournaments=tournaments,
        challenges=challenges,
        manifest=manifest,
    )


def load_config(
    path: str | Path, *, default_server: str, environ: dict[str, str] | None = None
) -> BotConfig:
    """The config in the TOML file ``path`` (ConfigError naming the file and the key)."""
    try:
        with open(path, "rb") as file:
            data = tomllib.load(file)
    except OSError as error:
        raise ConfigError(f"{path}: cannot read it ({error.strerror or error})") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: not TOML ({error})") from None
    try:
        return parse_config(
            data,
            default_server=default_server,
            environ=dict(os.environ if environ is None else environ),
        )
    except ConfigError as error:
        raise ConfigError(f"{path}: {error}") from None


async def enter_tournaments(client: SpadesClient, tournament_ids: Sequence[str]) -> None:
    """Enter the account in each tournament the config names. An entry made before (a restart)
    stands; a tournament that cannot be entered (unknown, started, full) is named in a warning
    and the bot runs on: the others, challenges and the rated queue do not wait on it."""
    for tournament_id in tournament_ids:
        try:
            await client.enter_tournament(tournament_id)
        except SpadesError as error:
            if error.reason_code == Reason.ALREADY_ENTERED:
                log.info("already entered tournament %s", tournament_id)
            else:
                log.warning("cannot enter tournament %s: %s", tournament_id, error.reason)
            continue
        log.info("entered tournament %s", tournament_id)


def challenge_policy(
    rules: ChallengeRules, manifest: account_pb2.RuleManifest | None
) -> Callable[[ChallengeInfo], Answer]:
    """The policy a config's ``[challenges]`` and ``[manifest]`` say."""

    def answer(challenge: ChallengeInfo) -> Answer:
        challenger = challenge.challenger_name.casefold()
        if not rules.accept:
            return Answer(False, "later")
        if rules.rated == "rated" and not challenge.rated:
            return Answer(False, "unrated")
        if rules.rated == "unrated" and challenge.rated:
            return Answer(False, "rated")
        if challenger in rules.decline_opponents or (
            rules.opponents and challenger not in rules.opponents
        ):
            return Answer(False, "opponent")
        if not manifest_allows(manifest, challenge.rules):
            return Answer(False, "rules")
        if challenge.series_length > rules.max_series:
            return Answer(False, "series")
        return Answer(True)

    return answer


async def run_config(
    config: BotConfig,
    make_bot: Callable[[], Bot],
    *,
    credentials: grpc.ChannelCredentials | None = None,
    backoff: Backoff | None = None,
) -> int:
    """Run the account unattended until SIGINT or SIGTERM (then finish the games in play)."""
    backoff = backoff or Backoff()
    async with SpadesClient(
        config.server, credentials=credentials, account_key=config.key
    ) as client:
        account_id = config.key.split(".")[1]
        account = await first_contact(
            lambda: client.get_account(account_id), config.server, backoff, client
        )
        manifest = account.manifest
        if config.manifest is not None:
            manifest = (await client.set_manifest(config.manifest)).manifest
            log.info("declared the rule-set manifest")
        runner = AccountRunner(
            client,
            make_bot,
            policy=challenge_policy(config.challenges, manifest),
            max_games=config.max_games,
            backoff=backoff,
        )
        loop = asyncio.get_running_loop()

        def on_signal() -> None:
            # The first signal finishes the games in play; a second leaves them.
            if runner.stopping.is_set():
                log.warning("leaving the games in play")
                runner.abandon()
            else:
                log.info("stopping: finishing the games in play (again to leave them)")
                runner.stop()

        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, on_signal)
        # Entered before the stream is followed: the pairings come as table_assigned events.
        await enter_tournaments(client, config.tournaments)
        tasks = []
        if config.rated_queue:
            tasks.append(asyncio.create_task(runner.queue_rated(account.name)))
        log.info(
            "running %s as %s (%d game(s) at once)", config.bot, account.name, config.max_games
        )
        try:
            await runner.run()
        finally:
            for task in tasks:
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(signum)
        stats = runner.stats
        log.info(
            "stopped: %d challenge(s) accepted, %d declined, %d seat(s) played",
            len(stats.accepted),
            len(stats.declined),
            len(stats.outcomes),
        )
    return 0
