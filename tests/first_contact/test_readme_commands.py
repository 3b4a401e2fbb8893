"""The README's and the banner's commands work as printed, from a fresh shell.

Every line of the README's ``sh`` blocks and every command in the server's banner is taken
verbatim and run with ``bash -c`` against a real ``spades-server`` on an ephemeral port, in a
fresh shell: an environment without any ``SPADES_*`` setting and without ``.venv/bin`` on
``PATH``, in a folder where ``.venv`` is the checkout's (a link to it, so that what a command
writes, ``mybot.py`` or ``arena-records/``, stays out of the checkout). Only what the README
says stands for something is substituted: the server's address for ``127.0.0.1:50051`` and a
real table for ``TABLE_ID``.

``grpcurl`` lines run as written when ``grpcurl`` is installed; otherwise the same call is made
through server reflection, as grpcurl would (no proto files): the method must exist, the ``-d``
body must be its request, and the call must succeed. Lines that build or install the project
or run its tests (``make``, ``pip``, ``pytest``) are checked, not run: the suite itself is what
``make test`` runs (a pytest line's marks must be registered and its paths exist), and the
install names the local distributions by path. A line of a kind this test does not know fails
it, so a new README command cannot go unchecked.
"""

from __future__ import annotations

import os
import re
import secrets
import shlex
import shutil
import subprocess
import tomllib
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from google.protobuf import descriptor_pool, json_format, message_factory
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

from spades.v1 import lobby_pb2, lobby_pb2_grpc
from spades_server.app.server import SERVICE_NAMES
from tests.support.processes import ServerProcess, clean_environment, spades_server

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
VENV_BIN = ROOT / ".venv" / "bin"
README_ADDRESS = "127.0.0.1:50051"
COMMAND_TIMEOUT = 60
_SH_BLOCK = re.compile(r"```sh\n(.*?)```", re.DOTALL)
_PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
_BANNER_COMMAND = re.compile(r"^  [a-zA-Z ]+:\s+(\S.*)$")
LOCAL_DISTRIBUTIONS = ("./client_sdk", "./bots", "./server")


def readme_commands() -> list[str]:
    text = README.read_text()
    return [
        line.strip()
        for block in _SH_BLOCK.findall(text)
        for line in block.splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]


def fresh_environment(**extra: str) -> dict[str, str]:
    """A new terminal's environment: no SPADES_* setting, no virtualenv on PATH."""
    env = clean_environment(**extra)
    env.pop("VIRTUAL_ENV", None)
    keep = [
        folder
        for folder in env.get("PATH", "").split(os.pathsep)
        if folder and Path(folder).resolve() != VENV_BIN.resolve()
    ]
    env["PATH"] = os.pathsep.join(keep)
    return env


@dataclass
class Shell:
    """A fresh shell in a checkout-like folder, talking to one server."""

    folder: Path
    env: dict[str, str]
    server: ServerProcess

    def substitute(self, command: str) -> str:
        return command.replace(README_ADDRESS, self.server.address).replace(
            "TABLE_ID", self.any_table_id()
        )

    def any_table_id(self) -> str:
        """A finished table if there is one (watching it ends with its match), else any."""
        with grpc.insecure_channel(self.server.address) as channel:
            lobby = lobby_pb2_grpc.LobbyServiceStub(channel)
            for status in (lobby_pb2.TABLE_STATUS_FINISHED, lobby_pb2.TABLE_STATUS_UNSPECIFIED):
                listed = lobby.ListTables(
                    lobby_pb2.ListTablesRequest(status=status, page_size=1), timeout=10
                )
                if listed.tables:
                    return listed.tables[0].table_id
        return "TABLE_ID"

    def run(self, command: str) -> str:
        ran = subprocess.run(
            ["bash", "-c", command],
            cwd=self.folder,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT,
        )
        assert ran.returncode == 0, (
            command,
            ran.returncode,
            ran.stdout[-2000:],
            ran.stderr[-2000:],
        )
        return ran.stdout + ran.stderr


