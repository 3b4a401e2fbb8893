"""Someone at a terminal running the ``spades`` command against a real server process: their own
config file (``SPADES_CONFIG``), the server in their environment, and nothing of the machine's
``SPADES_*`` settings; and the server process such a command test runs against.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.processes import ServerProcess, clean_environment, spades_server

BIN = Path(sys.executable).parent


@contextlib.contextmanager
def command_server(
    folder: Path, *flags: str, env: Mapping[str, str] | None = None
) -> Iterator[ServerProcess]:
    """A ``spades-server`` process on ephemeral ports with its log in ``folder/tables.db`` (and
    its own log in ``folder/server.log``), stopped as an operator stops it (SIGTERM) after."""
    with spades_server(
        folder / "server.log",
        "--listen",
        "127.0.0.1:0",
        "--metrics",
        "127.0.0.1:0",
        "--database",
        str(folder / "tables.db"),
        *flags,
        env=clean_environment() if env is None else env,
    ) as served:
        yield served
        served.terminate()
        served.wait(30)


@dataclass
class User:
    """Someone at a terminal: their config file, and the server in their environment.

    ``command`` comes before every call's arguments (``("account",)`` for a suite of ``spades
    account`` calls). A call's standard input is empty, or the ``password`` and a newline (a
    password is piped, never a flag)."""

    config: Path
    address: str
    command: tuple[str, ...] = ()

    def env(self, **extra: str) -> dict[str, str]:
        return clean_environment(
            SPADES_CONFIG=str(self.config), SPADES_SERVER=self.address, **extra
        )

    def run(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        timeout: float = 90,
        password: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(BIN / "spades"), *self.command, *args],
            input="" if password is None else password + "\n",
            capture_output=True,
            text=True,
            env=self.env() if env is None else env,
            timeout=timeout,
        )

    def ok(self, *args: str, password: str | None = None, **extra: str) -> str:
        ran = self.run(*args, env=self.env(**extra), password=password)
        assert ran.returncode == 0, (args, ran.stdout, ran.stderr)
        return ran.stdout

    def json(self, *args: str, password: str | None = None, **extra: str) -> Any:
        return json.loads(self.ok(*args, "--json", password=password, **extra))

    def refused(
        self, reason_code: str, *args: str, password: str | None = None, **extra: str
    ) -> str:
        """Run a call the server must refuse with ``reason_code``: exit 1, the code and the
        reason on stderr."""
        ran = self.run(*args, env=self.env(**extra), password=password)
        assert ran.returncode == 1, (args, ran.stdout, ran.stderr)
        assert f" {reason_code}: " in ran.stderr, (args, ran.stderr)
        return ran.stderr

    def saved(self) -> dict[str, Any]:
        return tomllib.loads(self.config.read_text())


def make_user(server: ServerProcess, folder: Path, name: str) -> User:
    return User(folder / name / "config.toml", server.address)


def registered(server: ServerProcess, folder: Path, name: str) -> User:
    """A user whose new bot account's key is saved in their config file."""
    user = make_user(server, folder, name)
    user.ok("account", "create", name, "--save")
    return user


def bot_process(user: User, tmp_path: Path, extra: str = "") -> subprocess.Popen[str]:
    """``spades bot --config``: the account's bot, playing every table it is assigned (the
    config's further lines ``extra``)."""
    config = tmp_path / f"{user.config.parent.name}-bot.toml"
    config.write_text(f'server = "{user.address}"\nbot = "random"\n{extra}')
    key = user.saved()["account_key"]
    return subprocess.Popen(
        [str(BIN / "spades"), "bot", "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=clean_environment(SPADES_ACCOUNT_KEY=key),
    )
