"""The committed outputs of the table of rule variations (the web form's controls,
docs/rules.md's list) must be what tools/gen_variations.py writes from the table today."""

from __future__ import annotations

import gen_variations  # tools/gen_variations.py (tools/ is on pytest's pythonpath and mypy_path)

from spades.engine.variations import VARIATIONS

HINT = "run `make variations` (tools/gen_variations.py) and commit what it writes"


def test_the_web_forms_controls_are_the_tables() -> None:
    committed = gen_variations.TYPESCRIPT.read_text(encoding="utf-8")
    assert committed == gen_variations.typescript(), f"{gen_variations.TYPESCRIPT} is stale: {HINT}"


def test_docs_list_of_variations_is_the_tables() -> None:
    committed = gen_variations.DOCS.read_text(encoding="utf-8")
    assert committed == gen_variations.with_docs_section(committed), f"docs/rules.md: {HINT}"
    for variation in VARIATIONS:
        assert f"| {variation.name} |" in committed