@pytest.fixture(scope="module")
def shell(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shell]:
    folder = tmp_path_factory.mktemp("checkout")
    (folder / ".venv").symlink_to(ROOT / ".venv", target_is_directory=True)
    # The README's "Write a bot" example, saved as it says: mybot.py.
    (folder / "mybot.py").write_text(_PYTHON_BLOCK.findall(README.read_text())[0])
    token = secrets.token_hex(16)
    server_env = fresh_environment(
        SPADES_LISTEN="127.0.0.1:0",
        SPADES_METRICS="127.0.0.1:0",
        SPADES_DATABASE=str(folder / "var" / "spades.db"),
        SPADES_OPERATOR_TOKEN=token,
        # A lone quick-match bot gets house bots at once instead of after 30 s.
        SPADES_QUICK_MATCH_FILL_AFTER="0.1",
        SPADES_LOG_LEVEL="warning",
    )
    # In the checkout, as `make run` starts it: the banner names .venv/bin/ from there.
    with spades_server(folder / "server.log", env=server_env, cwd=ROOT) as server:
        # The README's "with SPADES_OPERATOR_TOKEN set": the reader exported the server's.
        yield Shell(folder, fresh_environment(SPADES_OPERATOR_TOKEN=token), server)


def banner_commands(server: ServerProcess) -> list[str]:
    found = []
    for line in server.banner:
        matched = _BANNER_COMMAND.match(line)
        if matched and not line.lstrip().startswith(("metrics:", "stop:", "web:", "admin:")):
            found.append(matched[1].split("   (")[0].strip())
    return found


def check(shell: Shell, command: str) -> None:
    words = shlex.split(command, comments=True)
    if words[:3] == [".venv/bin/python", "-m", "pytest"]:
        check_pytest(words[3:])
    elif words[0].startswith(".venv/bin/"):
        output = shell.run(shell.substitute(command))
        expect_output(words, output)
    elif words[0] == ".":  # putting the venv on PATH: then the plain names work
        assert words[1] == ".venv/bin/activate", command
        shell.run(f"{command} && spades-bot --help && spades-arena --help && spades-record --help")
    elif words[0] == "grpcurl":
        if shutil.which("grpcurl", path=shell.env["PATH"]):
            shell.run(shell.substitute(command))
        else:
            call_like_grpcurl(shlex.split(shell.substitute(command), comments=True))
    elif words[0] == "make":
        assert words[1] in make_targets(), command
    elif words[:3] == ["python3", "-m", "venv"]:
        check_install(command)
    else:
        raise AssertionError(f"the README has a command this test does not check: {command}")


def expect_output(words: list[str], output: str) -> None:
    if words[0].endswith("spades-bot"):
        assert "match over" in output, output[-2000:]
    elif words[0].endswith("spades-arena"):
        assert "won" in output and "matches" in output, output[-2000:]
    elif words[0].endswith("spades-record") and words[1] == "verify":
        assert output.rstrip().endswith("verified"), output
    elif words[0].endswith("spades-record") and words[1] == "show":
        assert "Hand 1, dealt by" in output, output[:2000]
    elif words[0].endswith("spades-watch"):
        assert "Seed revealed:" in output, output[-2000:]
    elif words[0].endswith("spades-tables"):
        assert "No tables." in output or " - " in output or "not dealt" in output, output[-2000:]


