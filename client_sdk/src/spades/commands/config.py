"""Where the commands find the server and the secrets: a flag, else the environment, else the
config file (``$SPADES_CONFIG``, else ``$XDG_CONFIG_HOME/spades/config.toml``, else
``~/.config/spades/config.toml``), else the default.

The file is flat TOML, every value a string::

    server = "spades.example.org:50051"
    tls_ca = "/etc/ssl/spades-ca.pem"
    account_key = "spk.…"
    account_id = "…"
    session_token = "sps.…"
    operator_token = "…"

Secrets never need the command line (a command line shows in ``ps``): ``spades account create
NAME --save`` writes the new key (and the account's id) into the file, made readable by its
owner only (mode 0600), and ``spades account rotate-key --save`` replaces it. ``spades account
sign-in NAME`` (the password asked for, never a flag) writes the person's session token there,
and ``spades account sign-out`` removes it.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Final

#: The environment variable naming the config file.
CONFIG_VARIABLE: Final = "SPADES_CONFIG"

#: Each setting the file may hold, and the environment variable that overrides it.
SETTINGS: Final = {
    "server": "SPADES_SERVER",
    "tls_ca": "SPADES_TLS_CA",
    "account_key": "SPADES_ACCOUNT_KEY",
    "account_id": "SPADES_ACCOUNT_ID",
    "session_token": "SPADES_SESSION_TOKEN",
    "operator_token": "SPADES_OPERATOR_TOKEN",
}


class ConfigFileError(Exception):
    """A config file that cannot be read or written: the message names the file and why."""


def config_path() -> Path:
    """The config file's path (it may not exist)."""
    named = os.environ.get(CONFIG_VARIABLE, "")
    if named:
        return Path(named).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME", "") or str(Path.home() / ".config")
    return Path(base) / "spades" / "config.toml"


def read_config(path: Path | None = None) -> dict[str, str]:
    """The file's settings ({} when there is no file); ConfigFileError for a file that is not
    flat TOML of known string settings."""
    path = path or config_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as error:
        raise ConfigFileError(f"{path}: {error.strerror or error}") from error
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigFileError(f"{path}: not TOML: {error}") from error
    settings: dict[str, str] = {}
    for key, value in document.items():
        if key not in SETTINGS:
            raise ConfigFileError(f"{path}: unknown setting {key!r}; known: {', '.join(SETTINGS)}")
        if not isinstance(value, str):
            raise ConfigFileError(f"{path}: {key} must be a string")
        settings[key] = value
    return settings


def setting(name: str, default: str = "") -> str:
    """A setting from the environment, else the config file, else ``default``."""
    from_environment = os.environ.get(SETTINGS[name], "")
    if from_environment:
        return from_environment
    return read_config().get(name, "") or default


def where_from(name: str) -> str:
    """Where ``setting(name)`` would be taken from, for messages: the variable or the file."""
    if os.environ.get(SETTINGS[name], ""):
        return f"the environment ({SETTINGS[name]})"
    return str(config_path())


def save_settings(
    updates: Mapping[str, str], path: Path | None = None, *, forget: tuple[str, ...] = ()
) -> Path:
    """Write ``updates`` into the config file, keeping its other settings but those named in
    ``forget``; the file (and a folder made for it) is readable by its owner only. Returns the
    file's path."""
    path = path or config_path()
    settings = read_config(path)
    settings.update(updates)
    for name in forget:
        settings.pop(name, None)
    text = "".join(f"{key} = {_toml_string(value)}\n" for key, value in settings.items())
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(descriptor, 0o600)  # an older file keeps its mode through O_CREAT: narrow it
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(text)
    except OSError as error:
        raise ConfigFileError(f"{path}: {error.strerror or error}") from error
    return path


def _toml_string(value: str) -> str:
    """A TOML basic string."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in escaped) + '"'
