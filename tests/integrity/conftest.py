"""One log of finished and running tables, written once, copied into each test's folder."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.integrity import logs


@pytest.fixture(scope="session")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, logs.LogContents]:
    """A closed log (everything checkpointed into the file) and what it holds."""
    folder = tmp_path_factory.mktemp("template")
    made = logs.contents(finished=3, running=3)
    logs.write_log(folder / "tables.db", made)
    return folder / "tables.db", made


@pytest.fixture
def database(tmp_path: Path, template: tuple[Path, logs.LogContents]) -> Path:
    """A copy of the template log (with its committed marker) in the test's own folder."""
    source, _ = template
    target = tmp_path / "tables.db"
    for suffix in ("", "-committed"):
        shutil.copyfile(f"{source}{suffix}", f"{target}{suffix}")
    return target


@pytest.fixture
def made(template: tuple[Path, logs.LogContents]) -> logs.LogContents:
    return template[1]
