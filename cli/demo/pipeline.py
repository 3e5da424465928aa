"""The history part of the demo: the collector as a process, then Spark's ingest and report."""

from __future__ import annotations

import json
import math
import time
from typing import TYPE_CHECKING, Any

from grstats.cli.demo.children import grstats_command, log_tail
from grstats.cli.errors import CliError

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from grstats.cli.demo.children import Children
    from grstats.cli.demo.progress import Progress
    from grstats.cli.demo.workdir import Workdir

#: Seconds between two progress lines while the collector runs.
COLLECT_PROGRESS_S = 15.0


class Pipeline:
    """Collect the group's history, load it into a table and report on it."""

    def __init__(self, workdir: Workdir, children: Children, progress: Progress) -> None:
        self._workdir = workdir
        self._children = children
        self._progress = progress
        self._started = 0.0

    def start_collector(self, nodes: Sequence[str]) -> None:
        """Start ``grstats collect``: one snapshot a second from ``nodes[0]``, failing over."""
        node_args = [arg for node in nodes for arg in ("--node", node)]
        spool = self._workdir.spool
        child = self._children.start(
            "collector",
            grstats_command(
                "collect",
                *node_args,
                "--spool",
                str(spool),
                "--interval",
                "1",
                "--format",
                "json",
                "--log-format",
                "json",
            ),
            self._workdir.logs / "collector.log",
            stdout=self._workdir.logs / "collector.json",
        )
        self._started = time.monotonic()
        self._progress.say(
            f"started the collector (pid {child.pid}): a snapshot of every table each second "
            f"from {nodes[0]}, failing over to {', '.join(nodes[1:])}, into {spool}"
        )
        self._progress.detail(
            f"(the same as: grstats collect {' '.join(node_args)} --spool {spool})"
        )

    def stop_collector(self, seconds: float) -> None:
        """Let the collector run ``seconds`` in all, then stop it with SIGTERM (segments seal)."""
        until = self._started + seconds
        if time.monotonic() < until:
            self._progress.say(f"collecting until it has run {seconds:g} s")
        next_note = self._started + COLLECT_PROGRESS_S * math.ceil(
            (time.monotonic() - self._started) / COLLECT_PROGRESS_S + 1e-9
        )
        while (now := time.monotonic()) < until:
            self._children.check()
            if now >= next_note:
                self._progress.say(f"collecting: {now - self._started:.0f} of {seconds:g} s")
                next_note += COLLECT_PROGRESS_S
            time.sleep(min(0.5, max(0.0, until - now)))
        child = self._children["collector"]
        code = self._children.stop("collector")
        if code != 0:
            raise CliError(
                f"the collector exited with status {code} after SIGTERM; the end of "
                f"{child.log}:\n{log_tail(child.log)}"
            )
        summary = _json_of(self._workdir.logs / "collector.json", "the collector")
        if not summary.get("snapshots"):
            raise CliError(f"the collector took no snapshot; see {child.log}")
        self._progress.say(
            f"stopped the collector with SIGTERM after {time.monotonic() - self._started:.0f} s: "
            f"{summary['snapshots']} snapshots, {summary['failovers']} failover(s), "
            f"{summary['failed_polls']} poll(s) unanswered, {summary['segments_sealed']} "
            f"segment(s) sealed in {self._workdir.spool}"
        )

    def ingest(self) -> None:
        """Load the sealed segments into the Parquet table with ``grstats spark ingest``."""
        result = self._spark_job(
            "ingest",
            "--spool",
            str(self._workdir.spool),
            "--table",
            str(self._workdir.table),
            "--format",
            "json",
        )
        self._progress.say(
            f"ingested {result['records']} snapshots, {result['rows']} member rows into "
            f"{self._workdir.table}"
        )

    def report(self) -> dict[str, Any]:
        """Write the report with ``grstats spark report``; return its summary.json."""
        self._spark_job(
            "report",
            "--table",
            str(self._workdir.table),
            "--out",
            str(self._workdir.report),
            "--format",
            "json",
        )
        return _json_of(self._workdir.report / "summary.json", "the report")

    def _spark_job(self, job: str, *args: str) -> dict[str, Any]:
        log = self._workdir.logs / f"{job}.log"
        output = self._workdir.logs / f"{job}.json"
        started = time.monotonic()
        child = self._children.start(
            job, grstats_command("spark", job, *args), log, stdout=output, env=SPARK_ENV
        )
        self._progress.say(f"grstats spark {job} (pid {child.pid}), Spark in local mode, log {log}")
        follow = _Follower(log, f"{job}: ", self._progress)
        code = self._children.wait(job, poll=follow.poll)
        if code != 0:
            raise CliError(
                f"grstats spark {job} exited with status {code}; the end of {log}:\n{log_tail(log)}"
            )
        self._progress.say(
            f"grstats spark {job} took {time.monotonic() - started:.1f} s (JVM start included)"
        )
        return _json_of(output, f"grstats spark {job}")


#: The Spark jobs' environment: they write no class archive (grstats.spark.class_archive,
#: whose ENV this names; a test holds them equal). Writing it adds half a minute to the first
#: command on a machine, which the demo, timed and watched, should not pay; an archive the
#: user's own commands wrote is not used either, so the demo runs the same everywhere.
SPARK_ENV = {"GRSTATS_SPARK_CLASS_ARCHIVE": "off"}


class _Follower:
    """Prints the lines of a log that start with ``prefix`` as they are written."""

    def __init__(self, log: Path, prefix: str, progress: Progress) -> None:
        self._log = log
        self._prefix = prefix
        self._progress = progress
        self._offset = 0

    def poll(self) -> None:
        try:
            with self._log.open("rb") as stream:
                stream.seek(self._offset)
                data = stream.read()
        except OSError:
            return
        complete = data[: data.rfind(b"\n") + 1]
        self._offset += len(complete)
        for line in complete.decode("utf-8", errors="replace").splitlines():
            if line.startswith(self._prefix):
                self._progress.detail(line)


def _json_of(path: Path, what: str) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CliError(f"{what} wrote no summary to {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise CliError(f"{what} wrote no summary object to {path}")
    return data
