"""Spark's Python worker daemon for local mode, importing pyspark's compiled modules.

Spark starts its Python workers with ``PYTHONPATH`` beginning with ``pyspark.zip`` and the
py4j zip from ``$SPARK_HOME/python/lib``. Python cannot keep compiled bytecode for a module
imported from a zip file, so every daemon and every worker it forks compiled pyspark's
sources again, which delayed the first task of every job that started the workers
(docs/benchmarks.md, "Spark ingest", has the figures).

When the zip sits inside a pip-installed pyspark (``<site>/pyspark/python/lib/pyspark.zip``,
which is what ``pip install pyspark`` gives and what :mod:`grstats.spark.session` runs locally), the
installed package is the same release as the zip, so this daemon puts ``<site>`` ahead of
the zips and runs pyspark's own daemon. Anything else is left as Spark made it.

:func:`grstats.spark.session.session_conf` names this module as ``spark.python.daemon.module`` in
local mode; the JVM runs it once per executor with ``python -m``. It imports nothing but
pyspark's daemon, which forks the workers and imports the worker module after each fork.
"""

from __future__ import annotations

import sys
from pathlib import Path

#: The zips Spark puts on the workers' PYTHONPATH.
_SPARK_ZIPS = ("pyspark.zip", "py4j-")


def installed_first(path: list[str]) -> list[str]:
    """Return ``path`` with an installed pyspark's directory ahead of the zips it ships.

    Only a zip inside a pyspark package (``<site>/pyspark/python/lib/<zip>``) moves
    ``<site>`` forward; the other entries keep their order.
    """
    for position, entry in enumerate(path):
        zip_file = Path(entry)
        if zip_file.suffix != ".zip" or not zip_file.name.startswith(_SPARK_ZIPS):
            continue
        parents = zip_file.parents
        if len(parents) < 4 or parents[2].name != "pyspark":
            continue
        if not (parents[2] / "__init__.py").is_file():
            continue
        site = str(parents[3])
        rest = [other for other in path if other != site]
        return [*rest[:position], site, *rest[position:]] if site not in path[:position] else path
    return path


def main() -> None:
    """Run pyspark's daemon with the installed pyspark ahead of the zips."""
    sys.path[:] = installed_first(sys.path)
    from pyspark import daemon  # noqa: PLC0415 (after the path is set)

    daemon.manager()


if __name__ == "__main__":
    main()
