"""Fixtures shared by every suite: the event-log backend a server test runs on.

A test that asks for ``storage`` (directly, or through a fixture such as the server suite's
``server``) runs once on SQLite and once on PostgreSQL (see tests/backends.py for when the
PostgreSQL run is skipped and when it fails).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from tests.backends import BACKENDS, BackendName, Storages, require_postgres


@pytest.fixture(params=BACKENDS)
def log_backend(request: pytest.FixtureRequest) -> BackendName:
    backend: BackendName = request.param
    if backend == "postgres":
        require_postgres()
    return backend


@pytest_asyncio.fixture
async def storage(log_backend: BackendName, tmp_path: Path) -> AsyncIterator[Storages]:
    """The test's log storages on the backend of this run; removed after the test."""
    storages = Storages(log_backend, tmp_path)
    yield storages
    for made in storages.made.values():
        await made.remove()
