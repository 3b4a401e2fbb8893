"""``spades-server`` refuses to start in one line and exit status 2, never with a traceback.

Each case is a real ``spades-server`` process meeting the problem an operator would: a database
folder it cannot create, a file that is not SQLite, a log another server holds, a busy gRPC or
metrics port, a bad environment value, a weak operator token.
"""

from __future__ import annotations

import re
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from spades_server.domain import tokens
from tests.support.processes import SERVER, clean_environment, spades_server

TIMEOUT = 30


def refused(*args: str, **env: str) -> str:
    """Run ``spades-server *args``, expect exit 2 with one line on stderr; return that line.
    (No web port unless ``args`` ask for one: the default 8080 may be another program's.)"""
    if "--web" not in args:
        args = (*args, "--web", "off")
    ran = subprocess.run(
        [str(SERVER), *args],
        capture_output=True,
        text=True,
        env=clean_environment(**env),
        timeout=TIMEOUT,
    )
    assert ran.returncode == 2, (ran.returncode, ran.stderr)
    assert "Traceback" not in ran.stderr, ran.stderr
    # gRPC's core log (e.g. "E1201 ... add_port.cc:...") must not precede our line.
    assert "add_port" not in ran.stderr and ".cc:" not in ran.stderr, ran.stderr
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1, ran.stderr
    assert lines[0].startswith("spades-server: "), lines
    return lines[0]


@pytest.fixture
def busy_port() -> Iterator[str]:
    """An address another socket listens on."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield f"127.0.0.1:{holder.getsockname()[1]}"


def test_a_database_folder_that_cannot_be_created(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    line = refused("--database", str(blocker / "var" / "spades.db"), "--metrics", "off")
    assert f"cannot create the database folder {blocker / 'var'}" in line


def test_a_database_that_is_not_sqlite(tmp_path: Path) -> None:
    database = tmp_path / "notes.db"
    database.write_text("these are my notes, not an event log\n" * 100)
    line = refused("--database", str(database), "--listen", "127.0.0.1:0", "--metrics", "off")
    assert str(database) in line
    assert "is not an SQLite database" in line


def test_a_database_another_server_holds(tmp_path: Path) -> None:
    database = tmp_path / "spades.db"
    args = ("--database", str(database), "--listen", "127.0.0.1:0", "--metrics", "off")
    with spades_server(tmp_path / "first.log", *args):
        line = refused(*args)
    assert f"cannot open the event log {database}" in line
    assert "in use by another process" in line


@pytest.mark.parametrize(
    ("dsn", "said"),
    [
        ("postgresql://spades@127.0.0.1:1/spades", "Connect call failed"),
        ("not-a-dsn", "invalid DSN"),
    ],
)
def test_a_postgresql_log_that_cannot_be_opened(dsn: str, said: str) -> None:
    line = refused("--postgres-dsn", dsn, "--listen", "127.0.0.1:0", "--metrics", "off")
    assert "cannot open the event log PostgreSQL" in line and said in line


def test_a_busy_grpc_port(tmp_path: Path, busy_port: str) -> None:
    line = refused(
        "--listen", busy_port, "--metrics", "off", "--database", str(tmp_path / "spades.db")
    )
    assert f"cannot listen on {busy_port}: the port is in use" in line


def test_a_busy_web_port_names_the_address(tmp_path: Path, busy_port: str) -> None:
    line = refused(
        "--listen",
        "127.0.0.1:0",
        "--metrics",
        "off",
        "--web",
        busy_port,
        "--database",
        str(tmp_path / "s.db"),
    )
    assert f"cannot serve the web port on {busy_port}" in line and "--web off" in line


def test_a_busy_metrics_port_names_the_address(tmp_path: Path, busy_port: str) -> None:
    line = refused(
        "--listen", "127.0.0.1:0", "--metrics", busy_port, "--database", str(tmp_path / "s.db")
    )
    assert f"cannot serve metrics on {busy_port}" in line


@pytest.mark.parametrize(
    ("variable", "bad", "said"),
    [
        ("SPADES_HOUSE_BOTS", "many", "SPADES_HOUSE_BOTS='many' is not a whole number"),
        ("SPADES_SHUTDOWN_GRACE", "soon", "SPADES_SHUTDOWN_GRACE='soon' is not a number"),
        ("SPADES_LOG_FORMAT", "xml", "SPADES_LOG_FORMAT='xml' is not one of"),
    ],
)
def test_a_bad_environment_value_names_the_variable_not_the_flag(
    variable: str, bad: str, said: str
) -> None:
    line = refused(**{variable: bad})
    assert said in line
    flag = "--" + variable.removeprefix("SPADES_").lower().replace("_", "-")
    assert f"argument {flag}" not in line


def test_a_bad_flag_value_still_names_the_flag() -> None:
    ran = subprocess.run(
        [str(SERVER), "--house-bots", "many"],
        capture_output=True,
        text=True,
        env=clean_environment(),
        timeout=TIMEOUT,
    )
    assert ran.returncode == 2
    assert "argument --house-bots: invalid int value: 'many'" in ran.stderr


@pytest.mark.parametrize(
    ("token", "said"),
    [
        ("x", "the operator token has 1 characters; it needs at least 16"),
        ("short-token", "the operator token has 11 characters"),
        ("change-me-operator-token", "the shipped placeholder 'change-me-operator-token'"),
        ("REPLACE_ME_OPERATOR_TOKEN", "the shipped placeholder"),
    ],
)
def test_weak_operator_tokens_are_refused(token: str, said: str) -> None:
    assert said in refused(SPADES_OPERATOR_TOKEN=token)
    assert said in refused("--operator-token", token)


def test_a_placeholder_looking_operator_token_starts_with_a_warning(tmp_path: Path) -> None:
    env = clean_environment(
        SPADES_OPERATOR_TOKEN="please-change-this-operator-token",
        SPADES_LISTEN="127.0.0.1:0",
        SPADES_METRICS="off",
        SPADES_LOG_FORMAT="json",
        SPADES_DATABASE=str(tmp_path / "spades.db"),
    )
    with spades_server(tmp_path / "server.log", env=env) as server:
        warnings = [line for line in server.log_lines() if '"level": "warning"' in line]
    assert any("looks like a placeholder" in line for line in warnings), warnings
    assert not any("please-change-this-operator-token" in line for line in server.log_lines())


def test_the_placeholders_shipped_in_deploy_are_refused() -> None:
    deploy = Path(__file__).resolve().parents[2] / "deploy"
    compose = yaml.safe_load((deploy / "compose.yaml").read_text())
    value = compose["x-spades-server"]["environment"]["SPADES_OPERATOR_TOKEN"]
    default = re.fullmatch(r"\$\{SPADES_OPERATOR_TOKEN:-(.+)\}", value)
    assert default is not None, value
    secret = yaml.safe_load((deploy / "kubernetes" / "secret.yaml").read_text())
    for placeholder in (default[1], secret["stringData"]["SPADES_OPERATOR_TOKEN"]):
        refusal = tokens.operator_token_refusal(placeholder)
        assert refusal is not None and "placeholder" in refusal, placeholder
    assert tokens.operator_token_refusal("") is None  # no token: admin is off
    assert tokens.operator_token_refusal("4f9a0c1e7b2d8e6a") is None
    assert tokens.operator_token_warning("4f9a0c1e7b2d8e6a") is None
