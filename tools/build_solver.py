"""Compile the double-dummy solver's C search in place, and stamp the build (``make solver``).

``client_sdk/src/spades/solver/_search.c`` becomes the extension module ``spades.solver._search``
beside its source (git-ignored), built by setuptools with the machine's C compiler and the
Python headers: nothing is downloaded. Objects go to ``client_sdk/build/solver``. The stamp
(``_search-build.json``) records the source's SHA-256; ``make`` rebuilds when the source or this
script changes. ``pip install ./client_sdk`` does not build it: the solver is a tool of this
repository (analysis, tests, benchmarks), and ``spades.solver`` says how to build it when the
module is missing.

Usage: python tools/build_solver.py [--clean]   (--clean removes the build and the stamp)
       python tools/build_solver.py --into DIR [--portable]   (a second build, for tests: into
       DIR/spades/solver/, and with --portable without the machine's instruction-set flags)
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


def machine_flags(cpuinfo: str | None = None, machine: str | None = None) -> list[str]:
    """The instruction-set flags worth giving the compiler here: the hardware popcount (the
    search counts cards with it at every node), when this x86-64 processor has it, and BMI2
    (the table's key gathers each suit's holders with ``pext``) where ``pext`` is fast: Intel,
    and AMD from Zen 3 (family 0x19) on, as Zen 1 and 2 run it in microcode. The module is
    built in place for this machine, never shipped. ``cpuinfo`` is ``/proc/cpuinfo``'s text and
    ``machine`` the architecture (``platform.machine()``), this machine's when not given."""
    if (machine or platform.machine()) not in {"x86_64", "AMD64"}:
        return []
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return []
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        name, _, value = line.partition(":")
        fields.setdefault(name.strip(), value.strip())  # the first processor's
    flags = set(fields.get("flags", "").split())
    vendor = fields.get("vendor_id", "")
    family = int(fields.get("cpu family", "0") or 0)
    chosen = ["-mpopcnt"] if "popcnt" in flags else []
    if "bmi2" in flags and (
        vendor == "GenuineIntel" or (vendor == "AuthenticAMD" and family >= 0x19)
    ):
        chosen.append("-mbmi2")
    return chosen


def build(into: Path | None = None, portable: bool = False) -> None:
    """Compile the module in place and stamp it; or, given ``into``, into that folder's
    ``spades/solver/`` (its objects under ``into/build``), unstamped and leaving the in-place
    build alone. ``portable`` leaves out the machine's instruction-set flags (the code then
    takes its plain C paths)."""
    from setuptools import Distribution, Extension  # type: ignore[import-untyped]

    if into is None:
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
            *([] if portable else machine_flags()),
        ],
    )
    distribution = Distribution({"name": "spades-solver-search", "ext_modules": [extension]})
    distribution.package_dir = {"": "client_sdk/src"}
    command = distribution.get_command_obj("build_ext")
    command.inplace = into is None
    command.build_temp = str((BUILD if into is None else into / "build") / "temp")
    command.build_lib = str(BUILD / "lib" if into is None else into)
    distribution.run_command("build_ext")
    if into is not None:
        print(f"compiled the solver's search into {into}")
        return
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()
    STAMP.write_text(json.dumps({"_search.c": digest}, indent=1) + "\n")
    print(f"compiled the solver's search; stamp {STAMP.relative_to(REPO_ROOT)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--clean", action="store_true", help="remove the build and its stamp")
    parser.add_argument(
        "--into", type=Path, help="build into DIR/spades/solver/ instead (no stamp; for tests)"
    )
    parser.add_argument(
        "--portable", action="store_true", help="without the machine's instruction-set flags"
    )
    arguments = parser.parse_args(argv)
    if arguments.clean:
        clean()
    else:
        build(arguments.into, arguments.portable)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
