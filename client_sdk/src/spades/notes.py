"""Sealed notes: what a bot may attach to an action, and how the table commits to it.

A seat may attach a note to any action ("why I bid 4"): at most :data:`MAX_NOTE_BYTES` bytes of
UTF-8. No one sees it while the match is played, the partner least of all (a note the partner
could read would be a private channel between partners). The action's event carries only a
commitment, :func:`note_digest`; the note is revealed in the table's record when the match is
over, with the key that lets anyone check the commitment (docs/records.md, "Sealed notes").

The commitment is salted, and made for every action, note or not (the empty note):

* a plain SHA-256 of a short note can be guessed by trying notes, and a note picked from a few
  agreed ones would be a signal to the partner, so the note is hashed after a salt no one can
  compute before the end: ``HMAC-SHA256(note_key, sequence)``, with a random key per table that
  the server keeps in its log and reveals in the record when the match ends;
* an event with a commitment only when there is a note would say "there is a note" (one bit
  per action, again a signal), so every action's event carries one.

>>> key = bytes(32)
>>> digest = note_digest(key, 17, "why I bid 4".encode())
>>> len(digest), digest == note_digest(key, 17, b"why I bid 4"), digest == note_digest(key, 18, b"")
(32, True, False)
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Final

#: The longest note, in bytes of UTF-8 (ActionRequest.note).
MAX_NOTE_BYTES: Final = 4096
#: The length of a table's note key.
NOTE_KEY_BYTES: Final = 32


def note_salt(note_key: bytes, sequence: int) -> bytes:
    """The salt of the note on the event with ``sequence``: HMAC-SHA256 of the sequence (8 bytes,
    big-endian) keyed by the table's note key."""
    # hmac.digest: the one-shot form, in C (hmac.new builds a Python object per call), on
    # every action's decision.
    return hmac.digest(note_key, sequence.to_bytes(8, "big"), "sha256")


def note_digest(note_key: bytes, sequence: int, note: bytes) -> bytes:
    """The commitment an event carries (Event.note_sha256): SHA-256 of the salt then the note's
    UTF-8 bytes (``b""`` for an action without a note)."""
    return hashlib.sha256(note_salt(note_key, sequence) + note).digest()


def note_problem(note: bytes) -> str | None:
    """Why ``note`` cannot be attached (too long, not UTF-8), or None when it can."""
    if len(note) > MAX_NOTE_BYTES:
        return f"a note is at most {MAX_NOTE_BYTES} bytes of UTF-8; this one is {len(note)}"
    try:
        note.decode("utf-8")
    except UnicodeDecodeError as error:
        return f"a note must be UTF-8 text; byte {error.start} is not"
    return None


def encode_note(note: str) -> bytes:
    """A note as ActionRequest.note carries it (UTF-8); ValueError saying why it cannot be sent.

    >>> encode_note("why I bid 4")
    b'why I bid 4'
    """
    try:
        encoded = note.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ValueError(f"a note must be UTF-8 text; character {error.start} is not") from None
    problem = note_problem(encoded)
    if problem is not None:
        raise ValueError(problem)
    return encoded
