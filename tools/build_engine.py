"""Compile the engine's hot modules with mypyc, in place, and stamp the build (``make engine``).

The extension modules land beside their sources in ``client_sdk/src/spades/engine`` (with the
group's shared runtime, ``spades_engine__mypyc``, in ``client_sdk/src``), all git-ignored; the
C sources and objects go to ``client_sdk/build/mypyc``. The stamp records each compiled source's
SHA-256, so ``spades.engine.compiled`` uses the build only while it matches the sources (see
that module). Optional: without a build the pure-Python engine runs, as it does from a
``pip install`` of the SDK.

Usage: python tools/build_engine.py [--clean]   (--clean removes the build and the stamp)
"""

from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
SOURCE_ROOT = REPO_ROOT / "client_sdk" / "src"
ENGINE = SOURCE_ROOT / "spades" / "engine"
BUILD = REPO_ROOT / "client_sdk" / "build" / "mypyc"
GROUP = "spades_engine"

sys.path.insert(0, str(SOURCE_ROOT))
# The list of modules and the stamp's format live with the code that reads them. Importing the
# engine package here would load the (maybe stale) build, so only its `compiled` module is
# loaded, from its file.
_spec = importlib.util.spec_from_file_location("_engine_compiled", ENGINE / "compiled.py")
assert _spec is not None and _spec.loader is not None
compiled = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compiled)


def _built_files() -> list[Path]:
    """Every extension module of a build, of this list of modules or an older one."""
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    files = [path for path in ENGINE.iterdir() if path.name.endswith(suffixes)]
    return files + [path for path in SOURCE_ROOT.glob(f"{GROUP}__mypyc*") if path.is_file()]


def clean() -> None:
    for path in _built_files():
        path.unlink()
    (ENGINE / compiled.STAMP_NAME).unlink(missing_ok=True)
    shutil.rmtree(BUILD, ignore_errors=True)


def build() -> None:
    from mypyc.build import mypycify
    from setuptools import Distribution  # type: ignore[import-untyped]

    clean()  # no half-old build survives a failed one
    sources = [f"spades/engine/{name}.py" for name in compiled.COMPILED_MODULES]
    os.chdir(SOURCE_ROOT)  # mypyc names the modules by their paths from here
    # The repository's mypy settings are for linting; the build type-checks with the defaults.
    options = ["--config-file", os.devnull, "--cache-dir", str(BUILD / "mypy-cache")]
    extensions = mypycify(
        options + sources, opt_level="3", group_name=GROUP, target_dir=str(BUILD / "c")
    )
    distribution = Distribution({"name": "spades-engine-compiled", "ext_modules": extensions})
    command = distribution.get_command_obj("build_ext")
    command.inplace = True
    command.build_temp = str(BUILD / "temp")
    command.build_lib = str(BUILD / "lib")
    command.parallel = 2
    distribution.run_command("build_ext")
    # Stamp last: an interrupted build has no stamp, so it is never used.
    (ENGINE / compiled.STAMP_NAME).write_text(json.dumps(compiled.stamp_of(ENGINE), indent=1))
    print(f"compiled {len(sources)} engine modules; stamp {ENGINE / compiled.STAMP_NAME}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--clean", action="store_true", help="remove the build and its stamp")
    args = parser.parse_args(argv)
    if args.clean:
        clean()
    else:
        build()
    return 0


if __name__ == "__main__":
    sys.exit(main())
