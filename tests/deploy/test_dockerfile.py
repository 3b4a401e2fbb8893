"""deploy/Dockerfile: stages, user, ports, health check (run for real against a server)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from tests.deploy.files import (
    DEPLOY,
    ROOT,
    Stage,
    dockerfile_env,
    dockerfile_stages,
    dockerignore_patterns,
    dockerignored,
    port_of,
)

DOCKERFILE = DEPLOY / "Dockerfile"


def stages() -> list[Stage]:
    return dockerfile_stages(DOCKERFILE)[1]


def runtime() -> Stage:
    return stages()[-1]


def healthcheck_command() -> list[str]:
    (healthcheck,) = runtime().all("HEALTHCHECK")
    options, _, command = healthcheck.partition("CMD ")
    assert re.fullmatch(r"(--[a-z-]+=\S+\s*)*", options), options
    parsed = json.loads(command)  # exec form: no shell needed in the image
    assert isinstance(parsed, list)
    return [str(word) for word in parsed]


def test_stages_and_references_exist() -> None:
    arguments, all_stages = dockerfile_stages(DOCKERFILE)
    names = [stage.name for stage in all_stages]
    assert names == ["builder", "runtime"]
    for stage in all_stages:
        base = re.sub(r"\$\{(\w+)\}", lambda m: arguments[m.group(1)], stage.base)
        assert base.startswith("python:3.11-slim"), base
        for copy in stage.all("COPY"):
            source = re.search(r"--from=(\S+)", copy)
            if source:
                assert source.group(1) in names[: names.index(stage.name)], copy


def test_runs_as_a_non_root_user() -> None:
    users = runtime().all("USER")
    assert users, "the runtime stage sets no USER"
    user, _, group = users[-1].partition(":")
    assert user not in ("root", "0") and group not in ("root", "0")
    assert user == "10001"  # the uid the Kubernetes securityContext names too
    assert any("useradd" in run and "--uid 10001" in run for run in runtime().all("RUN"))


def test_ports_entrypoint_and_defaults() -> None:
    exposed = {int(p.split("/")[0]) for e in runtime().all("EXPOSE") for p in e.split()}
    env = dockerfile_env(runtime())
    assert exposed == {port_of(env["SPADES_LISTEN"]), port_of(env["SPADES_METRICS"])}
    assert exposed == {50051, 9464}
    assert env["SPADES_LISTEN"].startswith("0.0.0.0:")
    assert env["SPADES_METRICS"].startswith("0.0.0.0:")
    assert env["PATH"].startswith("/opt/spades/bin:")
    (entrypoint,) = runtime().all("ENTRYPOINT")
    assert json.loads(entrypoint) == ["spades-server"]


def test_builder_installs_the_three_distributions() -> None:
    builder = stages()[0]
    copied = {c.split()[0].rstrip("/") for c in builder.all("COPY")}
    assert {"client_sdk", "server", "bots", "deploy/constraints.txt"} <= copied
    runs = " ".join(builder.all("RUN"))
    assert "./client_sdk ./server ./bots" in runs
    assert "--constraint deploy/constraints.txt" in runs
    assert any("--from=builder /opt/spades /opt/spades" in c for c in runtime().all("COPY"))


def test_copied_sources_exist_and_are_in_the_build_context() -> None:
    rules = dockerignore_patterns(DEPLOY / "Dockerfile.dockerignore")
    for stage in stages():
        for copy in stage.all("COPY"):
            if copy.startswith("--from="):
                continue
            *sources, _ = copy.split()
            for source in sources:
                assert (ROOT / source).exists(), source
                assert not dockerignored(source, rules), f"{source} is excluded from the context"
    for needed in ("server/pyproject.toml", "client_sdk/src/spades/v1/play_pb2.py"):
        assert not dockerignored(needed, rules), needed
    for excluded in (".venv/bin/python", ".git/HEAD", "tests/conftest.py", "spades.db"):
        assert dockerignored(excluded, rules), excluded
    for cache in ("server/src/spades_server/__pycache__/cli.cpython-311.pyc", "server/build/x"):
        assert dockerignored(cache, rules), cache


def pins(path: Path) -> dict[str, Version]:
    found = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#")[0].strip()
        if line and not line.startswith("-"):
            requirement = Requirement(line)
            (spec,) = requirement.specifier
            found[requirement.name.lower().replace("_", "-")] = Version(spec.version)
    return found


def test_image_pins_agree_with_the_project() -> None:
    import tomllib

    image = pins(DEPLOY / "constraints.txt")
    dev = pins(ROOT / "requirements-dev.txt")
    for name in image.keys() & dev.keys():
        assert image[name] == dev[name], f"{name}: image {image[name]}, dev {dev[name]}"
    assert {"grpcio", "protobuf"} <= image.keys()
    for project in ("client_sdk", "server", "bots"):
        pyproject = tomllib.loads((ROOT / project / "pyproject.toml").read_text(encoding="utf-8"))
        for dependency in pyproject["project"]["dependencies"]:
            requirement = Requirement(dependency)
            name = requirement.name.lower().replace("_", "-")
            if name.startswith("spades-"):
                continue
            assert name in image, f"{project} needs {name}: pin it in deploy/constraints.txt"
            assert image[name] in requirement.specifier, f"{name} {image[name]} vs {dependency}"


@pytest.fixture
def server_address(tmp_path: Path) -> Iterator[str]:
    """A real spades-server on a free port (SQLite in tmp_path), its address."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPADES_")}
    command = [sys.executable, "-m", "spades_server.app.cli", "--listen", "127.0.0.1:0"]
    command += ["--metrics", "off", "--web", "off", "--database", str(tmp_path / "tables.db")]
    process = subprocess.Popen(
        command,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert process.stdout is not None
        address = None
        for line in process.stdout:
            match = re.search(r"listening on (\S+)", line)
            if match:
                address = match.group(1)
                break
        assert address, "spades-server exited before listening"
        yield address
    finally:
        process.terminate()
        process.wait(timeout=30)


def run_healthcheck(listen: str) -> subprocess.CompletedProcess[str]:
    command = healthcheck_command()
    assert command[0] == "python"  # /opt/spades/bin/python in the image; this venv's here
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPADES_")}
    env["SPADES_LISTEN"] = listen
    return subprocess.run(
        [sys.executable, *command[1:]], env=env, capture_output=True, text=True, timeout=30
    )


# This runs the image's HEALTHCHECK command itself, so it also guards the server's health
# service: registered as the synchronous grpc_health HealthServicer on the grpc.aio server, every
# Check ended in UNKNOWN and every probe (Docker's, Envoy's, Kubernetes') failed.
def test_healthcheck_passes_on_a_serving_server(server_address: str) -> None:
    started = time.monotonic()
    result = run_healthcheck(f"0.0.0.0:{port_of(server_address)}")
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - started < 5  # well inside HEALTHCHECK --timeout


def test_healthcheck_fails_without_a_server(tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = run_healthcheck(f"0.0.0.0:{port}")
    assert result.returncode == 1
    assert "unhealthy: UNAVAILABLE" in result.stderr
