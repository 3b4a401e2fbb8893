"""``spades account`` for people, as a person runs it: sign-up, sign-in (the password piped on
standard input, never a flag), sign-out, sessions and bots, each a real process against a real
server process, each refusal's reason code checked; the session kept in the config file (0600)
and nothing secret in the server's log or its database file.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.processes import ServerProcess
from tests.support.terminal import BIN, User, command_server

PASSWORD = "a long and secret passphrase"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    # Few sign-ins per account, so the limit is reached in a test; many per address (every
    # process here is 127.0.0.1).
    with command_server(
        tmp_path_factory.mktemp("server"),
        "--sign-ins-per-account",
        "3",
        "--sign-ins-per-address",
        "1000",
    ) as served:
        yield served


def person(server: ServerProcess, folder: Path, name: str) -> User:
    """Someone at a terminal running ``spades account``, with their own config file."""
    return User(folder / name.replace(" ", "_") / "config.toml", server.address, ("account",))


def test_sign_up_in_and_out_with_sessions_listed_and_revoked(
    server: ServerProcess, tmp_path: Path
) -> None:
    ada = person(server, tmp_path, "Ada")
    signed_up = ada.json("sign-up", "Ada Person", password=PASSWORD)
    assert signed_up["name"] == "Ada Person" and signed_up["session"]["current"]
    first_token = ada.saved()["session_token"]
    assert first_token.startswith("sps.") and first_token not in json.dumps(signed_up)
    assert stat.S_IMODE(os.stat(ada.config).st_mode) == 0o600
    # Signing in on a second machine (another config file) makes a second session.
    laptop = person(server, tmp_path, "Ada laptop")
    out = laptop.ok("sign-in", "ada person", password=PASSWORD)
    assert "Signed in as 'Ada Person'" in out and "readable by you only" in out
    second_token = laptop.saved()["session_token"]
    assert second_token not in out
    listed = laptop.json("sessions", "list")
    assert [s["current"] for s in listed] == [True, False]
    assert all(s["last_address"] == "127.0.0.1" for s in listed)
    # The laptop revokes the first machine's session: that one is refused as revoked.
    laptop.ok("sessions", "revoke", listed[1]["session_id"])
    ada.refused("SESSION_REVOKED", "sessions", "list")
    laptop.refused("SESSION_NOT_FOUND", "sessions", "revoke", "0123456789abcdef")
    # Signing out ends the session and forgets it; a later call says to sign in.
    assert "Signed out" in laptop.ok("sign-out")
    assert "session_token" not in laptop.saved()
    ran = laptop.run("sessions", "list")
    assert ran.returncode == 2 and "sign in first" in ran.stderr
    ran = laptop.run("sign-out")
    assert ran.returncode == 2 and "not signed in" in ran.stderr
    # Signing out a session already revoked elsewhere still forgets it.
    assert "already ended: SESSION_REVOKED" in ada.ok("sign-out")
    # No secret in the server's log, nor in clear in its database file.
    log = server.log_path.read_text()
    database = b"".join(p.read_bytes() for p in server.log_path.parent.glob("tables.db*"))
    for secret in (PASSWORD, first_token, second_token):
        assert secret not in log
        assert secret.encode() not in database
    assert "signed in" in log


def test_every_bad_sign_up_and_sign_in_has_its_reason_code(
    server: ServerProcess, tmp_path: Path
) -> None:
    grace = person(server, tmp_path, "Grace")
    grace.ok("sign-up", "Grace Person", password=PASSWORD)
    stranger = person(server, tmp_path, "Stranger")
    stranger.refused("PASSWORD_TOO_SHORT", "sign-up", "Hopper", password="short")
    stranger.refused("NAME_TAKEN", "sign-up", "grace PERSON", password=PASSWORD)
    stranger.refused("ACCOUNT_NOT_FOUND", "sign-in", "Nobody Here", password=PASSWORD)
    stranger.ok("create", "Plain Bot", "--save")
    stranger.refused("NO_PASSWORD", "sign-in", "Plain Bot", password=PASSWORD)
    # No password on standard input: a usage error, nothing sent.
    ran = stranger.run("sign-in", "Grace Person", password="")
    assert ran.returncode == 2 and "no password given" in ran.stderr
    # The password is never a flag.
    ran = stranger.run("sign-in", "Grace Person", "--password", PASSWORD)
    assert ran.returncode == 2 and "unrecognized arguments" in ran.stderr
    # Wrong passwords, then the account's attempts are spent (3 a minute on this server).
    stranger.refused("WRONG_PASSWORD", "sign-in", "Grace Person", password="guess one")
    stranger.refused("WRONG_PASSWORD", "sign-in", "Grace Person", password="guess two")
    stranger.refused("WRONG_PASSWORD", "sign-in", "Grace Person", password="guess three")
    stderr = stranger.refused("TOO_MANY_SIGN_INS", "sign-in", "Grace Person", password=PASSWORD)
    assert "retry in" in stderr
    assert "session_token" not in stranger.saved()


def test_a_person_owns_bots_from_the_command_line(server: ServerProcess, tmp_path: Path) -> None:
    owner = person(server, tmp_path, "Owner")
    owner.ok("sign-up", "Bot Owner", password=PASSWORD)
    assert "No bots yet" in owner.ok("bots", "list")
    made = owner.json("bots", "create", "Owned Bot One")
    assert made["key"].startswith("spk.") and made["kind"] == "bot"
    assert made["owner_account_id"] == owner.saved()["account_id"]
    out = owner.ok("bots", "create", "Owned Bot Two")
    assert "Key (shown once" in out
    assert [b["name"] for b in owner.json("bots", "list")] == ["Owned Bot One", "Owned Bot Two"]
    rotated = owner.json("bots", "rotate-key", "owned bot one")
    assert rotated["key"] != made["key"]
    manifest = owner.json("bots", "manifest", "Owned Bot One", "--option", "jokers")
    assert manifest["account_id"] == made["account_id"]
    assert "Revoked the key" in owner.ok("bots", "revoke", "Owned Bot One", "--yes")
    ran = owner.run("bots", "revoke", "Owned Bot One")
    assert ran.returncode == 2 and "--yes" in ran.stderr
    # The revoked key is refused to the bot; the owner issues a new one.
    bot = person(server, tmp_path, "Bot process")
    ran = subprocess.run(
        [str(BIN / "spades"), "account", "rotate-key"],
        capture_output=True,
        text=True,
        env=bot.env(SPADES_ACCOUNT_KEY=rotated["key"]),
        timeout=90,
    )
    assert ran.returncode == 1 and " KEY_REVOKED: " in ran.stderr
    assert owner.json("bots", "rotate-key", made["account_id"])["key"]
    # Someone else's bot, and a bot trying to own bots.
    other = person(server, tmp_path, "Other")
    other.ok("sign-up", "Other Person", password=PASSWORD)
    other.refused("NOT_BOT_OWNER", "bots", "rotate-key", "Owned Bot Two")
    other.refused("NOT_BOT_OWNER", "bots", "revoke", "Owned Bot Two", "--yes")
    other.refused("NOT_BOT_OWNER", "bots", "manifest", "Owned Bot Two")
    other.refused("ACCOUNT_NOT_FOUND", "bots", "rotate-key", "No Such Bot")
    keyed = person(server, tmp_path, "Keyed bot")
    keyed.ok("create", "Keyed Bot", "--save")
    keyed.refused("BOTS_FOR_PEOPLE", "bots", "create", "Grandchild Bot")
    owner.refused("NAME_TAKEN", "bots", "create", "owned bot two")


def test_an_expired_session_is_refused_as_expired(tmp_path: Path) -> None:
    with command_server(tmp_path, "--session-days", "0.0000000001") as served:
        brief = person(served, tmp_path, "Brief")
        brief.ok("sign-up", "Brief Person", password=PASSWORD)
        brief.refused("SESSION_EXPIRED", "sessions", "list")
        assert "already ended: SESSION_EXPIRED" in brief.ok("sign-out")
