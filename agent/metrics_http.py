"""``/metrics`` over HTTP: the agent's exposition, rendered once per build and served from memory.

Rendering the text was most of a scrape's cost, so :func:`render_text` writes the text
format itself, several times faster than prometheus-client (figures in docs/benchmarks.md,
"Scrapes"), and :class:`Exposition` renders it once per build of the members' series
(:class:`~grstats.agent.metrics.TablesCollector`), on the agent's loop with the build, gzips it
there too, and serves the same bytes until the next build. The agent's own counters in it are
thus as old as the build (at most ``REBUILD_AFTER_S``): counters only grow, and the next scrape
has them.

What is served: Prometheus' text format 0.0.4 (the format every Prometheus reads; it is served
whatever the ``Accept`` header asks for, and ``name[]`` filters are not supported), without
prometheus-client's ``*_created`` series, which the text format turns into one more gauge per
counter for nothing. Any path serves it (``/metrics`` by convention), as prometheus-client's
own server does. The server is prometheus-client's thread-per-request WSGI server, in a daemon
thread.
"""

from __future__ import annotations

import gzip
import socket
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import utils
from prometheus_client.exposition import ThreadingWSGIServer

from grstats.agent.member_probe import PROBE_PATHS
from grstats.core.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from wsgiref.types import StartResponse, WSGIEnvironment

    from prometheus_client.core import Metric

    from grstats.agent.member_probe import ProbeAnswer
    from grstats.agent.metrics import AgentMetrics, TablesCollector

    #: Answers a probe's path on the agent's loop (None: not a probe's path).
    Probe = Callable[[str], ProbeAnswer | None]

#: What is served: Prometheus' text format 0.0.4 (every name grstats serves is a legacy name).
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
#: Sample suffixes prometheus-client adds to counters and histograms that are not served.
_CREATED = "_created"
_WITH_CREATED = ("counter", "histogram", "summary")
#: A sample's value as Go formats floats (prometheus-client's own function, untyped there).
_number = cast("Callable[[float], str]", utils.floatToGoString)
#: Family types the text format names otherwise (prometheus-client's generate_latest).
_TEXT_TYPES = {"stateset": "gauge", "gaugehistogram": "histogram", "unknown": "untyped"}


#: How long a probe's answer is served again before it is judged anew, in seconds.
PROBE_FRESH_S = 0.5
#: While a scraper came within this long, the agent renders the exposition ahead, mid-period.
PREPARE_WHILE_SCRAPED_S = 300.0


@dataclass(frozen=True, slots=True)
class _Prepared:
    """A rendering made ahead of the scrapes (:meth:`Exposition.prepare`), and how long it holds."""

    at: float  # time.monotonic() when made
    valid_s: float
    rendered: _Rendered


@dataclass(frozen=True, slots=True)
class _Rendered:
    """One rendering: the build of the members' series it shows, its text, gzipped too."""

    build: object
    plain: bytes
    gzipped: bytes


