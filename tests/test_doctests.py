"""The examples in the SDK's docstrings run as written."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import spades

MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(spades.__path__, "spades.")
    if not info.name.startswith("spades.v1") and not info.name.endswith("__main__")
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    failures, _ = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert failures == 0, f"{failures} docstring example(s) of {name} failed"
