"""The SDK and the bots are built in layers: no import cycle, and no engine module too long to read.

A cycle means two modules can only be understood together (and, in the engine, that one of them
reaches the other through a late import); the reader counts late, function-level and
``TYPE_CHECKING`` imports, so none hides one. The engine's modules stay short enough to read in one
sitting.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.import_graph import cycles, import_graph

REPO_ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {
    "spades": REPO_ROOT / "client_sdk" / "src" / "spades",
    "spades_bots": REPO_ROOT / "bots" / "src" / "spades_bots",
}
ENGINE = PACKAGES["spades"] / "engine"
#: The most lines an engine module may have.
MAX_ENGINE_MODULE_LINES = 600


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_the_package_has_no_import_cycle(package: str) -> None:
    graph = import_graph(PACKAGES[package], package, type_checking=True)
    assert graph, f"no module of {package} was read"
    assert cycles(graph) == []


def test_every_engine_module_is_at_most_600_lines() -> None:
    lengths = {
        path.name: len(path.read_text(encoding="utf-8").splitlines())
        for path in sorted(ENGINE.glob("*.py"))
    }
    assert "state.py" in lengths
    too_long = {name: count for name, count in lengths.items() if count > MAX_ENGINE_MODULE_LINES}
    assert too_long == {}
