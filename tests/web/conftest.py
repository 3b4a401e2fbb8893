"""The web suite's fixtures: a real browser (tests/support/browser.py)."""

from __future__ import annotations

from tests.support.browser import browser

__all__ = ["browser"]
