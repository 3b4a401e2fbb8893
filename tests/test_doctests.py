"""The examples in the docstrings of the SDK, the server and the bots run as written."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
from types import ModuleType

import pytest

import spades
import spades_bots
import spades_server


def _modules(package: ModuleType) -> list[str]:
    prefix = f"{package.__name__}."
    return [
        info.name
        for info in pkgutil.walk_packages(package.__path__, prefix)
        # Generated protobuf code has no examples; a __main__ would run on import.
        if not info.name.startswith((f"{prefix}v1", "spades.v1"))
        and not info.name.endswith("__main__")
    ]


MODULES = sorted(
    name for package in (spades, spades_server, spades_bots) for name in _modules(package)
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    failures, _ = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert failures == 0, f"{failures} docstring example(s) of {name} failed"


def test_the_server_and_bots_are_collected() -> None:
    assert "spades_server.store.journal" in MODULES and "spades_bots.registry" in MODULES
    assert not any(name.startswith(("spades.v1", "spades_server.v1")) for name in MODULES)
