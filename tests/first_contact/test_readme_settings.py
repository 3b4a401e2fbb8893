"""The README's settings table says what ``spades-server --help`` says: every flag, its
environment variable and its default, taken from the settings' own definitions."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from spades_server.app import config
from spades_server.ops.settings import Settings
from tests.support.processes import SERVER, clean_environment

README = Path(__file__).resolve().parents[2] / "README.md"
_TICKED = re.compile(r"`([^`]+)`")


def settings_rows() -> dict[str, tuple[str, str]]:
    """The README's settings table: flag -> (environment variable, default cell)."""
    section = README.read_text().split("### Settings", 1)[1].split("\n### ", 1)[0]
    rows: dict[str, tuple[str, str]] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not cells[0].startswith("`--"):
            continue
        flags, variables = _TICKED.findall(cells[0]), _TICKED.findall(cells[1])
        assert len(flags) == len(variables), line
        for flag, variable in zip(flags, variables, strict=True):
            rows[flag] = (variable, cells[2])
    return rows


def shown_default(value: object) -> str:
    """A default as the table shows it: ``5`` for 5.0, ``65536``, an empty one as "(empty"."""
    if value == "":
        return "(empty"
    if isinstance(value, float) and value.is_integer():
        return f"`{int(value)}`"
    return f"`{value}`"


def test_the_settings_table_matches_the_settings() -> None:
    rows = settings_rows()
    defaults = Settings()
    flags = {
        action.option_strings[0]: action.dest
        for action in config.parser({})._actions
        if action.dest != "help"
    }
    assert set(rows) == set(flags), set(rows) ^ set(flags)
    for flag, dest in flags.items():
        variable, default = rows[flag]
        assert variable == config.ENVIRONMENT[dest], flag
        assert default.startswith(shown_default(getattr(defaults, dest))), (flag, default)


def test_help_shows_the_same_defaults_as_the_table() -> None:
    shown = subprocess.run(
        [str(SERVER), "--help"], capture_output=True, text=True, check=True, env=clean_environment()
    ).stdout
    flat = " ".join(shown.split())
    for flag, (variable, default) in settings_rows().items():
        assert flag in flat, flag
        value = default.strip("`") if default.startswith("`") else ""
        assert f"[env {variable}; default: " in flat, variable
        if value:
            # --help prints the Settings value (5.0); the table the plain number (5).
            said = re.search(rf"\[env {variable}; default: ([^\]]*)\]", flat)
            assert said is not None, variable
            printed = said[1]
            assert printed == value or float(printed) == float(value), (flag, printed, value)
