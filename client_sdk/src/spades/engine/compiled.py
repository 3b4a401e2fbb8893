"""Which engine runs: the mypyc build of the hot modules, or the pure-Python source.

The pure-Python engine is the reference and always works: ``pip install ./client_sdk`` ships
only it. ``make engine`` (``tools/build_engine.py``) compiles the modules of
:data:`COMPILED_MODULES` with mypyc into extension modules beside their sources and writes a
stamp (:data:`STAMP_NAME`) with the SHA-256 of each source it compiled. Python prefers an
extension module to a source of the same name, so this module, imported first by
``spades.engine``, decides before any of them is imported:

* the build is used only while its stamp matches the sources byte for byte (a source edited
  after the build makes every compiled module stale: mypyc compiles them as one group);
* ``SPADES_ENGINE=python`` in the environment runs the pure-Python engine even when a fresh
  build is present (the tests run both; a bot author can rule the build out when debugging).

Otherwise the sources are loaded instead of the extension modules, and :data:`REASON` says why.
This module itself is never compiled (it must run before the choice is made).
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Final

#: The engine's modules that the build compiles (its hot paths and what they call). ``cards``,
#: ``actions``, ``events`` and ``rules`` stay Python: an int subclass, dataclasses with
#: class-level constants, mixins or a ``cached_property`` do not make native classes, and the
#: hot paths use their interned values (``CARDS``, ``PLAY``, ``state.game``) anyway.
COMPILED_MODULES: Final = (
    "acting",
    "automatic",
    "cheapest",
    "commands",
    "deals",
    "errors",
    "game",
    "legal",
    "scoring",
    "seating",
    "shuffle",
    "state",
    "tricks",
)
#: The stamp ``tools/build_engine.py`` writes beside the sources after a build.
STAMP_NAME: Final = "compiled-build.json"
#: ``SPADES_ENGINE=python`` runs the pure-Python engine whatever is built.
ENVIRONMENT_VARIABLE: Final = "SPADES_ENGINE"
PACKAGE: Final = "spades.engine"
ENGINE_DIRECTORY: Final = Path(__file__).resolve().parent


def source_digests(directory: Path = ENGINE_DIRECTORY) -> dict[str, str]:
    """The SHA-256 of each compiled module's source, by module name."""
    return {
        name: hashlib.sha256((directory / f"{name}.py").read_bytes()).hexdigest()
        for name in COMPILED_MODULES
    }


def stamp_of(directory: Path = ENGINE_DIRECTORY) -> dict[str, object]:
    """What the build's stamp records: this interpreter and the sources' digests."""
    return {"cache_tag": sys.implementation.cache_tag, "sources": source_digests(directory)}


def built_modules(directory: Path = ENGINE_DIRECTORY) -> list[str]:
    """The compiled modules that have an extension module beside their source."""
    suffixes = importlib.machinery.EXTENSION_SUFFIXES
    return [
        name
        for name in COMPILED_MODULES
        if any((directory / f"{name}{suffix}").exists() for suffix in suffixes)
    ]


def why_not_compiled(
    directory: Path = ENGINE_DIRECTORY, environment: str | None = None
) -> str | None:
    """None when the build in ``directory`` is complete and fresh (and not ruled out by
    ``environment``, the value of :data:`ENVIRONMENT_VARIABLE`), else why it is not used."""
    built = built_modules(directory)
    if not built:
        return "not built (make engine)"
    if environment == "python":
        return f"{ENVIRONMENT_VARIABLE}=python"
    if len(built) != len(COMPILED_MODULES):
        missing = sorted(set(COMPILED_MODULES) - set(built))
        return f"the build is incomplete (no {', '.join(missing)})"
    try:
        recorded = json.loads((directory / STAMP_NAME).read_text())
    except (OSError, ValueError):
        return f"the build has no readable {STAMP_NAME}"
    current = stamp_of(directory)
    if recorded.get("cache_tag") != current["cache_tag"]:
        return f"the build is for {recorded.get('cache_tag')}, not {current['cache_tag']}"
    sources = recorded.get("sources")
    changed = [
        name
        for name, digest in source_digests(directory).items()
        if not isinstance(sources, dict) or sources.get(name) != digest
    ]
    if changed:
        return f"stale: {', '.join(f'{name}.py' for name in changed)} changed since the build"
    return None


class _SourcesFirst(importlib.abc.MetaPathFinder):
    """Loads the engine's modules from their sources, ignoring any extension module beside them,
    except those in ``compiled`` (the fresh build's, when it is used)."""

    def __init__(self, directory: Path, compiled: Sequence[str]) -> None:
        self.directory = directory
        self.compiled = frozenset(compiled)

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        package, _, name = fullname.rpartition(".")
        source = self.directory / f"{name}.py"
        if package != PACKAGE or name in self.compiled or not source.exists():
            return None
        return importlib.util.spec_from_file_location(fullname, source)


#: Why the pure-Python engine runs, or None when the compiled one does.
REASON: Final = why_not_compiled(ENGINE_DIRECTORY, os.environ.get(ENVIRONMENT_VARIABLE))
#: True when the engine's hot modules are the mypyc build.
COMPILED: Final = REASON is None

if any(ENGINE_DIRECTORY.glob("*.so")) or built_modules(ENGINE_DIRECTORY):
    # Only the listed modules of a fresh build run compiled; a leftover extension module of
    # an older build (another list) never shadows its source.
    sys.meta_path.insert(0, _SourcesFirst(ENGINE_DIRECTORY, COMPILED_MODULES if COMPILED else ()))
    if not COMPILED and os.environ.get(ENVIRONMENT_VARIABLE) != "python":
        warnings.warn(
            f"spades.engine runs the pure-Python engine: {REASON}; rebuild with `make engine`",
            RuntimeWarning,
            stacklevel=2,
        )
