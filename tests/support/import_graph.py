"""The import graph of a package, read from its sources: what each module imports, and cycles.

Read with :mod:`ast`, so nothing is imported (a cycle that Python tolerates at run time, through
a late import or a function-level one, is still found). Every ``import`` and ``from ... import``
anywhere in a module counts; those under ``if TYPE_CHECKING:``, which only the type checker
runs, count when asked. Only modules of the package itself are edges; ``from package import name``
counts as an import of ``package.name`` when that is a module, else of ``package``.
"""

from __future__ import annotations

import ast
from pathlib import Path

Graph = dict[str, set[str]]


def modules_of(root: Path, package: str) -> dict[str, Path]:
    """Every module of ``package`` (whose folder is ``root``), by dotted name."""
    found: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join([package, *parts])] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported_modules(
    tree: ast.Module, module: str, is_package: bool, known: set[str], type_checking: bool
) -> set[str]:
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test) and not type_checking:
            for branch in node.orelse:
                visit(branch)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                origin = ".".join([*base, node.module] if node.module else base)
            else:
                origin = node.module or ""
            submodules = {f"{origin}.{alias.name}" for alias in node.names}
            found.update(submodules & known)
            # The package's own __init__ counts only when a name taken from it is no module.
            if submodules - known:
                found.add(origin)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found & known


def import_graph(root: Path, package: str, *, type_checking: bool = False) -> Graph:
    """Each module of the package and the modules of the same package it imports (with
    ``type_checking``, those imported under ``if TYPE_CHECKING:`` too)."""
    modules = modules_of(root, package)
    known = set(modules)
    graph: Graph = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        graph[name] = _imported_modules(tree, name, is_package, known, type_checking) - {name}
    return graph


def cycles(graph: Graph) -> list[list[str]]:
    """The graph's strongly connected components of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return sorted(found)
