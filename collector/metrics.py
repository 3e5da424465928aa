"""The collector's own figures, served at ``/metrics`` by ``grstats collect --metrics-listen``.

Series (Prometheus' text format, prometheus-client's HTTP server in a thread of its own)::

    grstats_build_info{version}                                      1
    grstats_collector_snapshots_total{group_label}                   snapshots appended to the spool
    grstats_collector_failovers_total{group_label}                   moves to the next --node
    grstats_collector_poll_errors_total{group_label}                 polls no agent answered
    grstats_collector_last_snapshot_timestamp_seconds{group_label}   the last snapshot's time
    grstats_collector_spool_bytes                                    bytes, columns files too
    grstats_collector_spool_segments                                 segment files, open and sealed

``group_label`` is the operator's name of a group: the collector's one group of ``--node`` is
``default`` (:data:`~grstats.collector.poller.DEFAULT_GROUP_LABEL`), taken from
:attr:`PollerSettings.label <grstats.collector.poller.PollerSettings.label>`. It stays
``default`` when the agents of that group answer a label of their own, which names its
records: a series keeps its labels for the whole run, and that label may come only after the
first answers (the agents' own ``grstats_group_info{group_name, group_label}`` has it). A
group's series exist from the start, the counters at 0 and the timestamp at 0 until its first
snapshot, so that ``rate()`` sees the first increase and a collector that never collected has
a last snapshot infinitely old. The timestamp is the snapshot's ``collected_at_us``, in
seconds: an alert compares it with ``time()``. The spool's series are measured in the
directory at each scrape (:func:`~grstats.collector.spool.usage`), so they follow what ingest
moves away too.

The collect loop counts through :class:`GroupMetrics` from the event loop; scrapes run in the
HTTP server's thread. prometheus-client's counters and gauges are thread-safe, and the spool is
only read by a scrape.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server
from prometheus_client.core import GaugeMetricFamily

from grstats import __version__
from grstats.collector.spool import usage

if TYPE_CHECKING:
    import threading
    from collections.abc import Iterator
    from pathlib import Path
    from wsgiref.simple_server import WSGIServer

    from prometheus_client.core import Metric

_GROUP = ("group_label",)


class CollectorMetrics:
    """The collector's metrics and the registry ``/metrics`` serves.

    Args:
        spool: the spool directory whose segments are measured at each scrape.
    """

    def __init__(self, spool: Path | str) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        Gauge(
            "grstats_build_info",
            "1, labelled with the version of grstats that runs.",
            ("version",),
            registry=self.registry,
        ).labels(__version__).set(1)
        self._snapshots = Counter(
            "grstats_collector_snapshots",
            "Snapshots of the group's tables appended to the spool.",
            _GROUP,
            registry=self.registry,
        )
        self._failovers = Counter(
            "grstats_collector_failovers",
            "Times the collector moved on from an agent that stopped answering to the next.",
            _GROUP,
            registry=self.registry,
        )
        self._poll_errors = Counter(
            "grstats_collector_poll_errors",
            "Polls that no agent of the group answered (no snapshot taken).",
            _GROUP,
            registry=self.registry,
        )
        self._last_snapshot = Gauge(
            "grstats_collector_last_snapshot_timestamp_seconds",
            "When the last snapshot appended was taken, seconds since the epoch (0: none yet).",
            _GROUP,
            registry=self.registry,
        )
        self.registry.register(SpoolCollector(spool))

    def group(self, label: str) -> GroupMetrics:
        """The figures of the group labelled ``label``; its series appear now, at 0."""
        return GroupMetrics(
            self._snapshots.labels(label),
            self._failovers.labels(label),
            self._poll_errors.labels(label),
            self._last_snapshot.labels(label),
        )


class GroupMetrics:
    """One group's counters; the collect loop calls these after each poll (cheap, non-blocking)."""

    def __init__(
        self, snapshots: Counter, failovers: Counter, poll_errors: Counter, last_snapshot: Gauge
    ) -> None:
        self._snapshots = snapshots
        self._failovers = failovers
        self._poll_errors = poll_errors
        self._last_snapshot = last_snapshot

    def snapshot_written(self, collected_at_s: float) -> None:
        """Count one snapshot appended to the spool, taken at ``collected_at_s``."""
        self._snapshots.inc()
        self._last_snapshot.set(collected_at_s)

    def poll_failed(self) -> None:
        """Count one poll that no agent answered."""
        self._poll_errors.inc()

    def failed_over(self, count: int = 1) -> None:
        """Count ``count`` moves to the next agent."""
        if count > 0:
            self._failovers.inc(count)


class SpoolCollector:
    """A prometheus-client collector of the spool's segments, measured at each scrape."""

    def __init__(self, spool: Path | str) -> None:
        self._spool = spool

    def describe(self) -> list[Metric]:
        """The two gauges, without samples (registering does not measure the spool)."""
        return list(self._families())

    def collect(self) -> Iterator[Metric]:
        """Measure the spool's segments now."""
        found = usage(self._spool)
        size, segments = self._families()
        size.add_metric([], float(found.bytes))
        segments.add_metric([], float(found.segments))
        yield from (size, segments)

    @staticmethod
    def _families() -> tuple[GaugeMetricFamily, GaugeMetricFamily]:
        return (
            GaugeMetricFamily(
                "grstats_collector_spool_bytes",
                "Bytes of the spool's segment files, open and sealed, and of their columns files, "
                "at scrape time.",
            ),
            GaugeMetricFamily(
                "grstats_collector_spool_segments",
                "Segment files in the spool, open and sealed, at scrape time.",
            ),
        )


class MetricsServer:
    """``/metrics`` of one registry over HTTP, served by a daemon thread until :meth:`close`.

    Args:
        registry: what a scrape collects.
        host: the address to bind (a name, an IPv4 address or an IPv6 one without brackets).
        port: the port to bind; 0 picks a free one (:attr:`port` tells which).

    Raises:
        OSError: the address cannot be resolved or bound.
    """

    def __init__(self, registry: CollectorRegistry, host: str, port: int) -> None:
        self._server: WSGIServer
        self._thread: threading.Thread
        self._server, self._thread = start_http_server(port, addr=host, registry=registry)
        self.port = int(self._server.server_port)

    def close(self) -> None:
        """Stop serving and release the port (waits for a scrape in progress)."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