def check_pytest(arguments: list[str]) -> None:
    """A run of part of the suite: the marks its ``-m`` names are registered (pyproject.toml),
    and the paths it names exist."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    registered = {
        line.split(":")[0].split("(")[0]
        for line in config["tool"]["pytest"]["ini_options"]["markers"]
    }
    words = iter(arguments)
    for word in words:
        if word == "-m":
            named = set(re.findall(r"\w+", next(words))) - {"and", "or", "not"}
            assert named and named <= registered, (named, registered)
        else:
            assert not word.startswith("-") and (ROOT / word).exists(), arguments


def make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([a-zA-Z_-]+):", text, re.MULTILINE))


def check_install(command: str) -> None:
    """Every distribution of ours is named by path; the constraint file exists."""
    for part in command.split("&&"):
        words = shlex.split(part)
        if "install" not in words:
            continue
        named = [word for word in words[words.index("install") + 1 :] if not word.startswith("-")]
        constraint = words[words.index("--constraint") + 1]
        assert (ROOT / constraint).is_file(), command
        named.remove(constraint)
        assert named and all(word in LOCAL_DISTRIBUTIONS for word in named), command
        assert all((ROOT / word).is_dir() for word in named), command


def call_like_grpcurl(words: list[str]) -> None:
    """What ``grpcurl [-plaintext] [-d JSON] ADDRESS (list | describe X | Service/Method)`` does,
    through the server's reflection service."""
    data, rest = "{}", []
    iterator = iter(words[1:])
    for word in iterator:
        if word == "-d":
            data = next(iterator)
        elif word == "-plaintext":
            continue
        else:
            rest.append(word)
    address, verb, *arguments = rest
    with grpc.insecure_channel(address) as channel:
        database = ProtoReflectionDescriptorDatabase(channel)
        pool = descriptor_pool.DescriptorPool(database)
        if verb == "list":
            assert set(SERVICE_NAMES) <= set(database.get_services())
            return
        if verb == "describe":
            assert pool.FindServiceByName(arguments[0]).methods
            return
        service, method_name = verb.rsplit("/", 1)
        method = pool.FindServiceByName(service).methods_by_name[method_name]
        request = json_format.Parse(data, message_factory.GetMessageClass(method.input_type)())
        reply = message_factory.GetMessageClass(method.output_type)
        path = f"/{service}/{method_name}"
        if method.server_streaming:
            stream = channel.unary_stream(
                path,
                request_serializer=type(request).SerializeToString,
                response_deserializer=reply.FromString,
            )(request, timeout=10)
            next(iter(stream))  # the first message (a Watch stream's snapshot); closing the
            # channel below ends the stream
        else:
            channel.unary_unary(
                path,
                request_serializer=type(request).SerializeToString,
                response_deserializer=reply.FromString,
            )(request, timeout=10)


def test_the_readme_has_the_commands_a_newcomer_needs() -> None:
    commands = readme_commands()
    assert any(command.startswith(".venv/bin/spades-bot --bot mybot:MyBot") for command in commands)
    assert any(command.startswith(".venv/bin/spades-record verify") for command in commands)
    assert any("pip install" in command for command in commands)
    # No command is printed without its folder: `spades-bot` alone is "command not found".
    for command in commands:
        first = shlex.split(command, comments=True)[0]
        assert not first.startswith("spades-"), command


def test_every_readme_command_works_as_printed(shell: Shell) -> None:
    for command in readme_commands():
        check(shell, command)


def test_the_demos_replay_command_works_as_printed(shell: Shell) -> None:
    told = shell.run(".venv/bin/python -m spades_server.app.demo --max-hands 1 --records records")
    (replay,) = [
        line.split("replay it:", 1)[1].strip() for line in told.splitlines() if "replay it:" in line
    ]
    assert replay.startswith(".venv/bin/spades-record show records/"), replay
    check(shell, replay)


def test_every_banner_command_works_as_printed(shell: Shell) -> None:
    commands = banner_commands(shell.server)
    assert any(command.startswith(".venv/bin/spades-bot --server ") for command in commands)
    assert any(command.startswith(". .venv/bin/activate") for command in commands)
    assert any(command.startswith(".venv/bin/spades-watch TABLE_ID") for command in commands)
    assert any(command.startswith(".venv/bin/spades-tables --server") for command in commands)
    for command in commands:
        check(shell, command)
    # The web port's URL opens the web client (or the page saying how to build it).
    (web,) = [line.split()[-1] for line in shell.server.banner if line.lstrip().startswith("web:")]
    with urllib.request.urlopen(web, timeout=10) as page:
        assert page.status == 200 and "Spades" in page.read().decode()
