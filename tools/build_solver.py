"""Compile the double-dummy solver's C search in place, and stamp the build (``make solver``).

``client_sdk/src/spades/solver/_search.c`` becomes the extension module ``spades.solver._search``
beside its source (git-ignored), built by setuptools with the machine's C compiler and the
Python headers: nothing is downloaded. Objects go to ``client_sdk/build/solver``. The stamp
(``_search-build.json``) records the source's SHA-256; ``make`` rebuilds when the source or this
script changes. ``pip install ./client_sdk`` does not build it: the solver is a tool of this
repository (analysis, tests, benchmarks), and ``spades.solver`` says how to build it when the
module is missing.

Usage: python tools/build_solver.py [--clean]   (--clean removes the build and the stamp)
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.machinery
import json
import platform
import shutil
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
SOLVER = REPO_ROOT / "client_sdk" / "src" / "spades" / "solver"
SOURCE = SOLVER / "_search.c"
BUILD = REPO_ROOT / "client_sdk" / "build" / "solver"
STAMP = SOLVER / "_search-build.json"


def _built_files() -> list[Path]:
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    return [path for path in SOLVER.iterdir() if path.name.endswith(suffixes)]


def clean() -> None:
    for path in _built_files():
        path.unlink()
    STAMP.unlink(missing_ok=True)
    shutil.rmtree(BUILD, ignore_errors=True)


def _machine_flags() -> list[str]:
    """The instruction-set flags worth giving the compiler here: the hardware popcount (the
    search counts cards with it at every node), when this x86-64 processor has it. The module
    is built in place for this machine, never shipped."""
    if platform.machine() not in {"x86_64", "AMD64"}:
        return []
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text()
    except OSError:
        return []
    flags = set()
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            flags.update(line.split(":", 1)[1].split())
    return ["-mpopcnt"] if "popcnt" in flags else []


def build() -> None:
    from setuptools import Distribution, Extension  # type: ignore[import-untyped]

    clean()
    extension = Extension(
        "spades.solver._search",
        sources=[str(SOURCE.relative_to(REPO_ROOT))],
        extra_compile_args=[
            "-O3",
            "-std=c11",
            "-Wall",
            "-Wextra",
            "-Wno-unused-parameter",
            *_machine_flags(),
        ],
    )
    distribution = Distribution({"name": "spades-solver-search", "ext_modules": [extension]})
    distribution.package_dir = {"": "client_sdk/src"}
    command = distribution.get_command_obj("build_ext")
    command.inplace = True
    command.build_temp = str(BUILD / "temp")
    command.build_lib = str(BUILD / "lib")
    distribution.run_command("build_ext")
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()
    STAMP.write_text(json.dumps({"_search.c": digest}, indent=1) + "\n")
    print(f"compiled the solver's search; stamp {STAMP.relative_to(REPO_ROOT)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--clean", action="store_true", help="remove the build and its stamp")
    arguments = parser.parse_args(argv)
    if arguments.clean:
        clean()
    else:
        build()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
