"""The server's modules import one another without a cycle (every import counts, even one
inside a function or under TYPE_CHECKING: a cycle hidden there is still a knot)."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import spades_server

PACKAGE = Path(spades_server.__file__).parent


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(tree: ast.AST, importer: str, known: set[str]) -> set[str]:
    """The spades_server modules a module imports (``from spades_server import x`` names
    module ``spades_server.x`` when there is one)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            base = node.module
            if node.level:  # relative: from the importer's package
                package = importer.rsplit(".", node.level)[0]
                base = f"{package}.{base}" if base else package
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return {name for name in found if name in known and name != importer}


def import_graph() -> dict[str, set[str]]:
    paths = [p for p in PACKAGE.rglob("*.py") if "v1" not in p.relative_to(PACKAGE).parts]
    known = {module_name(path) for path in paths}
    return {
        module_name(path): imported(ast.parse(path.read_text()), module_name(path), known)
        for path in paths
    }


def test_the_server_modules_import_one_another_without_a_cycle() -> None:
    graph = import_graph()
    assert {
        "spades_server.api.lobby",
        "spades_server.processes.house",
        "spades_server.api.play",
    } <= set(graph)
    try:
        tuple(TopologicalSorter(graph).static_order())
    except CycleError as error:
        raise AssertionError(
            f"an import cycle among spades_server modules: {error.args[1]}"
        ) from None


def test_house_bots_and_admin_do_not_depend_on_the_lobby_servicer() -> None:
    graph = import_graph()
    assert "spades_server.api.lobby" not in graph["spades_server.processes.house"]
    assert "spades_server.processes.projection" not in graph["spades_server.processes.house"]
    assert "spades_server.api.lobby" not in graph["spades_server.api.admin"]
    assert "spades_server.api.lobby" not in graph["spades_server.api.play"]


def test_the_cycle_check_sees_a_cycle() -> None:
    try:
        tuple(TopologicalSorter({"a": {"b"}, "b": {"a"}}).static_order())
    except CycleError:
        return
    raise AssertionError("a cycle went unseen")
