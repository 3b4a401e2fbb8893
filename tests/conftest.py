"""What every suite shares, from tests/support (the one home of the tests' helpers, see its
__init__): the fixtures (tests/support/fixtures.py) and the marks each test gets from the folder
it lives in (tests/support/marks.py)."""

from __future__ import annotations

from tests.support.fixtures import log_backend, postgres, storage
from tests.support.marks import pytest_collection_modifyitems

__all__ = ["log_backend", "postgres", "pytest_collection_modifyitems", "storage"]
