"""The driver program deploy/spark/submit.sh gives spark-submit: grstats's command line.

spark-submit runs a Python file as the driver; this one hands its arguments to ``grstats``
(``spark ingest ...``, ``spark report ...``), which, started without ``--master``, keeps the
master and settings spark-submit set.
"""

# ruff: noqa: INP001 (a script spark-submit runs by path, not a module of a package)
from __future__ import annotations

import sys

from grstats.cli import main

if __name__ == "__main__":
    sys.exit(main())
