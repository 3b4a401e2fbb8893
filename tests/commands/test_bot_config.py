"""``spades-bot --config``: the documented example loads, a mistake exits 2 naming its key, and
a real spades-bot process runs an account unattended, accepting a challenge and playing it to
the end (on both log backends)."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from spades.bot.account import AccountRunner
from spades.client import SpadesClient
from spades.client.challenges import ChallengeInfo
from spades.commands.bot_config import (
    ChallengeRules,
    ConfigError,
    challenge_policy,
    load_config,
    parse_config,
)
from spades.engine import Rules
from spades.manifest import manifest_of
from spades_bots.random_bot import RandomBot
from tests.support.backends import Storages
from tests.support.processes import clean_environment
from tests.support.servers import running_server

BIN = Path(sys.executable).parent
EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "spades-bot.toml"
KEY = "spk.0123456789abcdef0123.abcdefghijklmnopqrstuvwxyz012345"


def test_the_documented_example_loads() -> None:
    config = load_config(EXAMPLE, default_server="x:1", environ={"SPADES_ACCOUNT_KEY": KEY})
    assert (config.server, config.key, config.bot, config.max_games) == (
        "127.0.0.1:50051",
        KEY,
        "heuristic",
        2,
    )
    assert config.challenges.decline_opponents == {"spammer"}
    assert config.manifest == manifest_of(
        players=[4],
        target_scores=(100, 1000),
        options=["blind_nil", "two_of_clubs_leads"],
        max_series=3,  # [challenges] max_series, declared in the manifest too
    )


@pytest.mark.parametrize(
    ("document", "named"),
    [
        ({"key": KEY, "max_game": 2}, "max_game: unknown key"),
        ({"key": KEY, "max_games": 0}, "max_games: at least 1"),
        ({"key": KEY, "max_games": True}, "max_games: expected an integer"),
        ({"key": KEY, "challenges": {"rated": "sometimes"}}, "challenges.rated:"),
        ({"key": KEY, "challenges": {"acept": True}}, "challenges.acept: unknown key"),
        ({"key": KEY, "manifest": {"options": ["wild"]}}, "manifest.options:"),
        ({"key": KEY, "manifest": {"players": [5]}}, "manifest: a manifest's players"),
        ({"key_env": "NOWHERE"}, "key_env: the environment variable NOWHERE"),
        ({"key": "hunter2"}, "key: not an account key"),
    ],
)
def test_a_mistake_names_its_key(document: dict[str, object], named: str) -> None:
    with pytest.raises(ConfigError, match=named.replace(".", r"\.")):
        parse_config(document, default_server="x:1", environ={})


def test_the_policy_declines_with_the_reason_the_config_gives() -> None:
    def challenge(rules: Rules, rated: bool = False, by: str = "Ada") -> ChallengeInfo:
        return ChallengeInfo("c", "a", by, (), rules, rated, {}, "pending", 0.0, "", "", "")

    policy = challenge_policy(
        ChallengeRules(rated="unrated", decline_opponents=frozenset({"spammer"})),
        manifest_of(options=["jokers"]),
    )
    assert policy(challenge(Rules(jokers=True))).accept
    assert policy(challenge(Rules(), rated=True)).reason == "rated"
    assert policy(challenge(Rules(), by="SPAMMER")).reason == "opponent"
    assert policy(challenge(Rules(players=3))).reason == "rules"
    assert (
        challenge_policy(ChallengeRules(accept=False), None)(challenge(Rules())).reason == "later"
    )


def test_a_bad_config_key_exits_2_with_one_line_naming_it(tmp_path: Path) -> None:
    config = tmp_path / "bot.toml"
    config.write_text(f'key = "{KEY}"\nmax_game = 2\n')
    ran = subprocess.run(
        [str(BIN / "spades-bot"), "--config", str(config)],
        capture_output=True,
        text=True,
        env=clean_environment(),
        timeout=60,
    )
    assert ran.returncode == 2, ran
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1 and "max_game: unknown key" in lines[0], ran.stderr


@pytest.mark.asyncio
async def test_spades_bot_with_a_config_accepts_a_challenge_and_plays_it_to_the_end(
    storage: Storages, tmp_path: Path
) -> None:
    async with running_server(storage()) as server:
        address = f"127.0.0.1:{server.port}"
        async with SpadesClient(address) as anonymous:
            bot = await anonymous.create_account("Config Bot", kind="bot")
            host = await anonymous.create_account("Host", kind="person")
            nuisance = await anonymous.create_account("Nuisance", kind="person")
        config = tmp_path / "bot.toml"
        config.write_text(
            f'server = "{address}"\nkey_env = "TEST_BOT_KEY"\nbot = "random"\nmax_games = 1\n'
            '[challenges]\ndecline_opponents = ["nuisance"]\n'
            '[manifest]\noptions = ["jokers"]\n'
        )
        process = await asyncio.create_subprocess_exec(
            str(BIN / "spades-bot"),
            "--config",
            str(config),
            env=clean_environment(TEST_BOT_KEY=bot.key),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        bot_id = bot.account.account_id
        try:
            async with (
                SpadesClient(address, account_key=host.key) as host_client,
                SpadesClient(address, account_key=nuisance.key) as nuisance_client,
            ):
                # The process declares its manifest first: then it is running.
                async with asyncio.timeout(60):
                    while (await host_client.get_account(bot_id)).manifest is None:
                        await asyncio.sleep(0.2)
                refused = await nuisance_client.create_challenge([bot_id], Rules(max_hands=1))
                made = await host_client.create_challenge([bot_id], Rules(max_hands=1, jokers=True))
                host_runner = AccountRunner(host_client, RandomBot)
                hosting = asyncio.create_task(host_runner.run())
                try:
                    async with asyncio.timeout(90):
                        while len(host_runner.stats.outcomes) < 2:
                            await asyncio.sleep(0.2)
                finally:
                    host_runner.stop()
                    await hosting
                accepted = await host_client.get_challenge(made.challenge_id)
                declined = await host_client.get_challenge(refused.challenge_id)
                table = await host_client.get_table(accepted.table_id)
        finally:
            if process.returncode is None:
                process.send_signal(signal.SIGTERM)
            output, _ = await asyncio.wait_for(process.communicate(), 60)
        assert (declined.state, declined.decline_reason) == ("declined", "opponent")
        assert accepted.state == "accepted" and table.status == "finished"
        assert [seat.account_id for seat in table.message.seats] == [
            host.account.account_id,
            bot_id,
            host.account.account_id,
            bot_id,
        ]
        assert all(outcome.end is not None for outcome in host_runner.stats.outcomes)
        text = output.decode()
        assert process.returncode == 0, text
        assert "1 challenge(s) accepted, 1 declined, 2 seat(s) played" in text, text
        # The bot holds East and West: each hand is told once, and every line of the play
        # names the table.
        table_id = accepted.table_id
        hands = [line for line in text.splitlines() if ": bids " in line]
        assert hands and all(f"INFO table {table_id}: hand " in line for line in hands), text
        assert len(hands) == len({line.split(": bids")[0] for line in hands}), text
        (end,) = [line for line in text.splitlines() if "match over" in line]
        assert f"table {table_id}: match over" in end


OPERATOR = "operator-token-for-bot-config-tests-0123456789"


@pytest.mark.asyncio
async def test_spades_bot_enters_the_tournaments_its_config_names(
    storage: Storages, tmp_path: Path
) -> None:
    async with running_server(storage(), operator_token=OPERATOR) as server:
        address = f"127.0.0.1:{server.port}"
        async with SpadesClient(address) as anonymous:
            bot = await anonymous.create_account("Entrant Bot", kind="bot")
            cup = await anonymous.create_tournament(
                "Config Cup", boards=1, start_when_entrants=8, operator_token=OPERATOR
            )
            config = tmp_path / "bot.toml"
            config.write_text(
                f'server = "{address}"\nkey_env = "TEST_BOT_KEY"\nbot = "random"\n'
                f'tournaments = ["{cup.tournament_id}", "0badc0de"]\n'
            )
            process = await asyncio.create_subprocess_exec(
                str(BIN / "spades-bot"),
                "--config",
                str(config),
                env=clean_environment(TEST_BOT_KEY=bot.key),
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
            )
            try:
                async with asyncio.timeout(60):
                    while not (await anonymous.get_tournament(cup.tournament_id)).entrants:
                        await asyncio.sleep(0.2)
                entered = await anonymous.get_tournament(cup.tournament_id)
            finally:
                if process.returncode is None:
                    process.send_signal(signal.SIGTERM)
                output, _ = await asyncio.wait_for(process.communicate(), 60)
    assert [entrant.account_id for entrant in entered.entrants] == [bot.account.account_id]
    text = output.decode()
    assert process.returncode == 0, text
    assert f"entered tournament {cup.tournament_id}" in text, text
    # The unknown one is named, and the bot ran on.
    assert "cannot enter tournament 0badc0de" in text, text
