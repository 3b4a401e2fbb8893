"""The ``spades`` command as people and scripts run it: every subcommand a real process against
a real server on an ephemeral port, each refusal's reason code checked, ``--json`` parsed.

Every process gets a fresh environment (no ``SPADES_*`` setting but those a test gives) and its
own config file (``SPADES_CONFIG``), so nothing of the machine's leaks in.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import stat
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from spades.client import SpadesClient
from spades.commands.spades import parser
from spades.engine import CARDS, Rules
from tests.support.processes import ServerProcess, clean_environment
from tests.support.terminal import BIN, User, bot_process, command_server, make_user, registered

TOKEN = "an-operator-token-for-the-spades-cli-tests-0123456789"
#: A port nothing listens on: a setting that must lose to a better one points here.
NOWHERE = "127.0.0.1:9"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    folder = tmp_path_factory.mktemp("server")
    env = clean_environment(SPADES_OPERATOR_TOKEN=TOKEN, SPADES_TOURNAMENT_POLL="0.3")
    with command_server(folder, env=env) as served:
        yield served


# ------------------------------------------------------------------------------- help, README


def command_paths() -> list[tuple[str, ...]]:
    """Every group and subcommand of ``spades``, as the words that reach it."""
    found: list[tuple[str, ...]] = []

    def walk(node: Any, path: tuple[str, ...]) -> None:
        for action in node._actions:
            choices = getattr(action, "choices", None)
            if isinstance(choices, dict):
                for name, sub in choices.items():
                    found.append((*path, name))
                    walk(sub, (*path, name))

    walk(parser(), ())
    return found


def help_of(path: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "spades"), *path, "--help"], capture_output=True, text=True, timeout=60
    )


def test_every_level_has_help() -> None:
    paths = [(), *command_paths()]
    assert ("account", "create") in paths and ("record", "fetch") in paths
    # A process for each of the 54 levels, a few at a time: one after another, the interpreters'
    # start-ups were most of the suite's slowest test (past pytest's 120 s on a loaded machine).
    with ThreadPoolExecutor(max_workers=4) as pool:
        runs = list(pool.map(help_of, paths))
    for path, ran in zip(paths, runs, strict=True):
        assert ran.returncode == 0, (path, ran.stderr)
        assert ran.stdout.startswith(f"usage: {' '.join(('spades', *path))}"), (path, ran.stdout)


def test_an_unknown_subcommand_is_a_usage_error() -> None:
    ran = subprocess.run([str(BIN / "spades"), "acount"], capture_output=True, text=True)
    assert ran.returncode == 2 and "invalid choice: 'acount'" in ran.stderr


ROOT = Path(__file__).resolve().parents[2]


def readme_verbs() -> set[tuple[str, ...]]:
    """The subcommands (and verbs) the README's "Every verb" section names."""
    text = (ROOT / "README.md").read_text()
    section = text.split("### Every verb", 1)[1].split("\n## ", 1)[0]
    found: set[tuple[str, ...]] = set()
    for row in section.splitlines():
        if not row.startswith("| `spades "):
            continue
        words = row.split("`")[1].split()[1:]
        verbs: list[str] = []  # the verb, and a nested one (spades account bots create)
        for word in words[1:3]:
            if not re.fullmatch(r"[a-z][a-z-]*", word):
                break
            verbs.append(word)
        found.add((words[0], *verbs))
    return found


def test_the_readme_lists_every_subcommand_and_only_those() -> None:
    tree = set(command_paths())
    leaves = {path for path in tree if not any(other[:-1] == path for other in tree)}
    listed = readme_verbs()
    assert listed - leaves == set(), "the README lists subcommands that do not exist"
    assert leaves - listed == set(), "subcommands missing from the README's Every verb"


def test_the_docs_name_only_subcommands_that_exist() -> None:
    tree = set(command_paths())
    for doc in ("accounts.md", "challenges.md", "tournaments.md"):
        lines = (ROOT / "docs" / doc).read_text().splitlines()
        named = [line.split()[1:] for line in lines if line.startswith("spades ")]
        assert named, f"docs/{doc} shows no spades command"
        for words in named:
            assert (words[0],) in tree, (doc, words)
            verbs = {path[1] for path in tree if len(path) == 2 and path[0] == words[0]}
            assert not verbs or words[1] in verbs, (doc, words)


