"""The heading a benchmark prints first: its title, and the machine it runs on as it starts."""

from __future__ import annotations

import os
import platform


def print_heading(title: str) -> float:
    """Print ``# title`` and the interpreter, machine and load average; return that load average."""
    load = os.getloadavg()[0]
    print(f"# {title}")
    print(
        f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, "
        f"load average {load:.2f} at start\n",
        flush=True,
    )
    return load
