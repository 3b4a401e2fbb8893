"""Tests read the product's public names only: a test that reaches for ``module._NAME`` or
``object._attribute`` of the server, the SDK or the bots breaks when the code is tidied, and
passes while the behaviour it stands for is broken. A name a test needs becomes public on
purpose (no underscore, said in its module's docstring), or the test checks the behaviour.

Found without running anything: every private name the product defines (a module's, a class's,
an instance's ``self._name``), and every ``x._name`` under tests/ that reads one of them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
PRODUCT = [
    REPO / "client_sdk" / "src" / "spades",
    REPO / "server" / "src" / "spades_server",
    REPO / "bots" / "src" / "spades_bots",
]
#: Reads allowed, by file under tests/ and name, each with why it cannot be a behaviour test.
ALLOWED: Mapping[tuple[str, str], str] = {
    ("tests/test_deals_doc.py", "_words"): (
        "docs/deals.md's rejection sampling is checked against the reference on the words it"
        " rejects, which a real stream draws about once in 2**32 words"
    ),
    ("tests/benchmarks/bench_service_alone.py", "_act"): (
        "the benchmark times the servicer's own steps without gRPC (not a test)"
    ),
    ("tests/benchmarks/bench_service_alone.py", "_prompt"): (
        "the benchmark times the servicer's own steps without gRPC (not a test)"
    ),
    # argparse's own ArgumentParser._actions (the product defines an unrelated ``_actions``):
    # argparse has no public list of a parser's options, which these tests hold the docs to.
    ("tests/commands/test_spades_cli.py", "_actions"): "argparse's, not the product's",
    ("tests/first_contact/test_readme_settings.py", "_actions"): "argparse's, not the product's",
    ("tests/operations/test_cli.py", "_actions"): "argparse's, not the product's",
}


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def product_private_names() -> set[str]:
    """Every private name the product's code defines."""
    names: set[str] = set()
    for root in PRODUCT:
        for path in root.rglob("*.py"):
            if path.name.endswith(("_pb2.py", "_pb2_grpc.py")):
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    names.add(node.name)
                elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    names.add(node.id)
                elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                    names.add(node.attr)  # self._name = ...
                elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Attribute):
                    names.add(node.target.attr)
    return {name for name in names if is_private(name)}


def private_reads(tree: ast.AST, private: set[str]) -> Iterator[tuple[int, str]]:
    """(line, name) of each ``x._name`` in ``tree`` whose name the product defines, but not
    on ``self`` or ``cls`` (a test's own class)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in private:
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                continue
            yield node.lineno, node.attr
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
            ("spades", "spades_server", "spades_bots")
        ):
            for alias in node.names:
                if is_private(alias.name):
                    yield node.lineno, alias.name


def test_no_test_reads_a_private_name_of_the_product() -> None:
    private = product_private_names()
    assert {"_KIND_OF_FIELD", "_tables", "_fold"} <= private, "the reader finds the product's"
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        where = path.relative_to(REPO).as_posix()
        for line, name in private_reads(ast.parse(path.read_text(encoding="utf-8")), private):
            if (where, name) not in ALLOWED:
                found.append(f"{where}:{line} reads {name}")
    assert found == [], "test the behaviour, or make the name public on purpose"


def test_every_allowed_read_is_still_made() -> None:
    """An allowance whose read is gone is removed, so the list stays short and true."""
    private = product_private_names()
    made = {
        (path.relative_to(REPO).as_posix(), name)
        for path in TESTS.rglob("*.py")
        for _, name in private_reads(ast.parse(path.read_text(encoding="utf-8")), private)
    }
    assert set(ALLOWED) <= made


def test_the_reader_sees_module_attribute_and_imported_private_names() -> None:
    tree = ast.parse(
        "from spades_server.store.journal import _KIND_OF_FIELD\n"
        "journal._first_field_of_first_field(b'', 0)\n"
        "runner._tables\n"
        "self._tables\n"
        "parts._replace(query='')\n"
    )
    private = {"_KIND_OF_FIELD", "_first_field_of_first_field", "_tables"}
    assert sorted(private_reads(tree, private)) == [
        (1, "_KIND_OF_FIELD"),
        (2, "_first_field_of_first_field"),
        (3, "_tables"),
    ]
