"""The fixtures every suite may ask for (tests/conftest.py makes them visible everywhere).

``storage`` runs a test once on SQLite and once on PostgreSQL (see tests/support/backends.py
for when the PostgreSQL run is skipped and when it fails); ``postgres`` is for a test that runs
on PostgreSQL only (replicas sharing one log, PostgreSQL's own failures).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from tests.support.backends import BACKENDS, BackendName, Storages, require_postgres


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


@pytest.fixture
def postgres() -> None:
    """Go on where PostgreSQL answers (else skip, or fail under CI: require_postgres); a
    plain fixture, so that it decides before the test's event loop runs."""
    require_postgres()
