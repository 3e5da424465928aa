"""The collector's /metrics over real HTTP, while it polls real gRPC agents into a real spool.

Each test runs the collect loop against agents on 127.0.0.1 (or dead ports), serves its
metrics on a free port and scrapes them with an HTTP client, as Prometheus does; one runs
``grstats collect --metrics-listen`` as a process. promtool checks a scrape: it is required
under CI (CI=true) and skipped elsewhere when missing.
"""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from typing import TYPE_CHECKING, Any

import pytest
import structlog
from prometheus_client.parser import text_string_to_metric_families

from grstats import __version__
from grstats.cli.demo import free_ports
from grstats.collector.collect import Limits, collect
from grstats.collector.metrics import CollectorMetrics, MetricsServer
from grstats.collector.poller import DEFAULT_GROUP_LABEL, Poller, PollerSettings
from grstats.collector.spool import (
    SpoolSettings,
    SpoolWriter,
    parse_segment_name,
    read_segment,
    sealed_segments,
    usage,
)
from grstats.core.errors import ConfigError
from tests.agent.test_runtime import Group, start_group
from tests.inprocess import run_main
from tests.programs import require
from tests.waiting import wait_until_async

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable
    from pathlib import Path

    from grstats.collector.collect import Progress

#: A scrape's samples: (sample name, sorted labels) -> value.
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@pytest.fixture(name="group")
async def _group() -> AsyncIterator[Group]:
    """Three agents of a simulated group on 127.0.0.1, each serving every member's rows."""
    group = await start_group(3)
    await group.rounds(2)
    yield group
    for agent in group.agents:
        await agent.stop(grace_s=0)


def scrape_text(port: int) -> str:
    """GET /metrics of 127.0.0.1:``port``, checking the answer is Prometheus' text format."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        assert answer.status == 200
        assert answer.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text: str = answer.read().decode()
    return text


def parse(text: str) -> Samples:
    """The samples of a scrape, parsed by prometheus-client's text parser."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


async def scrape(port: int) -> Samples:
    """Scrape from a thread, so that the agents and the collector on this loop keep running."""
    return parse(await asyncio.to_thread(scrape_text, port))


def of(samples: Samples, name: str, group_label: str = DEFAULT_GROUP_LABEL) -> float:
    """The value of a group's sample ``name``."""
    return samples[(name, (("group_label", group_label),))]


def reached(
    name: str, value: float, group_label: str = DEFAULT_GROUP_LABEL
) -> Callable[[Samples], bool]:
    """A condition on scrapes: the group's ``name`` is at least ``value`` (absent: not yet)."""
    return lambda samples: samples.get((name, (("group_label", group_label),)), -1.0) >= value


def spool_of(samples: Samples) -> tuple[int, int]:
    """(segments, bytes) of the spool as a scrape gives them."""
    return (
        int(samples[("grstats_collector_spool_segments", ())]),
        int(samples[("grstats_collector_spool_bytes", ())]),
    )


def spool_on_disk(spool: Path) -> tuple[int, int]:
    """(segments, bytes) of the spool as ls would count them: segment and columns files."""
    segments = [p for p in spool.iterdir() if parse_segment_name(p.name) is not None]
    columns = list(spool.glob("segment-*.columns"))
    return len(segments), sum(p.stat().st_size for p in [*segments, *columns])


def dead_node() -> str:
    """An address where nothing listens (connections are refused)."""
    return f"127.0.0.1:{free_ports(1)[0]}"


class Collecting:
    """One collect loop with its metrics served on a free port of 127.0.0.1."""

    def __init__(
        self,
        spool: Path,
        settings: PollerSettings,
        limits: Limits,
        spool_settings: SpoolSettings | None = None,
    ) -> None:
        self.spool = spool
        self.writer = SpoolWriter(spool, spool_settings)
        self.metrics = CollectorMetrics(spool)
        self.server = MetricsServer(self.metrics.registry, "127.0.0.1", 0)
        self.poller = Poller(settings)
        self.task = asyncio.ensure_future(
            collect(
                [self.poller],
                self.writer,
                asyncio.Event(),
                limits=limits,
                logger=structlog.get_logger(),
                metrics=self.metrics,
            )
        )

    async def until(self, condition: Callable[[Samples], bool], timeout_s: float = 30) -> Samples:
        """Scrape until ``condition`` holds for a scrape; return that scrape."""

        async def holds() -> Samples | None:
            samples = await scrape(self.server.port)
            return samples if condition(samples) else None

        found = await wait_until_async(holds, timeout_s, "a scrape where the condition holds")
        assert found is not None
        return found

    async def finish(self) -> Progress:
        """Wait for the loop to stop by its limits; the writer stays open and the server up."""
        try:
            return await asyncio.wait_for(self.task, 60)
        finally:
            await self.poller.aclose()

    def close(self) -> None:
        """Seal the open segment and stop serving."""
        self.writer.close()
        self.server.close()


