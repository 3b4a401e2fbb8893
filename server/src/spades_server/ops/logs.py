"""Structured logging: JSON lines for machines, pretty lines in a terminal."""

from __future__ import annotations

import logging
import sys

import structlog


def configure(log_format: str = "auto", level: str = "info") -> None:
    """``log_format`` is ``json``, ``console`` or ``auto`` (console when stderr is a terminal)."""
    pretty = log_format == "console" or (log_format == "auto" and sys.stderr.isatty())
    renderer: structlog.typing.Processor = (
        structlog.dev.ConsoleRenderer() if pretty else structlog.processors.JSONRenderer()
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping()[level.upper()]
        ),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=True,
    )
