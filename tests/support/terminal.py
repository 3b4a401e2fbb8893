"""Someone at a terminal running ``spades``: their own config file and environment (no
``SPADES_*`` setting of the machine's), each command a real process against a real server."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.processes import ServerProcess, clean_environment, spades_server

BIN = Path(sys.executable).parent


def terminal_server(
    folder: Path, *flags: str, env: dict[str, str] | None = None
) -> Iterator[ServerProcess]:
    """A ``spades-server`` process on ``folder``'s own SQLite log and ephemeral ports, with
    ``flags``, for a module's fixture (``yield from`` it); stopped after."""
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
    ) as server:
        yield server
        server.terminate()
        server.wait(30)


@dataclass
class User:
    """Someone at a terminal: their config file, and the server in their environment."""

    config: Path
    address: str

    def env(self, **extra: str) -> dict[str, str]:
        return clean_environment(
            SPADES_CONFIG=str(self.config), SPADES_SERVER=self.address, **extra
        )

    def run(
        self, *args: str, env: dict[str, str] | None = None, timeout: float = 90
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(BIN / "spades"), *args],
            capture_output=True,
            text=True,
            env=self.env() if env is None else env,
            timeout=timeout,
        )

    def ok(self, *args: str, **extra: str) -> str:
        ran = self.run(*args, env=self.env(**extra))
        assert ran.returncode == 0, (args, ran.stdout, ran.stderr)
        return ran.stdout

    def json(self, *args: str, **extra: str) -> Any:
        return json.loads(self.ok(*args, "--json", **extra))

    def refused(self, reason_code: str, *args: str, **extra: str) -> str:
        """Run a call the server must refuse with ``reason_code``: exit 1, the code and the
        reason on stderr."""
        ran = self.run(*args, env=self.env(**extra))
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