def test_completion_offers_the_subcommands_and_flags() -> None:
    code = subprocess.run(
        [str(BIN / "spades"), "completion", "bash"], capture_output=True, text=True, check=True
    ).stdout
    assert "spades-record" in code  # the aliases complete too

    def complete(line: str) -> set[str]:
        word = len(line.split()) - (0 if line.endswith(" ") else 1)
        script = (
            f'eval "$(spades completion bash)"; COMP_LINE="{line}"; COMP_POINT={len(line)}; '
            f"COMP_WORDS=({line}); COMP_CWORD={word}; "
            f"_python_argcomplete {line.split()[0]}; printf '%s\\n' \"${{COMPREPLY[@]}}\""
        )
        env = clean_environment(PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
        ran = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env)
        assert ran.returncode == 0, ran.stderr
        return {word.strip() for word in ran.stdout.split()}

    assert complete("spades chal") == {"challenge"}
    assert {"create", "show", "rotate-key", "revoke", "manifest"} <= complete("spades account ")
    assert complete("spades challenge create --ra") == {"--rated"}
    assert "create-with-deals" in complete("spades-admin ")


# ------------------------------------------------------------------------------- accounts


def test_an_account_from_create_to_revoke(server: ServerProcess, tmp_path: Path) -> None:
    ada = make_user(server, tmp_path, "ada")
    created = ada.json("account", "create", "Ada Lovebot")
    assert created["name"] == "Ada Lovebot" and created["kind"] == "bot"
    assert created["key"].startswith(f"spk.{created['account_id']}.")
    assert not ada.config.exists(), "without --save nothing is written"
    ada.refused("NAME_TAKEN", "account", "create", "ada lovebot")

    # --save: the key goes into the config file (0600), not onto the screen.
    saved_text = ada.ok("account", "create", "Ada Savebot", "--save")
    assert "spk." not in saved_text and str(ada.config) in saved_text
    assert stat.S_IMODE(ada.config.stat().st_mode) == 0o600
    settings = ada.saved()
    assert settings["account_key"].startswith("spk.")
    shown = ada.json("account", "show")  # the saved account by default
    assert shown["account_id"] == settings["account_id"] and shown["ratings"] == []
    by_name = ada.ok("account", "show", "ADA SAVEBOT")
    assert by_name.startswith(f"Ada Savebot  bot  id {settings['account_id']}")
    ada.refused("ACCOUNT_NOT_FOUND", "account", "show", "Nobody At All")

    declared = ada.json(
        "account", "manifest", "--target-scores", "100", "500", "--option", "jokers"
    )
    assert declared["manifest"] == {
        "players": [4],
        "target_scores": [100, 500],
        "options": ["jokers"],
        "max_series": 1,  # single matches only: no series declared
    }

    old_key = settings["account_key"]
    rotated = ada.json("account", "rotate-key", "--save")
    new_key = ada.saved()["account_key"]
    assert new_key != old_key and rotated["saved_to"] == str(ada.config) and "key" not in rotated
    # The environment comes before the file: the old key there is refused as rotated away.
    ada.refused("KEY_REVOKED", "account", "rotate-key", SPADES_ACCOUNT_KEY=old_key)
    # And the flag before the environment.
    ada.refused(
        "KEY_NOT_VALID",
        "challenge",
        "list",
        "--account-key",
        "spk.nothing.nothing",
        SPADES_ACCOUNT_KEY=new_key,
    )

    not_sure = ada.run("account", "revoke")
    assert not_sure.returncode == 2 and "--yes" in not_sure.stderr
    assert "Revoked the key" in ada.ok("account", "revoke", "--yes")
    ada.refused("KEY_REVOKED", "challenge", "list")
    assert ada.json("account", "show")["key_revoked"] is True


def test_missing_credentials_say_where_to_put_them(server: ServerProcess, tmp_path: Path) -> None:
    nobody = make_user(server, tmp_path, "nobody")
    for args in (
        ("challenge", "list"),
        ("account", "rotate-key"),
        ("tournament", "enter", "some-cup"),
    ):
        ran = nobody.run(*args)
        assert ran.returncode == 2, (args, ran.stderr)
        assert "SPADES_ACCOUNT_KEY" in ran.stderr and "--save" in ran.stderr, ran.stderr
    for command in (["spades", "admin", "list"], ["spades-admin", "list"]):
        ran = subprocess.run(
            [str(BIN / command[0]), *command[1:]], capture_output=True, text=True, env=nobody.env()
        )
        assert ran.returncode == 2 and "SPADES_OPERATOR_TOKEN" in ran.stderr, ran.stderr
    shown = nobody.run("account", "show")
    assert shown.returncode == 2 and "name an account" in shown.stderr
    nobody.config.parent.mkdir(parents=True)
    nobody.config.write_text("account_key = 12\n")
    broken = nobody.run("challenge", "list")
    assert broken.returncode == 2 and "account_key must be a string" in broken.stderr