async def test_snapshots_time_and_spool_over_http(group: Group, tmp_path: Path) -> None:
    """Each snapshot counts, the last snapshot's time moves, and the spool figures are the disk's."""
    spool = tmp_path / "spool"
    run = Collecting(
        spool,
        PollerSettings((group.agents[0].address,)),
        Limits(count=3),
        SpoolSettings(segment_bytes=1024),  # every record fills a segment: several segments
    )
    try:
        first = await run.until(reached("grstats_collector_snapshots_total", 1))
        progress = await run.finish()
        last = await scrape(run.server.port)
        on_disk = spool_on_disk(spool)
        run.writer.close()
        closed = await scrape(run.server.port)
    finally:
        run.close()
    assert of(last, "grstats_collector_snapshots_total") == progress.snapshots == 3
    assert of(last, "grstats_collector_failovers_total") == 0
    assert of(last, "grstats_collector_poll_errors_total") == 0
    records = [r for path in sealed_segments(spool) for r in read_segment(path)]
    stamp = of(last, "grstats_collector_last_snapshot_timestamp_seconds")
    assert stamp == records[-1]["collected_at_us"] / 1e6
    assert stamp >= of(first, "grstats_collector_last_snapshot_timestamp_seconds") + 1.5
    assert abs(time.time() - stamp) < 30
    assert on_disk[0] >= 2
    assert spool_of(last) == on_disk
    assert spool_of(closed) == spool_on_disk(spool)
    assert closed[("grstats_build_info", (("version", __version__),))] == 1


async def test_failover_is_counted_when_the_first_node_is_down(
    group: Group, tmp_path: Path
) -> None:
    """Past a dead first --node the collector fails over once and then takes every snapshot."""
    nodes = (dead_node(), group.agents[0].address, group.agents[1].address)
    run = Collecting(tmp_path / "spool", PollerSettings(nodes, timeout_s=1.5), Limits(count=2))
    try:
        progress = await run.finish()
        samples = await scrape(run.server.port)
    finally:
        run.close()
    assert progress.snapshots == 2
    assert of(samples, "grstats_collector_failovers_total") == 1
    assert of(samples, "grstats_collector_snapshots_total") == 2
    assert of(samples, "grstats_collector_poll_errors_total") == 0


async def test_poll_errors_are_counted_when_every_node_is_down(tmp_path: Path) -> None:
    """With no agent answering, each poll is an error, no snapshot time is set, under the group's label."""
    settings = PollerSettings((dead_node(), dead_node()), timeout_s=0.5, group_label="east")
    run = Collecting(tmp_path / "spool", settings, Limits(duration_s=2.5))
    try:
        during = await run.until(reached("grstats_collector_poll_errors_total", 1, "east"))
        progress = await run.finish()
        samples = await scrape(run.server.port)
    finally:
        run.close()
    assert of(during, "grstats_collector_snapshots_total", "east") == 0
    assert progress.failed_polls == 3  # at 0, 1 and 2 s
    assert of(samples, "grstats_collector_poll_errors_total", "east") == 3
    assert of(samples, "grstats_collector_snapshots_total", "east") == 0
    assert of(samples, "grstats_collector_last_snapshot_timestamp_seconds", "east") == 0
    assert of(samples, "grstats_collector_failovers_total", "east") == progress.failovers == 2
    assert not any(("group_label", DEFAULT_GROUP_LABEL) in labels for _, labels in samples)
    assert spool_of(samples) == (0, 0)


