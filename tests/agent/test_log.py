"""configure_logging and get_logger: JSON lines, console text, levels, and captured event dicts."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TextIO

import pytest
import structlog
from structlog.testing import capture_logs

from grstats.cli import main
from grstats.cli.demo import free_ports
from grstats.core.errors import ConfigError
from grstats.core.log import ThrottledWarning, configure_logging, get_logger, is_journal

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


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


def journal_of(stream: TextIO) -> dict[str, str]:
    """An environment whose JOURNAL_STREAM names the file behind ``stream``, as systemd sets it."""
    found = os.fstat(stream.fileno())
    return {"JOURNAL_STREAM": f"{found.st_dev}:{found.st_ino}"}


def keep_grpc_verbosity(patch: pytest.MonkeyPatch) -> None:
    """Have ``patch`` restore GRPC_VERBOSITY, which main() sets when grpc is not imported yet."""
    if "GRPC_VERBOSITY" in os.environ:
        patch.setenv("GRPC_VERBOSITY", os.environ["GRPC_VERBOSITY"])
    else:
        patch.delenv("GRPC_VERBOSITY", raising=False)


def log_every_level() -> None:
    """Log one event per level, an exception, and two standard-library records."""
    log = get_logger(member_id="m1")
    log.debug("registry_loaded")
    log.info("agent_started")
    log.warning("peer_exchange_failed")
    log.error("registry_flush_failed")
    try:
        raise RuntimeError("boom")  # noqa: TRY301 (the test needs a live exception)
    except RuntimeError:
        log.exception("agent_crashed")
    logging.getLogger("grpc").warning("channel closed")
    logging.getLogger("grpc").critical("channel lost")


#: The priority journald should read for each line of log_every_level.
PRIORITY_OF = {
    "registry_loaded": "<7>",
    "agent_started": "<6>",
    "peer_exchange_failed": "<4>",
    "registry_flush_failed": "<3>",
    "agent_crashed": "<3>",
    "channel closed": "<4>",
    "channel lost": "<2>",
}


class TestJournal:
    @pytest.fixture(name="journal")
    def _journal(self, tmp_path: Path) -> Iterator[TextIO]:
        """A real file standing for the journal's stream socket."""
        with (tmp_path / "journal").open("w+", encoding="utf-8") as stream:
            yield stream

    def read(self, stream: TextIO) -> list[str]:
        """The lines written to ``stream`` so far."""
        stream.flush()
        stream.seek(0)
        return stream.read().splitlines()

    def test_json_lines_carry_the_syslog_priority(self, journal: TextIO) -> None:
        """On the journal's stream each JSON line starts with <N> of its level, then the JSON."""
        configure_logging("json", "debug", stream=journal, environ=journal_of(journal))
        log_every_level()
        found = self.read(journal)
        assert len(found) == len(PRIORITY_OF)
        for line in found:
            prefix, text = line[:3], line[3:]
            event = json.loads(text)
            assert prefix == PRIORITY_OF[event["event"]], line
        assert "RuntimeError: boom" in json.loads(found[4][3:])["exception"]

    def test_every_console_line_carries_the_priority(self, journal: TextIO) -> None:
        """Console lines, and each line of a traceback, start with the event's priority."""
        configure_logging("console", "debug", stream=journal, environ=journal_of(journal))
        log_every_level()
        # Without colours (older structlog and rich colour the traceback even in a file).
        found = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in self.read(journal)]
        assert all(re.match(r"<[2-7]>", line) for line in found), found
        crashed = next(i for i, line in enumerate(found) if "agent_crashed" in line)
        end = next(i for i, line in enumerate(found) if "] channel closed" in line)
        traceback = found[crashed:end]
        assert len(traceback) > 3  # the event's line and its traceback's
        assert {line[:3] for line in traceback} == {"<3>"}
        assert any("RuntimeError: boom" in line for line in traceback)
        for event, prefix in PRIORITY_OF.items():
            (line,) = [line for line in found if f"] {event} " in line]
            assert line.startswith(prefix), line

    @pytest.mark.parametrize(
        "environ",
        [
            pytest.param({}, id="no-JOURNAL_STREAM"),
            pytest.param({"JOURNAL_STREAM": ""}, id="empty"),
            pytest.param({"JOURNAL_STREAM": "not-a-device"}, id="not-device-inode"),
            pytest.param({"JOURNAL_STREAM": "1:2"}, id="another-file"),
        ],
    )
    def test_no_prefix_off_the_journal(self, journal: TextIO, environ: dict[str, str]) -> None:
        """Without JOURNAL_STREAM, or when it names another file, lines are left as they are."""
        configure_logging("json", "debug", stream=journal, environ=environ)
        log_every_level()
        found = self.read(journal)
        assert len(found) == len(PRIORITY_OF)
        assert all(line.startswith("{") for line in found), found

    def test_a_stream_without_a_file_is_not_the_journal(self, sio: io.StringIO) -> None:
        """A stream with no file descriptor is never taken for the journal."""
        assert not is_journal(sio, {"JOURNAL_STREAM": "1:2"})
        configure_logging("json", stream=sio, environ={"JOURNAL_STREAM": "1:2"})
        get_logger().warning("peer_exchange_failed")
        assert lines(sio)[0].startswith("{")

    def test_the_process_environment_is_read_by_default(
        self, journal: TextIO, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Without environ, configure_logging reads JOURNAL_STREAM from the process."""
        monkeypatch.setenv("JOURNAL_STREAM", journal_of(journal)["JOURNAL_STREAM"])
        configure_logging("json", stream=journal)
        get_logger().warning("peer_exchange_failed")
        assert self.read(journal)[0].startswith("<4>{")

    def test_a_command_under_systemd(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """Grstats collect (in-process) writing to the journal's stream prefixes <6> and <4>."""
        journal = tmp_path / "journal"
        dead = f"127.0.0.1:{free_ports(1)[0]}"
        command = ["collect", "--node", dead, "--spool", str(tmp_path / "spool")]
        command += ["--duration", "1.5", "--timeout", "0.5", "--log-format", "json"]
        with journal.open("w", encoding="utf-8") as stream:
            monkeypatch.setenv("JOURNAL_STREAM", journal_of(stream)["JOURNAL_STREAM"])
            monkeypatch.setattr(sys, "stderr", stream)
            monkeypatch.setattr(sys, "stdout", io.StringIO())
            keep_grpc_verbosity(monkeypatch)
            assert main(command) == 0
        found = journal.read_text(encoding="utf-8").splitlines()
        events = {json.loads(line[3:])["event"]: line[:3] for line in found}
        assert events["collector_started"] == "<6>"
        assert events["no_agent_answered"] == "<4>"
        assert events["collector_stopped"] == "<6>"
        assert {line[:3] for line in found} == {"<6>", "<4>"}

    def test_a_command_refusing_its_config_says_so_at_error_priority(self, tmp_path: Path) -> None:
        """The one-line error of a refused config reaches the journal as <3>, off it unprefixed."""
        config = tmp_path / "agent.toml"
        config.write_text('source = "nowhere"\n', encoding="utf-8")
        lines = []
        for under_systemd in (True, False):
            with (
                (tmp_path / "stderr").open("w", encoding="utf-8") as stream,
                pytest.MonkeyPatch.context() as patch,
            ):
                patch.delenv("JOURNAL_STREAM", raising=False)
                if under_systemd:
                    patch.setenv("JOURNAL_STREAM", journal_of(stream)["JOURNAL_STREAM"])
                patch.setattr(sys, "stderr", stream)
                keep_grpc_verbosity(patch)
                assert main(["agent", "--config", str(config)]) == 2
            lines.append((tmp_path / "stderr").read_text(encoding="utf-8"))
        assert lines[0].startswith("<3>grstats: error: ")
        assert "nowhere" in lines[0]
        assert lines[1] == lines[0].removeprefix("<3>")
