"""The web app's modules (server/web/src) import one another without a cycle: a page never
needs another page that needs it back (what two pages share has a module of its own)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.import_graph import Graph, cycles

SOURCES = Path(__file__).resolve().parents[2] / "server" / "web" / "src"
# Relative imports only: "@spades/client" and the packages are not modules of the app.
_IMPORT = re.compile(r"""^\s*(?:import|export)\b[^;]*?\bfrom\s+["']\./([\w.-]+)\.js["']""", re.M)


def web_import_graph(sources: Path = SOURCES) -> Graph:
    """Each module of the web app (by file stem) and the modules of the app it imports."""
    return {
        path.stem: set(_IMPORT.findall(path.read_text(encoding="utf-8")))
        for path in sorted(sources.glob("*.ts"))
    }


def test_the_reader_sees_the_imports_the_pages_have() -> None:
    graph = web_import_graph()
    assert {"lobby", "ratings", "record", "table", "tournaments"} <= graph["main"]
    assert "dom" in graph["lobby"] and "errors" in graph["ratings"]


def test_the_web_app_has_no_import_cycle() -> None:
    assert cycles(web_import_graph()) == []
