"""Reading and writing records as files: canonical protobuf JSON or binary.

The format follows the file name (``.json`` is JSON; ``.pb`` and ``.bin`` are binary) unless
``format`` says otherwise.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from google.protobuf import json_format
from google.protobuf.message import DecodeError

from spades.records.record import RecordError
from spades.v1 import record_pb2

Format = Literal["json", "binary"]

_FORMAT_BY_SUFFIX: dict[str, Format] = {".json": "json", ".pb": "binary", ".bin": "binary"}


def record_to_json(record: record_pb2.GameRecord) -> str:
    """The record as indented canonical protobuf JSON."""
    return json_format.MessageToJson(record, indent=2) + "\n"


def record_from_json(text: str | bytes) -> record_pb2.GameRecord:
    """A record from protobuf JSON; :class:`RecordError` when it is not one."""
    try:
        return json_format.Parse(text, record_pb2.GameRecord())
    except (json_format.ParseError, UnicodeDecodeError) as error:
        raise RecordError(f"not a game record in JSON: {_first_line(error)}") from error


def record_to_bytes(record: record_pb2.GameRecord) -> bytes:
    """The record in the protobuf binary encoding."""
    return record.SerializeToString(deterministic=True)


def record_from_bytes(data: bytes) -> record_pb2.GameRecord:
    """A record from the protobuf binary encoding; :class:`RecordError` when it is not one."""
    record = record_pb2.GameRecord()
    try:
        record.ParseFromString(data)
    except DecodeError as error:
        raise RecordError(f"not a binary game record: {_first_line(error)}") from error
    return record


def file_format(path: str | Path, format: Format | None = None) -> Format:
    """The format to use for ``path``: ``format`` when given, else the one its suffix names."""
    if format is not None:
        return format
    found = _FORMAT_BY_SUFFIX.get(Path(path).suffix.lower())
    if found is None:
        raise RecordError(
            f"{path}: cannot tell the format from the file name; use .json, .pb or .bin "
            "or say json or binary"
        )
    return found


def save_record(
    record: record_pb2.GameRecord, path: str | Path, format: Format | None = None
) -> None:
    """Write the record to ``path`` as JSON or binary (by suffix unless ``format`` is given)."""
    if file_format(path, format) == "json":
        Path(path).write_text(record_to_json(record), encoding="utf-8")
    else:
        Path(path).write_bytes(record_to_bytes(record))


def load_record(path: str | Path, format: Format | None = None) -> record_pb2.GameRecord:
    """Read a record from ``path`` (by suffix unless ``format`` is given).

    Raises :class:`RecordError` for a file that cannot be read or is not a record.
    """
    chosen = file_format(path, format)
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise RecordError(f"{path}: {error.strerror or error}") from error
    try:
        return record_from_json(data) if chosen == "json" else record_from_bytes(data)
    except RecordError as error:
        raise RecordError(f"{path}: {error}") from error


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
