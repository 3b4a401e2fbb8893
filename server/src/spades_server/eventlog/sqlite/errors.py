"""What SQLite's errors mean, in the ``EventLogError`` family: code above ``eventlog/`` never
names ``sqlite3``.

SQLite says what is wrong with a file in its error's text only (``file is not a database``,
``database disk image is malformed``, ``attempt to write a readonly database``): these helpers
read that text once, here, and word it for the operator who must repair or restore the file.
"""

from __future__ import annotations

import sqlite3


def describe_sqlite_error(error: sqlite3.Error) -> str:
    """What a SQLite error on opening or reading says about the file, for the operator."""
    text = str(error)
    if "file is not a database" in text:
        return f"is not an SQLite database, or its header is damaged ({text})"
    if "malformed" in text or "corrupt" in text:
        return f"is damaged ({text})"
    if "no such table" in text:
        return f"has no events table ({text})"
    if "readonly" in text or "read-only" in text:
        return f"cannot be written: the file or its file system is read-only ({text})"
    return f"cannot be used ({type(error).__name__}: {text})"