def test_the_server_comes_from_the_flag_then_the_environment_then_the_file(
    server: ServerProcess, tmp_path: Path
) -> None:
    user = make_user(server, tmp_path, "settings")
    user.config.parent.mkdir(parents=True)
    user.config.write_text(f'server = "{server.address}"\n')
    from_file = clean_environment(SPADES_CONFIG=str(user.config))
    assert user.run("tables", env=from_file).returncode == 0
    from_env = clean_environment(SPADES_CONFIG=str(user.config), SPADES_SERVER=NOWHERE)
    assert user.run("tables", env=from_env, timeout=60).returncode == 1  # env beats the file
    flagged = user.run("tables", "--server", server.address, env=from_env)
    assert flagged.returncode == 0, flagged.stderr  # the flag beats the environment


# ------------------------------------------------------------------------------- challenges


def test_challenges_made_answered_and_refused(server: ServerProcess, tmp_path: Path) -> None:
    ada = registered(server, tmp_path, "Ada Challenger")
    bob = registered(server, tmp_path, "Bob Challenged")
    bob_id = bob.saved()["account_id"]

    made = ada.json("challenge", "create", "bob challenged", "--max-hands", "1")  # by name
    assert made["state"] == "pending" and made["opponents"][0]["account_id"] == bob_id
    challenge_id = made["challenge_id"]
    incoming = bob.json("challenge", "list", "--incoming", "--pending")
    assert [c["challenge_id"] for c in incoming] == [challenge_id]
    # Bob's account stream told him: created, key issued, then the challenge (JSON Lines).
    streamed = bob.ok("account", "events", "--count", "3", "--json").splitlines()
    assert [next(iter(json.loads(line).keys() - {"sequence", "time"})) for line in streamed] == [
        "accountCreated",
        "keyIssued",
        "challengeReceived",
    ]
    assert json.loads(streamed[2])["challengeReceived"]["challenge"]["challengeId"] == challenge_id
    told = bob.ok("account", "events", "--after", "2", "--count", "1")
    assert told.startswith("#3 challenge received") and challenge_id in told
    assert ada.json("challenge", "list", "--incoming") == []

    # Someone else's challenge: answering one not addressed to you, cancelling one not yours.
    ada.refused("CHALLENGE_NOT_ADDRESSED", "challenge", "accept", challenge_id)
    bob.refused("CHALLENGE_NOT_YOURS", "challenge", "cancel", challenge_id)
    bob.refused("CHALLENGE_NOT_FOUND", "challenge", "accept", "no-such-challenge")
    ada.refused("ACCOUNT_NOT_FOUND", "challenge", "create", "Nobody At All")
    bad_seat = ada.run("challenge", "create", bob_id, "--seat", "middle=x")
    assert bad_seat.returncode == 2 and "--seat takes SEAT=ACCOUNT" in bad_seat.stderr

    accepted = bob.json("challenge", "accept", challenge_id)
    assert accepted["state"] == "accepted" and accepted["table_id"]
    bob.refused("CHALLENGE_ALREADY_ANSWERED", "challenge", "decline", challenge_id)
    ada.refused("CHALLENGE_CLOSED", "challenge", "cancel", challenge_id)
    shown = ada.ok("challenge", "show", challenge_id)
    assert shown.startswith(challenge_id) and f"table {accepted['table_id']}" in shown

    second = ada.json("challenge", "create", bob_id)["challenge_id"]
    declined = bob.json("challenge", "decline", second, "--reason", "later")
    assert (declined["state"], declined["decline_reason"]) == ("declined", "later")
    third = ada.json("challenge", "create", bob_id)["challenge_id"]
    assert "cancelled" in ada.ok("challenge", "cancel", third)

    # The key in the environment comes before the file's: this challenge is Bob's.
    bob_key = bob.saved()["account_key"]
    ada_id = ada.saved()["account_id"]
    reverse = ada.json("challenge", "create", ada_id, SPADES_ACCOUNT_KEY=bob_key)
    assert reverse["challenger_id"] == bob_id

    # With --json a refusal is a JSON object on stderr.
    ran = ada.run("challenge", "show", "no-such-challenge", "--json")
    assert ran.returncode == 1
    assert json.loads(ran.stderr)["error"] == {
        "status": "NOT_FOUND",
        "reason_code": "CHALLENGE_NOT_FOUND",
        "reason": json.loads(ran.stderr)["error"]["reason"],
    }