class Exposition:
    """The text ``/metrics`` serves, rendered once per build of ``metrics``' members' series.

    A build and its rendering happen together on the agent's loop, in one call: rendering in
    the HTTP thread instead, while the loop runs a period, was slower (it shares the
    interpreter lock with the loop; docs/benchmarks.md, "Scrapes"). A scrape that finds the
    last build fresh (:meth:`TablesCollector.kept
    <grstats.agent.metrics.TablesCollector.kept>`) gets its bytes without waiting for the loop.
    :meth:`render` may be called from several threads at once (one per scrape).
    """

    def __init__(self, metrics: AgentMetrics, probe: Probe | None = None) -> None:
        self.renders = 0  #: how many times the text was rendered (for tests and benchmarks)
        self._metrics = metrics
        self._probe = probe
        self._probes: dict[str, tuple[float, bytes, str]] = {}
        self._lock = threading.Lock()
        self._rendered: _Rendered | None = None
        self._prepared: _Prepared | None = None
        self._last_scrape: float | None = None
        metrics.exposition = self

    def prepare(self, valid_s: float) -> None:
        """Render ahead, on the agent's loop, while scrapes come: served for ``valid_s``.

        The agent calls it once a period, mid-period, when the period's burst of gossip is
        over: a scrape then finds bytes made less than ``valid_s`` ago (at most that old) and
        never waits for the loop, whatever changed since. Nothing is rendered while no scraper
        came for :data:`PREPARE_WHILE_SCRAPED_S`.
        """
        tables = self._metrics.tables
        with self._lock:
            last = self._last_scrape
        if tables is None or last is None or time.monotonic() - last > PREPARE_WHILE_SCRAPED_S:
            return
        rendered = self._render(tables)
        with self._lock:
            self._prepared = _Prepared(time.monotonic(), valid_s, rendered)

    def render(self, *, gzipped: bool = False) -> bytes:
        """The exposition now: rendered ahead, or again when the members' series were rebuilt."""
        now = time.monotonic()
        with self._lock:
            self._last_scrape = now
            prepared = self._prepared
        if prepared is not None and now - prepared.at < prepared.valid_s:
            ahead = prepared.rendered
            return ahead.gzipped if gzipped else ahead.plain
        tables = self._metrics.tables
        if tables is None:  # not watched: the agent's own figures, rendered at each scrape
            plain = render_text(self._metrics.registry.collect())
            return gzip.compress(plain, compresslevel=6) if gzipped else plain
        rendered = self._fresh(tables)
        if rendered is None:
            rendered = tables.on_loop(lambda: self._fresh(tables) or self._render(tables))
        return rendered.gzipped if gzipped else rendered.plain

    def _fresh(self, tables: TablesCollector) -> _Rendered | None:
        """The last rendering, while the build it shows is the kept one."""
        kept = tables.kept()
        with self._lock:
            rendered = self._rendered
        return rendered if rendered is not None and rendered.build is kept else None

    def _render(self, tables: TablesCollector) -> _Rendered:
        """Build if due and render (on the agent's loop)."""
        build = tables.families()
        plain = render_text(self._metrics.registry.collect())
        rendered = _Rendered(build, plain, gzip.compress(plain, compresslevel=6))
        with self._lock:
            self._rendered = rendered
            self.renders += 1
        return rendered

    def app(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        """The WSGI application: the probes at their paths, the exposition on every other one."""
        path = environ.get("PATH_INFO", "")
        if self._probe is not None and path in PROBE_PATHS:
            return self._answer_probe(self._probe, path, environ, start_response)
        gzipped = "gzip" in environ.get("HTTP_ACCEPT_ENCODING", "")
        body = self.render(gzipped=gzipped)
        headers = [("Content-Type", CONTENT_TYPE), ("Content-Length", str(len(body)))]
        if gzipped:
            headers.append(("Content-Encoding", "gzip"))
        start_response("200 OK", headers)
        return [body] if environ.get("REQUEST_METHOD") != "HEAD" else []

    def _answer_probe(
        self, probe: Probe, path: str, environ: WSGIEnvironment, start_response: StartResponse
    ) -> Iterable[bytes]:
        """``/member/health`` or ``/member/ready``, judged on the agent's loop, as JSON.

        An answer is judged at most once per :data:`PROBE_FRESH_S` and path, so that probes
        sent in a flood cost the loop no more than one judgement each time.
        """
        now = time.monotonic()
        with self._lock:
            kept = self._probes.get(path)
        if kept is not None and now - kept[0] < PROBE_FRESH_S:
            body, status = kept[1], kept[2]
        else:
            body, status = self._judge(probe, path)
            with self._lock:
                self._probes[path] = (now, body, status)
        headers = [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
        start_response(status, headers)
        return [body] if environ.get("REQUEST_METHOD") != "HEAD" else []

    def _judge(self, probe: Probe, path: str) -> tuple[bytes, str]:
        """The probe's body and status line now; 503 while the loop cannot answer."""
        tables = self._metrics.tables
        try:
            answer = tables.on_loop(lambda: probe(path)) if tables is not None else None
        except TimeoutError:
            answer = None
        if answer is None:  # the agent is not serving yet, or its loop did not answer in time
            return b'{"ok":false,"reason":"not_known"}\n', "503 Service Unavailable"
        return answer.json_bytes(), answer.status


def render_text(families: Iterable[Metric]) -> bytes:
    """Prometheus' text format 0.0.4 of ``families``, without their ``*_created`` samples.

    Byte for byte what prometheus-client's ``generate_latest`` writes for grstats' families
    (names valid in the text format, no OpenMetrics-only samples), faster: its escaping checks
    every character of every label name.
    """
    out: list[str] = []
    for family in families:
        name, kind = family.name, _TEXT_TYPES.get(family.type, family.type)
        if kind == "counter":
            name += "_total"
        elif kind == "info":
            name, kind = f"{name}_info", "gauge"
        text = family.documentation.replace("\\", r"\\").replace("\n", r"\n")
        out.append(f"# HELP {name} {text}\n# TYPE {name} {kind}\n")
        skip_created = family.type in _WITH_CREATED
        for sample in family.samples:
            if skip_created and sample.name.endswith(_CREATED):
                continue
            labels = ",".join(
                f'{key}="{_escape(value)}"' for key, value in sorted(sample.labels.items())
            )
            stamp = "" if sample.timestamp is None else f" {int(float(sample.timestamp) * 1000):d}"
            out.append(
                f"{sample.name}{{{labels}}} {_number(sample.value)}{stamp}\n"
                if labels
                else f"{sample.name} {_number(sample.value)}{stamp}\n"
            )
    return "".join(out).encode("utf-8")


def _escape(value: str) -> str:
    """A label value as the text format quotes it."""
    if "\\" in value or "\n" in value or '"' in value:
        return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")
    return value


class _QuietHandler(WSGIRequestHandler):
    """Logs no request (the agent logs what matters as structured events)."""

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002  (the base's name)
        """Log nothing."""


def serve_metrics(
    metrics: AgentMetrics, host: str, port: int, probe: Probe | None = None
) -> tuple[ThreadingWSGIServer, threading.Thread, int]:
    """Start the server of ``/metrics`` and ``probe``'s paths; return it, its thread, its port."""

    class Server(ThreadingWSGIServer):
        """The server, of the address family ``host`` needs (IPv4 or IPv6)."""

    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, _, _, _, address = infos[0]
    Server.address_family = family
    exposition = Exposition(metrics, probe)
    server = make_server(str(address[0]), port, exposition.app, Server, handler_class=_QuietHandler)
    thread = threading.Thread(target=server.serve_forever, name="grstats-metrics", daemon=True)
    thread.start()
    return server, thread, int(server.server_port)


def start_metrics_server(
    metrics: AgentMetrics, listen: str, probe: Probe | None = None
) -> tuple[ThreadingWSGIServer, str]:
    """Serve ``/metrics`` (and the probes) at ``listen`` (``host:port``); return server, address.

    Raises:
        ConfigError: the address cannot be bound (the message names ``metrics_listen``).
    """
    host, _, port = listen.rpartition(":")
    try:
        server, _, bound = serve_metrics(metrics, host.strip("[]"), int(port), probe)
    except OSError as exc:
        raise ConfigError(f"metrics_listen: cannot bind {listen}: {exc}") from exc
    return server, f"{host}:{bound}"
