"""The import-graph reader the structure tests rely on finds what it must and nothing else."""

from __future__ import annotations

from pathlib import Path

from tests.support.import_graph import cycles, import_graph


def _package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / "pkg"


def test_a_late_or_function_level_import_still_makes_a_cycle(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "from pkg import b\n",
            "b.py": "def f():\n    from pkg.a import x\n",
            "c.py": "import pkg.a\n",
        },
    )
    graph = import_graph(root, "pkg")
    assert graph["pkg.a"] == {"pkg.b"}
    assert graph["pkg.b"] == {"pkg.a"}
    assert cycles(graph) == [["pkg.a", "pkg.b"]]


def test_type_checking_imports_and_submodule_imports_from_a_package_are_no_edge_back(
    tmp_path: Path,
) -> None:
    root = _package(
        tmp_path,
        {
            "__init__.py": "from pkg.inner import thing\n",
            "inner/__init__.py": "from pkg.inner.leaf import thing\n",
            "inner/leaf.py": (
                "from typing import TYPE_CHECKING\n"
                "from pkg import other\n"
                "if TYPE_CHECKING:\n    from pkg.inner import thing\n"
                "thing = 1\n"
            ),
            "other.py": "from . import inner\n",
        },
    )
    graph = import_graph(root, "pkg")
    assert graph["pkg.inner.leaf"] == {"pkg.other"}
    assert graph["pkg.other"] == {"pkg.inner"}
    assert graph["pkg"] == {"pkg.inner"}
    # pkg.inner -> leaf -> other -> pkg.inner: a real cycle through a package's __init__.
    assert cycles(graph) == [["pkg.inner", "pkg.inner.leaf", "pkg.other"]]


def test_type_checking_imports_count_when_asked(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import b\n",
            "b.py": "from pkg import a\n",
        },
    )
    assert cycles(import_graph(root, "pkg")) == []
    assert cycles(import_graph(root, "pkg", type_checking=True)) == [["pkg.a", "pkg.b"]]