def promtool_check(text: str) -> subprocess.CompletedProcess[str]:
    """``promtool check metrics`` on a scrape's text."""
    return subprocess.run(
        [require("promtool", "prometheus"), "check", "metrics"],
        input=text,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


async def test_promtool_accepts_a_scrape(group: Group, tmp_path: Path) -> None:
    """A real scrape with every series set passes promtool check metrics without a problem."""
    nodes = (dead_node(), group.agents[2].address)
    run = Collecting(tmp_path / "spool", PollerSettings(nodes, timeout_s=1.5), Limits(count=1))
    try:
        await run.finish()
        text = await asyncio.to_thread(scrape_text, run.server.port)
    finally:
        run.close()
    samples = parse(text)
    assert of(samples, "grstats_collector_failovers_total") == 1
    assert of(samples, "grstats_collector_snapshots_total") == 1
    done = promtool_check(text)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout + done.stderr == ""


def test_promtool_would_find_a_problem() -> None:
    """The promtool check can fail: a counter without _total is reported."""
    done = promtool_check("# HELP bad A counter.\n# TYPE bad counter\nbad 1\n")
    assert 'counter metrics should have "_total" suffix' in done.stdout + done.stderr


async def test_the_command_serves_metrics(group: Group, tmp_path: Path) -> None:
    """The collect command with --metrics-listen 127.0.0.1:0 logs where it serves, and counts."""
    spool = tmp_path / "spool"
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "grstats", "collect", "--node", group.agents[0].address),
        *("--spool", str(spool), "--metrics-listen", "127.0.0.1:0", "--log-format", "json"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert process.stderr is not None
        served: dict[str, Any] = {}
        while not served:
            line = await asyncio.wait_for(process.stderr.readline(), 30)
            assert line, "grstats collect exited before serving /metrics"
            event = json.loads(line)
            served = event if event["event"] == "metrics_served" else {}
        host, _, port = served["address"].rpartition(":")
        assert host == "127.0.0.1"

        async def two_snapshots() -> bool:
            return of(await scrape(int(port)), "grstats_collector_snapshots_total") >= 2

        await wait_until_async(two_snapshots, 30, "two snapshots counted on /metrics")
        before = spool_on_disk(spool)  # a snapshot may land between the scrape and ls: either
        samples = await scrape(int(port))
        assert spool_of(samples) in {before, spool_on_disk(spool)}
        assert samples[("grstats_build_info", (("version", __version__),))] == 1
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 0
    with pytest.raises(urllib.error.URLError, match="Connection refused"):  # gone with it
        await asyncio.to_thread(scrape_text, int(port))


def test_an_address_in_use_exits_1_naming_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A --metrics-listen that cannot be bound (in use) exits 1, naming the flag and the value."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        listen = f"127.0.0.1:{taken.getsockname()[1]}"
        done = run_main(
            [
                *("collect", "--node", dead_node()),
                *("--spool", str(tmp_path / "spool"), "--metrics-listen", listen),
            ],
            capsys,
        )
    assert done.returncode == 1
    assert f"grstats: error: --metrics-listen: cannot serve on {listen!r}: " in done.stderr
    assert "Address already in use" in done.stderr


class TestGroupLabel:
    def test_default_is_default(self) -> None:
        """The one group of --node, given no label, is labelled default in the metrics."""
        settings = PollerSettings(("db1:7400",))
        assert (settings.group_label, settings.label) == (None, DEFAULT_GROUP_LABEL)
        assert DEFAULT_GROUP_LABEL == "default"

    @pytest.mark.parametrize("label", ["", "a\nb", " a", "x" * 64, 7])
    def test_bad_label_is_refused(self, label: object) -> None:
        """An empty, padded, too long, unprintable or non-text label is refused, naming it."""
        with pytest.raises(ConfigError, match=r"^group_label: .* is not a group label \(1 to 63"):
            PollerSettings(("db1:7400",), group_label=label)  # type: ignore[arg-type]

    def test_series_exist_from_the_start(self, tmp_path: Path) -> None:
        """A group's series are there at 0 before its first poll, so rate() sees the first one."""
        metrics = CollectorMetrics(tmp_path)
        metrics.group("west")
        samples = parse(metrics_text(metrics))
        for name in (
            "grstats_collector_snapshots_total",
            "grstats_collector_failovers_total",
            "grstats_collector_poll_errors_total",
            "grstats_collector_last_snapshot_timestamp_seconds",
        ):
            assert of(samples, name, "west") == 0


def metrics_text(metrics: CollectorMetrics) -> str:
    """The text a scrape of ``metrics`` would answer, without HTTP."""
    from prometheus_client import generate_latest  # noqa: PLC0415

    return generate_latest(metrics.registry).decode()


class TestUsage:
    def test_counts_segments_only(self, tmp_path: Path) -> None:
        """Open and sealed segments count; the lock, the last-segment file and others do not."""
        (tmp_path / "notes.txt").write_text("not a segment", encoding="utf-8")
        with SpoolWriter(tmp_path, SpoolSettings(segment_bytes=1024)) as writer:
            for index in range(3):
                writer.append({"schema": 1, "n": index, "pad": "x" * 600})
            assert writer.current is not None  # one segment still open
            found = usage(tmp_path)
            assert (found.segments, found.bytes) == spool_on_disk(tmp_path)
            assert found.segments == len(sealed_segments(tmp_path)) + 1
        after = usage(tmp_path)
        assert (after.segments, after.bytes) == spool_on_disk(tmp_path)
        assert after.segments == len(sealed_segments(tmp_path)) >= 2
        files = sum(p.stat().st_size for p in tmp_path.iterdir())
        assert after.bytes < files  # .lock, .last-segment and notes.txt are left out

    def test_a_missing_spool_holds_nothing(self, tmp_path: Path) -> None:
        """A spool directory that is not there measures 0 segments and 0 bytes."""
        found = usage(tmp_path / "nowhere")
        assert (found.segments, found.bytes) == (0, 0)

    def test_measuring_while_segments_are_sealed(self, tmp_path: Path) -> None:
        """usage() never fails while a writer seals segment after segment (renames under it)."""
        stop = threading.Event()
        errors: list[BaseException] = []
        measured: list[int] = []

        def measure() -> None:
            while not stop.is_set():
                try:
                    measured.append(usage(tmp_path).segments)
                except BaseException as exc:  # noqa: BLE001 (any failure is the test's finding)
                    errors.append(exc)

        thread = threading.Thread(target=measure)
        thread.start()
        try:
            with SpoolWriter(tmp_path, SpoolSettings(segment_bytes=1024)) as writer:
                for index in range(100):
                    writer.append({"schema": 1, "n": index, "pad": "x" * 1100})
        finally:
            stop.set()
            thread.join()
        assert errors == []
        assert len(measured) > 10
        assert max(measured) <= 100
        assert usage(tmp_path).segments == 100
