"""The server's modules import one another without a cycle (every import counts, even one
inside a function or under TYPE_CHECKING: a cycle hidden there is still a knot)."""

from __future__ import annotations

from pathlib import Path

import spades_server
from tests.structure.import_graph import Graph, cycles
from tests.structure.import_graph import import_graph as read_graph

PACKAGE = Path(spades_server.__file__).parent


def import_graph() -> Graph:
    graph = read_graph(PACKAGE, "spades_server", type_checking=True)
    return {name: imported for name, imported in graph.items() if ".v1" not in name}


def test_the_server_modules_import_one_another_without_a_cycle() -> None:
    graph = import_graph()
    assert {
        "spades_server.api.lobby",
        "spades_server.processes.house",
        "spades_server.api.play",
    } <= set(graph)
    found = cycles(graph)
    assert not found, f"an import cycle among spades_server modules: {found}"


def test_house_bots_and_admin_do_not_depend_on_the_lobby_servicer() -> None:
    graph = import_graph()
    assert "spades_server.api.lobby" not in graph["spades_server.processes.house"]
    assert "spades_server.processes.projection" not in graph["spades_server.processes.house"]
    assert "spades_server.api.lobby" not in graph["spades_server.api.admin"]
    assert "spades_server.api.lobby" not in graph["spades_server.api.play"]


def test_the_cycle_check_sees_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"a"}}) == [["a", "b"]]
