"""Fixtures shared by every suite; they live in tests/support/fixtures.py (tests/support is the
one home of the tests' helpers, see its __init__)."""

from __future__ import annotations

from tests.support.fixtures import log_backend, postgres, storage

__all__ = ["log_backend", "postgres", "storage"]
