"""The tests' helpers have one home, tests/support: no test module borrows from another test
module, and no module copies a helper that tests/support already has.

A helper imported from a ``test_*.py`` module ties two suites together (running one collects
the other's tests' module), and a copy drifts from its original; either way a fix made in one
place misses the other. A module of a suite's own (``tests/cluster/netns.py``,
``tests/engine/scenario.py``, a suite's conftest) may hold what that suite alone uses; once a
second suite (another folder under tests/) imports it, it is shared, and it moves to
tests/support.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
SUPPORT = TESTS / "support"
#: Plain words that name a different thing where they are defined again (not copies).
HOMONYMS = {
    "play": "the engine's or a record's move in tests/engine, tests/records, the benchmarks",
    "cards_in": "the cards of an engine view or of a public record, not of a message",
    "serving": "each server suite's own server with that suite's settings",
    "until": "the SDK suite's wait on its own runner",
    "server_args": "the shutdown test's own flags",
    "random_action": "the benchmark's engine-level move",
    "eventually": "the table cache's wait with its own timeout",
    "clients": "SDK clients per account key, not gRPC stubs per server",
}


def modules() -> Iterator[Path]:
    """Every Python module under tests/ but tests/support's own."""
    for path in sorted(TESTS.rglob("*.py")):
        if SUPPORT not in path.parents:
            yield path


def imported_modules(path: Path, tree: ast.Module) -> Iterator[tuple[int, str]]:
    """(line, dotted module) of every import in ``tree``, relative ones resolved."""
    package = list(path.relative_to(TESTS.parent).with_suffix("").parts[:-1])
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            yield node.lineno, module
            for alias in node.names:  # `from tests.x import test_y` names a module too
                yield node.lineno, f"{module}.{alias.name}"


def is_test_module(dotted: str) -> bool:
    return dotted.startswith("tests.") and dotted.rsplit(".", 1)[-1].startswith("test_")


def suite_of(path: Path) -> str:
    """The suite (folder under tests/) a module belongs to; "" for a module at tests/'s top."""
    parts = path.relative_to(TESTS).parts
    return parts[0] if len(parts) > 1 else ""


def borrows_from_another_suite(path: Path, dotted: str) -> bool:
    """Whether ``dotted``, imported by the module at ``path``, is a module (or a name in one)
    of a suite other than that module's own, and not of tests/support."""
    parts = dotted.split(".")
    return (
        len(parts) > 2
        and parts[0] == "tests"
        and parts[1] != "support"
        and parts[1] != suite_of(path)
    )


def defined_names(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """(line, name) of every function, class and constant a module defines at its top."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.lineno, node.name
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    yield node.lineno, target.id


def support_helpers() -> dict[str, str]:
    """Every public function and class tests/support defines, and where (fixtures included)."""
    helpers: dict[str, str] = {}
    for path in sorted(SUPPORT.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(
                node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
            ) and not node.name.startswith("_"):
                helpers[node.name] = f"tests.support.{path.stem}"
    return {name: home for name, home in helpers.items() if name not in HOMONYMS}


def test_no_test_module_imports_from_another_test_module() -> None:
    borrowed = [
        f"{path.relative_to(TESTS.parent)}:{line} imports {module}"
        for path in modules()
        for line, module in imported_modules(path, ast.parse(path.read_text(encoding="utf-8")))
        if is_test_module(module)
    ]
    assert borrowed == [], "move what is shared to tests/support"


def test_no_suite_imports_a_helper_module_of_another_suite() -> None:
    """A helper module (or a conftest) that two suites share lives in tests/support."""
    borrowed = sorted(
        {
            f"{path.relative_to(TESTS.parent)}:{line} imports {module.rsplit('.', 1)[0]}"
            for path in modules()
            for line, module in imported_modules(path, ast.parse(path.read_text(encoding="utf-8")))
            if borrows_from_another_suite(path, module)
        }
    )
    assert borrowed == [], "move what two suites share to tests/support"


def test_no_module_copies_a_helper_of_tests_support() -> None:
    helpers = support_helpers()
    # The copies this rule was written against must stay found here.
    assert {"bid", "join_request", "postgres", "running_server", "rpc_error"} <= set(helpers)
    copies = [
        f"{path.relative_to(TESTS.parent)}:{line} defines {name} (it is {helpers[name]}.{name})"
        for path in modules()
        for line, name in defined_names(ast.parse(path.read_text(encoding="utf-8")))
        if name in helpers
    ]
    assert copies == [], "import the helper from tests/support instead"


def test_no_module_defines_a_join_helper_beside_client_join() -> None:
    """A test joins through ``Client.join`` (tests/support/clients.py); a local ``join`` was
    copied into many modules, each a little different."""
    joins = [
        f"{path.relative_to(TESTS.parent)}:{line}"
        for path in modules()
        for line, name in defined_names(ast.parse(path.read_text(encoding="utf-8")))
        if name == "join"
    ]
    assert joins == []


def test_the_rule_sees_an_import_from_a_test_module_and_a_copied_helper() -> None:
    """The reader itself: both kinds of import, relative ones, and a copied fixture."""
    module = TESTS / "server" / "example.py"
    tree = ast.parse(
        "from tests.engine.test_properties import rule_sets\n"
        "from .test_lobby import get\n"
        "from tests.server import test_lobby\n"
        "import tests.sdk.test_errors\n"
        "from tests.support.seats import bid\n"
        "def postgres() -> None: ...\n"
        "def bid(tricks): ...\n"
    )
    found = [module for _, module in imported_modules(module, tree) if is_test_module(module)]
    assert found == [
        "tests.engine.test_properties",
        "tests.server.test_lobby",
        "tests.server.test_lobby",
        "tests.sdk.test_errors",
    ]
    helpers = support_helpers()
    assert [name for _, name in defined_names(tree) if name in helpers] == ["postgres", "bid"]


def test_the_rule_sees_a_helper_module_of_another_suite() -> None:
    """Another suite's helper module or conftest is found, absolute or as a name in it; the
    module's own suite (its subfolders too), tests/support and relative imports are not."""
    example = TESTS / "server" / "example.py"
    tree = ast.parse(
        "from tests.cluster.scenario import Play\n"
        "from tests.records.conftest import VARIANTS\n"
        "import tests.sdk.helpers\n"
        "from tests.server.legacy.served import served\n"
        "from tests.server import conftest\n"
        "from tests.support.seats import bid\n"
        "from .scenario import table\n"
    )
    found = [
        module
        for _, module in imported_modules(example, tree)
        if borrows_from_another_suite(example, module)
    ]
    assert found == [
        "tests.cluster.scenario",
        "tests.cluster.scenario.Play",
        "tests.records.conftest",
        "tests.records.conftest.VARIANTS",
        "tests.sdk.helpers",
    ]
