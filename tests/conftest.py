"""What every suite shares, from tests/support (the one home of the tests' helpers, see its
__init__): the fixtures (tests/support/fixtures.py), the marks each test gets from the folder
it lives in (tests/support/marks.py), and the rule that a skip under CI is a failure
(tests/support/skips.py)."""

from __future__ import annotations

from tests.support.fixtures import log_backend, postgres, storage
from tests.support.marks import pytest_collection_modifyitems
from tests.support.skips import pytest_make_collect_report, pytest_runtest_makereport

__all__ = [
    "log_backend",
    "postgres",
    "pytest_collection_modifyitems",
    "pytest_make_collect_report",
    "pytest_runtest_makereport",
    "storage",
]
