"""The server's house by layers: every module in one room, and no room importing one above it.

docs/architecture.md draws the same table; this test keeps the two in step (it reads the
table from the document) and the code to it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.import_graph import Graph, cycles, import_graph

REPO = Path(__file__).resolve().parents[2]
SERVER = REPO / "server" / "src" / "spades_server"
ARCHITECTURE = REPO / "docs" / "architecture.md"
#: Generated code (``make protos``): any layer may read the log's messages.
SHARED = {"spades_server", "spades_server.v1"}


def documented_layers() -> dict[str, set[str]]:
    """docs/architecture.md's table of layers: each layer and the layers it may import."""
    table = ARCHITECTURE.read_text(encoding="utf-8").split("<!-- layers -->")[1]
    allowed: dict[str, set[str]] = {}
    for row in re.finditer(r"^\| `(\w+)/` \| ([^|]*) \|", table, re.M):
        allowed[row.group(1)] = set(re.findall(r"`(\w+)`", row.group(2)))
    return allowed


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and module not in SHARED else None


@pytest.fixture(scope="module")
def graph() -> Graph:
    return import_graph(SERVER, "spades_server")


def test_the_documented_layers_are_the_packages() -> None:
    layers = documented_layers()
    packages = {path.name for path in SERVER.iterdir() if (path / "__init__.py").exists()}
    assert set(layers) == packages - {"v1"}
    for layer, may_import in layers.items():
        assert may_import <= set(layers), f"{layer} may import an unknown layer"


def test_every_module_lives_in_a_layer(graph: Graph) -> None:
    layers = documented_layers()
    homeless = [m for m in graph if m not in SHARED and not m.startswith("spades_server.v1.")]
    assert all(layer_of(module) in layers for module in homeless), sorted(
        m for m in homeless if layer_of(m) not in layers
    )


def test_no_layer_imports_one_it_may_not(graph: Graph) -> None:
    layers = documented_layers()
    upward = []
    for module, imported in sorted(graph.items()):
        home = layer_of(module)
        if home is None or home == "v1":
            continue
        for target in sorted(imported):
            there = layer_of(target)
            if there in (None, "v1", home):
                continue
            if there not in layers[home]:
                upward.append(f"{module} imports {target}")
    assert not upward, "\n".join(upward)


def test_the_server_has_no_import_cycle(graph: Graph) -> None:
    assert cycles(graph) == []


def test_the_domain_does_no_io() -> None:
    # The domain decides; the store, the processes and the API do the I/O and keep the time.
    forbidden = re.compile(
        r"^\s*(?:import|from) (asyncio|sqlite3|asyncpg|socket|time|structlog|prometheus_client)\b",
        re.M,
    )
    found = [
        f"{path.name}: {match.group(1)}"
        for path in sorted((SERVER / "domain").glob("*.py"))
        for match in forbidden.finditer(path.read_text(encoding="utf-8"))
    ]
    assert not found, found


def test_no_server_module_is_over_600_lines() -> None:
    long = {
        str(path.relative_to(SERVER)): lines
        for path in SERVER.rglob("*.py")
        if "v1" not in path.relative_to(SERVER).parts  # generated (make protos)
        and (lines := len(path.read_text(encoding="utf-8").splitlines())) > 600
    }
    assert not long, long


def test_only_the_event_log_names_a_database_driver() -> None:
    # The backend is chosen by URL inside eventlog/, which wraps its driver's errors in the
    # EventLogError family: nothing above it may depend on one driver.
    driver = re.compile(r"^\s*(?:import|from) (sqlite3|asyncpg)\b", re.M)
    found = [
        f"{path.relative_to(SERVER)}: {match.group(1)}"
        for path in sorted(SERVER.rglob("*.py"))
        if "eventlog" not in path.relative_to(SERVER).parts
        for match in driver.finditer(path.read_text(encoding="utf-8"))
    ]
    assert not found, found
