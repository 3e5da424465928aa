"""A spool writer that appends numbered records as fast as it can: the kill -9 test's victim.

Run as ``python appender.py SPOOL SEGMENT_BYTES``. On start it recovers the spool (as the
collector does), finds the highest record number sealed so far and goes on from the next;
after each append returns (fsynced) it prints the record's number on a line of its own.
"""

from __future__ import annotations

import sys
from pathlib import Path

import structlog

from grstats.collector.spool import SpoolSettings, SpoolWriter, read_segment, sealed_segments


def main() -> None:
    """Append records until killed."""
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))
    spool, segment_bytes = Path(sys.argv[1]), int(sys.argv[2])
    writer = SpoolWriter(spool, SpoolSettings(segment_bytes=segment_bytes))
    indexes = [r["index"] for p in sealed_segments(spool) for r in read_segment(p)]
    index = max(indexes, default=-1) + 1
    while True:
        writer.append({"schema": 1, "index": index, "pad": "p" * (index % 97)})
        sys.stdout.write(f"{index}\n")
        sys.stdout.flush()
        index += 1


if __name__ == "__main__":
    main()
