"""Errors of the collector.

Tree::

    Exception
    └── CollectorError          anything the collector reports as a failure
        ├── SpoolError          the spool directory cannot be used as asked
        │   ├── SegmentCorrupt      a segment's magic or a frame is bad (names file and offset)
        │   └── SpoolLocked         another writer holds the spool
        ├── RecordError         a record cannot be built or read
        │   └── UnknownSchema       a record's schema version is not one this code knows
        └── NoAgentAnswered     no --node answered one poll (names each node and why)

Invalid settings raise :class:`grstats.core.errors.ConfigError`, naming the setting and the value,
as the agent's settings do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path


class CollectorError(Exception):
    """Base of the collector's errors."""


class SpoolError(CollectorError):
    """The spool directory cannot be used as asked; the message names the path."""


class SegmentCorrupt(SpoolError):
    """A segment's magic or one of its frames is bad: torn, CRC mismatch, or not a record.

    Attributes:
        path: the segment file.
        offset: the byte offset of the bad frame (0 for a bad magic).
        reason: what is wrong, in words.
    """

    def __init__(self, path: Path | str, offset: int, reason: str) -> None:
        super().__init__(f"{path}: offset {offset}: {reason}")
        self.path = str(path)
        self.offset = offset
        self.reason = reason


class SpoolLocked(SpoolError):
    """Another writer (a second collector) holds the spool's lock."""


class RecordError(CollectorError, ValueError):
    """A record cannot be built from an agent's answer, or is not a record at all."""


class UnknownSchema(RecordError):
    """A record's ``schema`` is not a version this code reads; the message names it and where."""

    def __init__(self, version: object, where: str) -> None:
        super().__init__(f"{where}: record schema {version!r} is not a known version")
        self.version = version
        self.where = where


class NoAgentAnswered(CollectorError):
    """No agent answered one poll; the message names every agent asked and what went wrong."""
