"""configure_logging and get_logger: JSON lines, console text, levels, and captured event dicts."""

from __future__ import annotations

import io
import json
import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pytest
import structlog
from structlog.testing import capture_logs

from grstats.agent.errors import ConfigError
from grstats.agent.log import ThrottledWarning, configure_logging, get_logger

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture(autouse=True)
def _reset_structlog() -> Iterator[None]:
    """Undo each test's configure_logging, so that tests do not leak configuration."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    structlog.reset_defaults()
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.fixture(name="sio")
def _sio() -> io.StringIO:
    """A stream that is not a terminal."""
    return io.StringIO()


class Terminal(io.StringIO):
    """A StringIO that says it is a terminal."""

    def isatty(self) -> bool:
        """Claim to be a terminal."""
        return True


def lines(stream: io.StringIO) -> list[str]:
    """The lines written to ``stream``."""
    return stream.getvalue().splitlines()


class TestJson:
    def test_one_object_per_line(self, sio: io.StringIO) -> None:
        """Each event is one JSON object with event, level, an ISO UTC timestamp and its keys."""
        configure_logging("json", stream=sio)
        log = get_logger(member_id="m1")
        log.info("source_read", rows=3)
        log.warning("peer_exchange_failed", peer="127.0.0.1:7401")
        first, second = (json.loads(line) for line in lines(sio))
        assert first["event"] == "source_read"
        assert (first["level"], first["member_id"], first["rows"]) == ("info", "m1", 3)
        assert (second["level"], second["peer"]) == ("warning", "127.0.0.1:7401")
        stamp = datetime.fromisoformat(first["timestamp"])
        assert stamp.utcoffset() == UTC.utcoffset(None)
        assert abs((datetime.now(UTC) - stamp).total_seconds()) < 60

    def test_no_member_id_unless_given(self, sio: io.StringIO) -> None:
        """A logger made without member_id has none; other bound keys are kept."""
        configure_logging("json", stream=sio)
        get_logger(component="cli").info("config_loaded")
        (event,) = (json.loads(line) for line in lines(sio))
        assert "member_id" not in event
        assert event["component"] == "cli"

    def test_auto_is_json_off_a_terminal(self, sio: io.StringIO) -> None:
        """The auto format writes JSON when the stream is not a terminal."""
        configure_logging(stream=sio)
        get_logger().info("agent_started")
        assert json.loads(lines(sio)[0])["event"] == "agent_started"

    def test_level_filters(self, sio: io.StringIO) -> None:
        """Events below the configured level are dropped."""
        configure_logging("json", level="warning", stream=sio)
        log = get_logger()
        log.info("source_read")
        log.error("registry_flush_failed")
        assert [json.loads(line)["event"] for line in lines(sio)] == ["registry_flush_failed"]

    def test_exception_is_formatted(self, sio: io.StringIO) -> None:
        """A logged exception adds its traceback as text, still on one JSON line."""
        configure_logging("json", stream=sio)
        try:
            raise RuntimeError("boom")  # noqa: TRY301 (the test needs a live exception)
        except RuntimeError:
            get_logger(member_id="m1").exception("agent_crashed")
        (event,) = (json.loads(line) for line in lines(sio))
        assert event["level"] == "error"
        assert "RuntimeError: boom" in event["exception"]

    def test_logger_made_before_configuring(self, sio: io.StringIO) -> None:
        """A logger created before configure_logging uses the configuration in force."""
        log = get_logger(member_id="m1")
        configure_logging("json", stream=sio)
        log.info("agent_started")
        assert json.loads(lines(sio)[0])["member_id"] == "m1"


class TestConsole:
    def test_console_is_readable_text(self, sio: io.StringIO) -> None:
        """The console format writes one readable, non-JSON line per event, without colours."""
        configure_logging("console", stream=sio)
        get_logger(member_id="m1").info("source_read", rows=3)
        (line,) = lines(sio)
        with pytest.raises(json.JSONDecodeError):
            json.loads(line)
        assert "source_read" in line
        assert "member_id=m1" in line
        assert "rows=3" in line
        assert "\x1b[" not in line

    def test_auto_is_console_on_a_terminal(self) -> None:
        """The auto format writes console text when the stream is a terminal."""
        stream = Terminal()
        configure_logging(stream=stream)
        get_logger().info("agent_started")
        assert "agent_started" in stream.getvalue()
        with pytest.raises(json.JSONDecodeError):
            json.loads(lines(stream)[0])


class TestCapture:
    def test_capture_logs_sees_event_dicts(self, sio: io.StringIO) -> None:
        """capture_logs records event dicts, bound keys included, even after configuring."""
        configure_logging("json", stream=sio)
        log = get_logger(member_id="m1")
        with capture_logs() as logs:
            log.warning("peer_exchange_failed", peer="127.0.0.1:7401")
        assert logs == [
            {
                "event": "peer_exchange_failed",
                "log_level": "warning",
                "member_id": "m1",
                "peer": "127.0.0.1:7401",
            }
        ]
        assert sio.getvalue() == ""

    def test_capture_logs_without_configuring(self) -> None:
        """capture_logs works with structlog's defaults too."""
        with capture_logs() as logs:
            get_logger(member_id="m2").info("agent_stopped")
        assert logs == [{"event": "agent_stopped", "log_level": "info", "member_id": "m2"}]


