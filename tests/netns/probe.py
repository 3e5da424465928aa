"""A client that lives inside one test host's namespace and answers the test over stdin/stdout.

The test process stays in the root namespace, where the hosts' addresses do not exist, so it
asks this process instead: one JSON request a line, one JSON answer a line. Started once per
host (``ip netns exec NS python -m tests.netns.probe``), it imports grstats once, so a query
costs milliseconds rather than a new interpreter.

Requests:

* ``{"grstats": [ARG, ...]}`` runs ``grstats ARG ...`` in-process; the answer is
  ``{"rc": N, "out": STDOUT, "err": STDERR}``.
* ``{"sql": {"host", "port", "user", "password", "statement"}}`` runs one statement with
  PyMySQL; the answer is ``{"rows": N, "seconds": S}`` or ``{"error": [CODE, TEXT],
  "seconds": S}``.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import time
from typing import Any

import pymysql  # type: ignore[import-untyped]

from grstats.cli import main as grstats_main


def run_grstats(argv: list[str]) -> dict[str, Any]:
    """Run the grstats command line in this process and capture what it prints."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = grstats_main(argv)
        except SystemExit as exc:  # argparse's errors
            rc = exc.code if isinstance(exc.code, int) else 1
    return {"rc": rc, "out": out.getvalue(), "err": err.getvalue()}


def run_sql(request: dict[str, Any]) -> dict[str, Any]:
    """Run one statement over the MySQL protocol and say how it ended and how long it took."""
    started = time.monotonic()
    try:
        connection = pymysql.connect(
            host=request["host"],
            port=request["port"],
            user=request["user"],
            password=request["password"],
            connect_timeout=5,
            read_timeout=120,
        )
        try:
            with connection.cursor() as cursor:
                cursor.execute(request["statement"])
                rows = len(cursor.fetchall())
        finally:
            connection.close()
    except pymysql.MySQLError as exc:
        code, text = (*exc.args, 0, "")[:2] if exc.args else (0, str(exc))
        return {"error": [code, str(text)], "seconds": time.monotonic() - started}
    return {"rows": rows, "seconds": time.monotonic() - started}


def serve(stdin: io.TextIOBase, stdout: io.TextIOBase) -> None:
    """Answer requests until stdin closes."""
    for line in stdin:
        request = json.loads(line)
        if "grstats" in request:
            answer = run_grstats(request["grstats"])
        elif "sql" in request:
            answer = run_sql(request["sql"])
        else:
            answer = {"error": [0, f"unknown request {sorted(request)}"]}
        stdout.write(json.dumps(answer) + "\n")
        stdout.flush()


if __name__ == "__main__":
    serve(sys.stdin, sys.stdout)  # type: ignore[arg-type]