# ------------------------------------------------------------------------------- records


async def _house_bot_table(address: str, house_bots: int = 4) -> str:
    async with SpadesClient(address) as client:
        table_id = (await client.create_table("Played out", Rules(max_hands=1))).table_id
        for _ in range(house_bots):
            await client.add_house_bot(table_id)
    return table_id


def finished_table(user: User) -> str:
    """A table that house bots play to its end (one hand), once it has ended."""
    table_id = asyncio.run(_house_bot_table(user.address))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        finished = user.json("tables", "--status", "finished")
        if any(table["table_id"] == table_id for table in finished):
            return table_id
        time.sleep(0.5)
    raise AssertionError("the house bots did not finish the table")


def test_records_fetched_by_table_id(server: ServerProcess, tmp_path: Path) -> None:
    user = make_user(server, tmp_path, "reader")
    table_id = finished_table(user)
    listed = user.json("tables")
    assert {"table_id", "status", "seats", "scores", "badges"} <= listed[0].keys()

    fetched = json.loads(user.ok("record", "fetch", table_id))
    assert fetched["tableId"] == table_id and fetched["seed"]
    saved = tmp_path / "match.json"
    assert "Saved the record" in user.ok("record", "fetch", table_id, "--output", str(saved))
    assert user.ok("record", "verify", str(saved)).rstrip().endswith("verified")
    # Straight from the server, by table id, with --server after the verb or before it.
    assert user.ok("record", "verify", table_id).rstrip().endswith("verified")
    shown = user.ok("record", "--server", server.address, "show", table_id)
    assert "Hand 1, dealt by" in shown
    score = user.json("record", "score", table_id)
    assert score == json.loads(user.ok("record", "score", str(saved), "--json"))

    # The alias: spades-record show TABLE_ID fetches from --server when it names no file.
    alias = subprocess.run(
        [str(BIN / "spades-record"), "--server", server.address, "show", table_id],
        capture_output=True,
        text=True,
        env=clean_environment(),
    )
    assert alias.returncode == 0 and alias.stdout == shown, alias.stderr

    user.refused("TABLE_NOT_FOUND", "record", "fetch", "no-such-table")
    user.refused("TABLE_NOT_FOUND", "record", "show", "no-such-table")
    missing = user.run("record", "show", str(tmp_path / "absent.json"))
    assert missing.returncode == 1 and "No such file" in missing.stderr  # a path is no id
    user.refused("TOURNAMENT_NOT_FOUND", "record", "fetch", "--tournament", "no-such-cup")

    # The table's match told again: spades watch ends with the revealed seed.
    assert "Seed revealed:" in user.ok("watch", table_id)
    user.refused("TABLE_NOT_FOUND", "watch", "no-such-table")


@pytest.mark.timeout(1800)  # a whole hand solved in every world: minutes on a loaded machine
def test_a_finished_table_analysed_by_id_and_a_live_one_refused(
    server: ServerProcess, tmp_path: Path
) -> None:
    user = make_user(server, tmp_path, "analyst")
    table_id = finished_table(user)
    # Analysed by the server's worker pool (AnalysisService), one world a card.
    ran = user.run("record", "analyse", table_id, "--json", "--worlds", "1", timeout=1500)
    assert ran.returncode == 0, ran.stderr
    analysis = json.loads(ran.stdout)
    assert analysis["table_id"] == table_id and len(analysis["plays"]) == 52
    assert set(analysis["seats"]) == set("NESW")
    assert {play["worlds"] for play in analysis["plays"]} <= {0, 1}
    # A table still playing (three house bots wait for a fourth seat) is never analysed.
    live = asyncio.run(_house_bot_table(user.address, house_bots=3))
    refused = user.run("record", "analyse", live, "--worlds", "1")
    assert refused.returncode == 1 and refused.stdout == ""
    assert "not finished" in refused.stderr and "live table" in refused.stderr


