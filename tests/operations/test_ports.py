"""The service's own ports: a metrics port left to the kernel (``--metrics HOST:0``) is never the
port the service names for gRPC. The metrics' port is bound first, so the kernel could hand out
the gRPC port, not bound yet, and the server then refused to start on its own port ("cannot
listen on 127.0.0.1:P: the port is in use"): a restart in the SIGKILL campaign met it.

The test makes the kernel's choice certain: the server runs in a network namespace of its own
whose ephemeral ports are two, and the kernel hands out the upper one first, which is the one
the server listens on. Needs root (``unshare --net``), as CI has.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.backends import in_ci
from tests.support.processes import spades_server

#: The namespace's only ephemeral ports are LOW and LOW + 1; a bind to port 0 gets LOW + 1 first.
LOW = 40000
OWN = LOW + 1


def namespace(command: str = '"$@"') -> list[str]:
    """A command prefix: a new network namespace (loopback up, ephemeral ports LOW and LOW + 1)
    that execs ``command`` (by default the arguments that follow)."""
    script = (
        "ip link set lo up && "
        f"echo '{LOW} {OWN}' > /proc/sys/net/ipv4/ip_local_port_range && exec {command}"
    )
    return ["unshare", "--net", "sh", "-c", script, "sh"]


def why_not_possible() -> str | None:
    if os.geteuid() != 0:
        return "a network namespace needs root (CI runs the tests as root)"
    missing = [tool for tool in ("unshare", "ip") if shutil.which(tool) is None]
    return f"missing {', '.join(missing)}" if missing else None


def test_a_metrics_port_left_to_the_kernel_is_never_the_grpc_port(tmp_path: Path) -> None:
    reason = why_not_possible()
    if reason is not None:
        if in_ci():
            pytest.fail(reason)
        pytest.skip(reason)
    # The namespace's kernel hands out OWN first: the collision is certain, not a chance.
    first = subprocess.run(
        namespace(
            shlex.quote(shutil.which("python3") or "python3")
            + ' -c \'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0));'
            + " print(s.getsockname()[1])'"
        ),
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert first.stdout.strip() == str(OWN), first
    with spades_server(
        tmp_path / "server.log",
        "--listen",
        f"127.0.0.1:{OWN}",
        "--metrics",
        "127.0.0.1:0",
        "--web",
        "off",
        "--database",
        str(tmp_path / "tables.db"),
        "--house-bots",
        "0",
        wrap=namespace(),
    ) as server:
        assert server.address == f"127.0.0.1:{OWN}"
        assert server.metrics_url == f"http://127.0.0.1:{LOW}/metrics"