@pytest.mark.parametrize(
    ("log_format", "level", "message"),
    [
        pytest.param("xml", "info", "log_format: 'xml' is not auto, json, console", id="format"),
        pytest.param("json", "trace", "log_level: 'trace' is not debug, info, warning, error", id="level"),
    ],
)  # fmt: skip
def test_bad_setting_names_it(log_format: str, level: str, message: str) -> None:
    """A format or level that does not exist is a ConfigError naming the config key."""
    with pytest.raises(ConfigError) as caught:
        configure_logging(log_format, level)
    assert str(caught.value) == message


class TestStandardLogging:
    def test_library_records_become_json_lines(self, sio: io.StringIO) -> None:
        """A record of the standard library's logging (grpc's, say) is a JSON line naming its logger."""
        configure_logging("json", stream=sio)
        logging.getLogger("grpc._cython.cygrpc").warning("channel %s closed", "db2:7400")
        (line,) = lines(sio)
        record = json.loads(line)
        assert (record["event"], record["level"], record["logger"]) == (
            "channel db2:7400 closed",
            "warning",
            "grpc._cython.cygrpc",
        )
        assert "timestamp" in record

    def test_level_applies_and_reconfiguring_replaces_the_handler(self, sio: io.StringIO) -> None:
        """Records below the level are dropped, and configuring twice writes each record once."""
        configure_logging("json", level="warning", stream=io.StringIO())
        configure_logging("json", level="warning", stream=sio)
        logging.getLogger("aiomysql").info("dropped")
        logging.getLogger("aiomysql").error("kept")
        assert [json.loads(line)["event"] for line in lines(sio)] == ["kept"]


def test_throttled_warning_logs_once_per_interval_per_key_with_the_count_between() -> None:
    """A flood of one event logs its first, then one line per interval carrying the count."""
    now = [100.0]
    with capture_logs() as logs:
        warn = ThrottledWarning(structlog.get_logger(), "refused", 10.0, clock=lambda: now[0])
        assert warn("a", peer="p1")
        assert [warn("a", peer="p1") for _ in range(5)] == [False] * 5
        assert warn("b", peer="p2")  # another key logs at once
        now[0] += 10.0
        assert warn("a", peer="p3")
        assert not warn("a", peer="p3")
    assert [(log["event"], log["peer"], log["unlogged"]) for log in logs] == [
        ("refused", "p1", 0),
        ("refused", "p2", 0),
        ("refused", "p3", 5),
    ]
