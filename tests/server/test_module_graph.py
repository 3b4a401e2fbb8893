"""The server's modules import one another without a cycle (every import counts, even one
inside a function or under TYPE_CHECKING: a cycle hidden there is still a knot)."""

from __future__ import annotations

from pathlib import Path

import spades_server
from tests.support.import_graph import Graph, cycles, import_graph

PACKAGE = Path(spades_server.__file__).parent


def server_graph() -> Graph:
    """The server's import graph, its generated ``.v1`` modules left out."""
    graph = import_graph(PACKAGE, "spades_server", type_checking=True)
    return {name: imported for name, imported in graph.items() if ".v1" not in name}


def test_the_server_modules_import_one_another_without_a_cycle() -> None:
    graph = server_graph()
    assert {
        "spades_server.api.lobby",
        "spades_server.processes.house",
        "spades_server.api.play",
    } <= set(graph)
    found = cycles(graph)
    assert not found, f"an import cycle among spades_server modules: {found}"


def test_house_bots_and_admin_do_not_depend_on_the_lobby_servicer() -> None:
    graph = server_graph()
    assert "spades_server.api.lobby" not in graph["spades_server.processes.house"]
    assert "spades_server.processes.projection" not in graph["spades_server.processes.house"]
    assert "spades_server.api.lobby" not in graph["spades_server.api.admin"]
    assert "spades_server.api.lobby" not in graph["spades_server.api.play"]


def test_the_cycle_check_sees_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"a"}}) == [["a", "b"]]
