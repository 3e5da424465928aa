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
* ``{"silent": {"host", "port", "count"}}`` opens ``count`` connections that read the server's
  greeting and never answer it; the answer is ``{"farewells": [[SEQUENCE, CODE, MESSAGE,
  SECONDS, CLOSED], ...]}``: the error packet each got, how long after its greeting, and
  whether the server then closed the connection (CODE 0: it closed or stayed open 30 s without
  one); or
  ``{"error": [0, TEXT]}`` when one could not be opened.
"""

from __future__ import annotations

import contextlib
import io
import json
import socket
import struct
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


#: How long a silent connection waits for the server to close it.
SILENT_WAIT_S = 30.0
#: How long it waits, after the server's error packet, for the server to close the connection.
CLOSE_WAIT_S = 2.0


def read_packet(connection: socket.socket) -> tuple[int, bytes] | None:
    """One MySQL protocol packet: its sequence id and payload; None when the server closed."""
    header = _read_exactly(connection, 4)
    if header is None:
        return None
    length = int.from_bytes(header[:3], "little")
    payload = _read_exactly(connection, length)
    return None if payload is None else (header[3], payload)


def _read_exactly(connection: socket.socket, size: int) -> bytes | None:
    """``size`` bytes, or None when the connection ends first."""
    chunks = b""
    while len(chunks) < size:
        chunk = connection.recv(size - len(chunks))
        if not chunk:
            return None
        chunks += chunk
    return chunks


def farewell(connection: socket.socket, since: float) -> list[Any]:
    """The error packet the server sends a silent connection before it closes it."""
    try:
        packet = read_packet(connection)
    except TimeoutError:
        return [None, 0, "", time.monotonic() - since, False]
    after = time.monotonic() - since
    if packet is None or not packet[1] or packet[1][0] != 0xFF:
        return [None, 0, "", after, packet is None]
    sequence, payload = packet
    (code,) = struct.unpack("<H", payload[1:3])
    message = payload[3:].decode(errors="replace").removeprefix("#HY000")
    connection.settimeout(CLOSE_WAIT_S)
    try:
        closed = read_packet(connection) is None
    except TimeoutError:
        closed = False
    return [sequence, code, message, after, closed]


def run_silent(request: dict[str, Any]) -> dict[str, Any]:
    """Open ``count`` connections that never answer the greeting; what each was told, when."""
    opened: list[socket.socket] = []
    greeted: list[float] = []
    try:
        for _ in range(request["count"]):
            connection = socket.create_connection((request["host"], request["port"]), timeout=5)
            opened.append(connection)
            connection.settimeout(SILENT_WAIT_S)
            if read_packet(connection) is None:
                return {"error": [0, f"connection {len(opened)} closed before its greeting"]}
            greeted.append(time.monotonic())
        return {"farewells": [farewell(c, since) for c, since in zip(opened, greeted, strict=True)]}
    except OSError as exc:
        return {"error": [0, f"connection {len(opened) + 1}: {exc}"]}
    finally:
        for connection in opened:
            connection.close()


def serve(stdin: io.TextIOBase, stdout: io.TextIOBase) -> None:
    """Answer requests until stdin closes."""
    for line in stdin:
        request = json.loads(line)
        if "grstats" in request:
            answer = run_grstats(request["grstats"])
        elif "sql" in request:
            answer = run_sql(request["sql"])
        elif "silent" in request:
            answer = run_silent(request["silent"])
        else:
            answer = {"error": [0, f"unknown request {sorted(request)}"]}
        stdout.write(json.dumps(answer) + "\n")
        stdout.flush()


if __name__ == "__main__":
    serve(sys.stdin, sys.stdout)  # type: ignore[arg-type]
