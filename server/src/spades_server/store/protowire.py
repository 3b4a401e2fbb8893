"""Protobuf's wire format by hand, for the few bytes the server frames or reads without a
message class: a varint, and a length-delimited field (its tag, its length, its bytes).

:mod:`spades_server.streams.frames` frames stream messages from bytes serialised once, and
:mod:`spades_server.store.journal` frames a log row around an event's bytes and reads a row's kind
off its first bytes; both are plain protobuf encoding, which any parser reads as the declared
messages.
"""

from __future__ import annotations

from typing import Final

__all__ = ["framed", "read_varint", "varint"]

#: Each value under 128 as its one-byte varint (most lengths framed are that short).
_ONE_BYTE: Final = tuple(bytes((value,)) for value in range(0x80))


def varint(value: int) -> bytes:
    """``value`` (0 or more) as a varint."""
    if value < 0x80:
        return _ONE_BYTE[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def framed(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited field: its tag, the payload's length, the payload."""
    return tag + varint(len(payload)) + payload


def read_varint(data: bytes, index: int) -> tuple[int, int] | None:
    """The varint at ``data[index:]`` and the index after it; None when ``data`` ends first."""
    value = shift = 0
    while index < len(data):
        byte = data[index]
        value |= (byte & 0x7F) << shift
        index += 1
        if not byte & 0x80:
            return value, index
        shift += 7
    return None
