"""Logging: structlog JSON lines in production, readable console lines on a terminal.

:func:`configure_logging` is the only ``structlog.configure`` call in grstats; a command calls
it once, before it creates loggers. :func:`get_logger` returns a logger with ``member_id``
bound: the agent is given that logger (not ``bind_contextvars``, whose context follows task
creation and so mixes up several agents in one event loop).

Events are snake_case past-tense facts with stable keys::

    log.info("gossip_round_completed", peers=3, merged=2, rtt_ms=4.1)

A JSON line carries ``event``, ``level``, ``timestamp`` (ISO 8601, UTC) and the bound and
given keys; a logged exception adds ``exception`` (the formatted traceback). Records of the
standard library's ``logging`` (grpc, aiomysql, asyncio) go through the same renderer, with
``logger`` naming their source, so a production log is JSON lines only. Tests read logs
as event dicts with :func:`structlog.testing.capture_logs`.

Under systemd, when the stream is the journal's (``JOURNAL_STREAM`` names its device and
inode, systemd.exec(5)), every line starts with its syslog priority as ``<N>`` (sd-daemon(3):
``<7>`` debug, ``<6>`` info, ``<4>`` warning, ``<3>`` error), which journald reads and strips,
so that ``journalctl -p warning`` shows the warnings and errors. Each line of a multi-line
event (a console traceback) carries it. Elsewhere lines are left as they are.

gRPC's C core writes lines of its own straight to standard error (``I1124 06:21:27.872474
... ssl_transport_security.cc:2563] Handshake failed ...``), past structlog. It reads
``GRPC_VERBOSITY`` once, when ``grpc`` is imported, so the ``grstats`` command calls
:func:`quiet_grpc_core` (:mod:`grstats.core.grpc_verbosity`, light enough to come before the
command is known) before it imports anything that imports ``grpc``: unless the user set
``GRPC_VERBOSITY``, those lines are off (``NONE``). What they would say, grstats logs in its own
words: a peer that cannot be dialled (``peer_exchange_failed`` with gRPC's reason, the TLS
handshake's included, and a TLS mistake named once: ``tls_mismatch``,
:mod:`grstats.agent.tls_watch`), a client's failed call (its one-line error).
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import sys
import time
from typing import TYPE_CHECKING, Any, TextIO


def _import_structlog_without_rich() -> None:
    """Import structlog with Rich hidden from it, unless either is already imported.

    ``structlog.dev`` imports Rich, when installed, at import, for the console's tracebacks
    (``ConsoleRenderer``'s default exception formatter): some 3.5 MB of an agent's 60, which
    JSON lines (every service, every log file) never use. :func:`configure_logging` imports
    ``structlog.dev`` again with Rich when a console is asked for (:func:`_console_renderer`),
    so the console renders exceptions as it always did.
    """
    if "structlog" in sys.modules or "rich" in sys.modules:
        return
    sys.modules["rich"] = None  # type: ignore[assignment]  # `import rich` raises ImportError
    try:
        importlib.import_module("structlog")
    finally:
        del sys.modules["rich"]


_import_structlog_without_rich()

import structlog  # noqa: E402  (imported just above, without Rich)

from grstats.core.errors import ConfigError  # noqa: E402

# Kept where they were, for their callers: the explicit aliases re-export them (PEP 484).
from grstats.core.grpc_verbosity import GRPC_VERBOSITY as GRPC_VERBOSITY  # noqa: E402, PLC0414
from grstats.core.grpc_verbosity import quiet_grpc_core as quiet_grpc_core  # noqa: E402, PLC0414

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable, Mapping

    from structlog.typing import FilteringBoundLogger, Processor, WrappedLogger

#: Output formats: ``auto`` is ``console`` when the stream is a terminal, else ``json``.
LOG_FORMATS = ("auto", "json", "console")
#: Levels, lowest first; a logger drops events below the configured one.
LOG_LEVELS = ("debug", "info", "warning", "error")

_LEVEL_NUMBERS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}

#: Syslog priorities (sd-daemon(3) SD_DEBUG ... SD_CRIT) by the method name a processor is
#: given: structlog's methods, and the standard library's level names in lower case.
PRIORITIES = {
    "debug": 7,
    "info": 6,
    "msg": 6,
    "warning": 4,
    "warn": 4,
    "error": 3,
    "exception": 3,
    "critical": 2,
    "fatal": 2,
}


def configure_logging(
    format: str = "auto",  # noqa: A002  (the name the CLI flag and the config key share)
    level: str = "info",
    stream: TextIO | None = None,
    environ: Mapping[str, str] | None = None,
) -> None:
    """Configure structlog for the whole process; call once, before creating loggers.

    Args:
        format: ``json`` (one JSON object per line), ``console`` (aligned, readable text,
            coloured on a terminal) or ``auto`` (``console`` when ``stream`` is a terminal,
            else ``json``).
        level: the lowest level written: ``debug``, ``info``, ``warning`` or ``error``.
        stream: where lines go (default: standard error, looked up at call time, so that
            standard output stays free for a command's results).
        environ: the environment whose ``JOURNAL_STREAM`` tells whether ``stream`` is the
            journal's (default: the process's).

    Raises:
        ConfigError: ``format`` or ``level`` is not one of the accepted values (the message
            names ``log_format`` or ``log_level``, the agent's config keys).
    """
    if format not in LOG_FORMATS:
        raise ConfigError(f"log_format: {format!r} is not {', '.join(LOG_FORMATS)}")
    if level not in _LEVEL_NUMBERS:
        raise ConfigError(f"log_level: {level!r} is not {', '.join(LOG_LEVELS)}")
    out = sys.stderr if stream is None else stream
    terminal = _is_terminal(out)
    console = format == "console" or (format == "auto" and terminal)
    processors: list[Processor] = [
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    if console:
        # ConsoleRenderer formats exceptions itself (and warns if format_exc_info ran first).
        processors += [
            structlog.processors.StackInfoRenderer(),
            structlog.dev.set_exc_info,
            _console_renderer(colors=terminal),
        ]
    else:
        processors += [
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ]
    if is_journal(out, environ):
        processors.append(add_syslog_priority)
    _route_standard_logging(processors, out, _LEVEL_NUMBERS[level])
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(_LEVEL_NUMBERS[level]),
        logger_factory=structlog.WriteLoggerFactory(file=out),
        cache_logger_on_first_use=True,
    )


def _console_renderer(*, colors: bool) -> structlog.dev.ConsoleRenderer:
    """Return structlog's ``ConsoleRenderer``, with Rich's tracebacks when Rich is installed.

    ``structlog.dev`` was imported without Rich (:func:`_import_structlog_without_rich`):
    it is imported again, now with Rich, the first time a console is configured.
    """
    without_rich = getattr(structlog.dev, "rich", None) is None
    if without_rich and importlib.util.find_spec("rich") is not None:
        importlib.reload(structlog.dev)
    return structlog.dev.ConsoleRenderer(colors=colors)


class _StandardHandler(logging.StreamHandler[TextIO]):
    """The handler :func:`configure_logging` puts on the root logger."""


def _route_standard_logging(processors: list[Processor], out: TextIO, level: int) -> None:
    """Send the standard library's log records through ``processors`` to ``out``.

    ``processors`` is the pre-chain's two (level, time), the rest, then the renderer and,
    for the journal, the priority prefix after it.
    """
    split = processors.index(add_syslog_priority) if add_syslog_priority in processors else None
    *chain, renderer = processors[:split]
    after = processors[split:] if split is not None else []
    handler = _StandardHandler(out)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[structlog.stdlib.add_logger_name, *chain[:2]],
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                *chain[2:],
                renderer,
                *after,
            ],
        )
    )
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _StandardHandler)]:
        root.removeHandler(old)  # configured again: ours is replaced, others' handlers stay
    root.addHandler(handler)
    root.setLevel(level)


def get_logger(member_id: str | None = None, **bound: Any) -> FilteringBoundLogger:
    """Return a logger with ``member_id`` (when given) and ``bound`` bound to every event.

    The logger is lazy: it takes the configuration in force when it first logs, so it may be
    created before :func:`configure_logging` runs.
    """
    if member_id is not None:
        bound["member_id"] = member_id
    logger: FilteringBoundLogger = structlog.get_logger(**bound)
    return logger


def is_journal(stream: TextIO, environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``stream`` is systemd's journal stream, by ``JOURNAL_STREAM`` (``device:inode``).

    systemd.exec(5) sets it for a service whose standard output or error goes to the journal;
    the file behind ``stream`` must be that one, so that a child whose output was redirected
    elsewhere (a pipe, a file) does not write priority prefixes there.
    """
    value = (os.environ if environ is None else environ).get("JOURNAL_STREAM", "")
    device, _, inode = value.partition(":")
    if not (device.isdecimal() and inode.isdecimal()):
        return False
    try:
        found = os.fstat(stream.fileno())
    except (AttributeError, OSError, ValueError):  # no file behind it (io.UnsupportedOperation)
        return False
    return (found.st_dev, found.st_ino) == (int(device), int(inode))


def add_syslog_priority(_logger: WrappedLogger, method_name: str, rendered: Any) -> str:
    """Prefix each line of a rendered event with its syslog priority, ``<4>`` for a warning.

    A processor that runs after the renderer: it is given the rendered line, not the event
    dict. An unknown method name gets ``<6>`` (info), journald's default.
    """
    prefix = f"<{PRIORITIES.get(method_name, 6)}>"
    text = rendered if isinstance(rendered, str) else str(rendered)
    # A console traceback ends with a newline: the line it would leave is not written.
    return prefix + text.rstrip("\n").replace("\n", "\n" + prefix)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed file
        return False


class ThrottledWarning:
    """Logs one warning event per key: the first, then at most one per ``every_s`` seconds.

    Each logged line carries ``unlogged``, how many times the event happened for that key
    since the previous line, so a flood of refusals costs a few lines and loses no count.
    Called by the agent's request handlers, as often as peers and clients misbehave; keys
    must come from a bounded set (a reason, a certificate's identity), never from what a
    peer writes.
    """

    def __init__(
        self,
        log: FilteringBoundLogger,
        event: str,
        every_s: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._log = log
        self._event = event
        self._every_s = every_s
        self._clock = clock
        self._logged_at: dict[Hashable, float] = {}  # key -> when last logged
        self._unlogged: dict[Hashable, int] = {}  # key -> events since then, not logged

    def __call__(self, key: Hashable, **fields: Any) -> bool:
        """Note one event for ``key``; log it unless one was logged within ``every_s``."""
        now = self._clock()
        last = self._logged_at.get(key)
        if last is not None and now - last < self._every_s:
            self._unlogged[key] = self._unlogged.get(key, 0) + 1
            return False
        self._logged_at[key] = now
        self._log.warning(self._event, **fields, unlogged=self._unlogged.pop(key, 0))
        return True