def test_the_operator_calls(server: ServerProcess, tmp_path: Path) -> None:
    operator = make_user(server, tmp_path, "operator")
    table_id = asyncio.run(_house_bot_table(server.address, house_bots=3))  # a seat free
    operator.refused("OPERATOR_TOKEN_INVALID", "admin", "list", SPADES_OPERATOR_TOKEN="x" * 40)
    closed = operator.ok("admin", "close", table_id, SPADES_OPERATOR_TOKEN=TOKEN)
    assert closed.startswith(f"Closed {table_id}:")
    # The token from the config file when the environment has none.
    operator.config.parent.mkdir(parents=True, exist_ok=True)
    operator.config.write_text(f'operator_token = "{TOKEN}"\n')
    listed = {table["table_id"]: table for table in operator.json("admin", "list")}
    assert listed[table_id]["end_reason"] == "closed"
    operator.refused("TABLE_NOT_FOUND", "admin", "close", "no-such-table")
    cards = [str(card) for card in CARDS[:52]]
    deals = tmp_path / "deals.json"
    deals.write_text(json.dumps({"deals": [[" ".join(cards[i::4]) for i in range(4)]]}))
    created = operator.ok("admin", "create-with-deals", str(deals), "--name", "Dealt")
    assert created.startswith("Created ") and "1 preset deal(s)" in created
    preset = {table["name"]: table for table in operator.json("admin", "list")}["Dealt"]
    assert preset["preset_deals"] == 1


def test_a_person_and_a_bot_are_told_why_a_seat_is_refused(
    server: ServerProcess, tmp_path: Path
) -> None:
    user = make_user(server, tmp_path, "player")
    user.refused("TABLE_NOT_FOUND", "play", "--table", "no-such-table")
    ran = user.run("bot", "--bot", "random", "--table", "no-such-table", "--seat", "north")
    assert ran.returncode == 1 and "NOT_FOUND TABLE_NOT_FOUND: " in ran.stderr, ran.stderr
    usage = user.run("bot", "--bot", "random", "--seat", "north", "--quick-match")
    assert usage.returncode == 2 and "--seat needs --table" in usage.stderr


# ------------------------------------------------------------------------------- tournaments


def test_a_rated_tournament_from_the_command_line(server: ServerProcess, tmp_path: Path) -> None:
    ada = registered(server, tmp_path, "Ada Entrant")
    bob = registered(server, tmp_path, "Bob Entrant")
    # Organising is the operator's on this server: an account's key is refused.
    ada.refused("ORGANISER_NOT_ALLOWED", "tournament", "create", "Ada's Cup")
    created = ada.json(
        "tournament",
        "create",
        "Terminal Cup",
        "--boards",
        "1",
        "--entrants",
        "2",
        "--rated",
        SPADES_OPERATOR_TOKEN=TOKEN,
    )
    cup = created["tournament_id"]
    assert (created["status"], created["boards"], created["rated"]) == ("entering", 1, True)
    assert cup in [t["tournament_id"] for t in ada.json("tournament", "list")]

    assert [e["name"] for e in ada.json("tournament", "enter", cup)["entrants"]] == ["Ada Entrant"]
    assert ada.json("tournament", "withdraw", cup)["entrants"] == []
    ada.ok("tournament", "enter", cup)
    bots = [bot_process(user, tmp_path) for user in (ada, bob)]
    try:
        started = bob.json("tournament", "enter", cup)
        assert len(started["entrants"]) == 2
        ada.refused("TOURNAMENT_STARTED", "tournament", "withdraw", cup)
        ada.refused("TOURNAMENT_NOT_FOUND", "tournament", "enter", "no-such-cup")
        watched = ada.run("tournament", "watch", cup, timeout=240)
        assert watched.returncode == 0, watched.stderr
    finally:
        for bot in bots:
            bot.terminate()
            bot.communicate(timeout=60)
    assert "ended" in watched.stdout and "Ada Entrant" in watched.stdout

    standings = ada.json("tournament", "standings", cup)
    assert standings["status"] == "finished"
    assert {line["name"] for line in standings["standings"]} == {"Ada Entrant", "Bob Entrant"}
    assert "MP" in ada.ok("tournament", "standings", cup)

    path = tmp_path / "cup.json"
    ada.ok("record", "fetch", "--tournament", cup, "--output", str(path))
    assert ada.ok("record", "tournament", str(path)).rstrip().endswith("verified")
    assert ada.ok("record", "tournament", cup).rstrip().endswith("verified")

    board = {line["name"]: line for line in ada.json("leaderboard")}
    assert {"Ada Entrant", "Bob Entrant"} <= board.keys()
    assert board["Ada Entrant"]["rating"]["matches"] >= 1
    assert "Ada Entrant" in ada.ok("leaderboard", "--limit", "50")
    assert ada.json("account", "show")["ratings"][0]["matches"] >= 1
