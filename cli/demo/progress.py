"""The demo's progress lines: ``== [ 12.3 s] text`` on stderr, timed from the demo's start."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """Prints what the demo does, each line with the seconds since the demo started."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.started = time.monotonic()
        self._stream = stream

    @property
    def elapsed_s(self) -> float:
        """Seconds since the demo started."""
        return time.monotonic() - self.started

    def say(self, text: str) -> None:
        """Print one progress line."""
        stream = self._stream or sys.stderr
        print(f"== [{self.elapsed_s:6.1f} s] {text}", file=stream, flush=True)

    def detail(self, text: str) -> None:
        """Print a line that belongs to the step above (indented, not timed)."""
        stream = self._stream or sys.stderr
        print(f"   {text}", file=stream, flush=True)
