"""Skips that cannot hide under CI: there, a skipped test fails, unless it is marked
``allowed_skip(NAME)`` with a NAME of :data:`ALLOWED_SKIPS` (README.md lists each, and why).

CI provides everything the suite needs (PostgreSQL, NATS, the cluster's daemons, chromium, the
compiled engine, root for the disk tests: ``make test`` installs or builds them), so a test that
skips there is a test that silently stopped running. Elsewhere a skip says what is missing.

The hooks are pytest's; tests/conftest.py takes them from here.
"""

from __future__ import annotations

import os
from collections.abc import Generator, Mapping
from typing import Any

import pytest

from tests.support.backends import in_ci

#: The skips CI allows, by the name a test's ``allowed_skip`` mark gives, and why each is right
#: on CI too. README.md's "Skipped tests" lists the same names (tests/structure checks it).
#: None today: a skip that was right on CI is now impossible there by construction (the pure-Python
#: pass of `make test` deselects the one test that compares it with the compiled engine).
ALLOWED_SKIPS: Mapping[str, str] = {}

MARK = "allowed_skip"


def allowed_skip(item: pytest.Item) -> str | None:
    """The name of ``item``'s ``allowed_skip`` mark, or None (a name is allowed only when it is
    one of :data:`ALLOWED_SKIPS`)."""
    mark = item.get_closest_marker(MARK)
    return None if mark is None else str(mark.args[0])


def failed_under_ci(reason: str, environ: Mapping[str, str] = os.environ) -> str:
    return (
        f"skipped under CI (CI={environ.get('CI')!r}), where every skip is a failure unless"
        f" README.md's 'Skipped tests' allows it: {reason}"
    )


def skip_reason(longrepr: Any) -> str:
    """What a skipped report says (pytest keeps it as (file, line, reason))."""
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARK}(name): a skip CI allows; name is one of tests/support/skips.py ALLOWED_SKIPS",
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if not report.skipped or hasattr(report, "wasxfail") or not in_ci():
        return
    name = allowed_skip(item)
    if name in ALLOWED_SKIPS:
        return
    reason = skip_reason(report.longrepr)
    if name is not None:
        reason += f" (its allowed_skip({name!r}) names no entry of ALLOWED_SKIPS)"
    report.outcome = "failed"
    report.longrepr = failed_under_ci(reason)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, Any, None]:
    """A whole module skipped as it is collected (``pytest.importorskip``, a module-level
    ``pytest.skip``) fails under CI too."""
    outcome = yield
    report: pytest.CollectReport = outcome.get_result()
    if report.skipped and in_ci():
        report.outcome = "failed"
        report.longrepr = failed_under_ci(skip_reason(report.longrepr))
