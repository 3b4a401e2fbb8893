"""What the event log stores and hands back: its value types, the same for every backend.

A :class:`StoredEvent` is one event as the log stored it (bytes at a version of its stream and a
global position); a :class:`ProjectionRow` and a :class:`ProjectionCheckpoint` are what a
projection keeps of itself beside the streams. Frozen, slotted dataclasses: cheap to make in the
hot path (every append makes one per event) and safe to share between subscribers.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ProjectionCheckpoint", "ProjectionRow", "StoredEvent"]


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """One event as the log stored it."""

    stream_id: str
    version: int  # 1-based position within its stream
    position: int  # global order across all streams, strictly increasing
    recorded_at: float  # unix seconds when stored
    data: bytes


@dataclass(frozen=True, slots=True)
class ProjectionRow:
    """One item a projection keeps in storage rather than in memory (the lobby's finished
    tables). Listed highest ``sort_key`` first (then highest ``key``); a row is replaced only
    by one whose ``version`` is at least as high, so replicas writing the same row agree."""

    key: str
    sort_key: int
    #: Shown in public listings (a private table's row is not).
    listed: bool
    version: int
    data: bytes


@dataclass(frozen=True, slots=True)
class ProjectionCheckpoint:
    """Where a projection stood: the global position it had folded up to, and its state there
    (what it keeps in memory; its rows are stored beside)."""

    position: int
    data: bytes
