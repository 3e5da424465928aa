"""The systemd units: systemd-analyze verify, their sandbox, their command lines, their stop.

``systemd-analyze verify`` needs the ExecStart program to exist, so each unit is checked as a
copy whose /opt/grstats/bin/grstats is the grstats this test runs; everything else is the file
as shipped. systemd-analyze is required under CI (CI=true) and skipped elsewhere when missing.
"""

from __future__ import annotations

import datetime as dt
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from grstats.cli.agent import config_from, run_agent
from grstats.cli.collector import metrics_address, settings_from
from grstats.cli.collector import run as run_collect
from grstats.cli.security import client_security
from grstats.cli.spool import run_prune
from grstats.collector.spool import SpoolWriter
from tests.collector.table_log import commit
from tests.deploy.files import (
    DEPLOY,
    INSTALLED_GRSTATS,
    Unit,
    exec_start,
    free_port,
    parse_grstats,
    read_env_file,
    under,
)
from tests.programs import require
from tests.spark.spool import make_record, write_spool
from tests.waiting import wait_until

SYSTEMD = DEPLOY / "systemd"
UNITS = sorted(SYSTEMD.glob("*.service"))
AGENT_UNIT = SYSTEMD / "grstats-agent.service"
COLLECTOR_UNIT = SYSTEMD / "grstats-collector.service"
PRUNE_UNIT = SYSTEMD / "grstats-spool-prune.service"
PRUNE_TIMER = SYSTEMD / "grstats-spool-prune.timer"
#: The units that run until stopped (the prune is a oneshot its timer starts).
DAEMONS = [AGENT_UNIT, COLLECTOR_UNIT]
GRSTATS = Path(sys.executable).parent / "grstats"
#: The highest exposure ``systemd-analyze security`` may give a unit (0 best, 10 worst).
MAX_EXPOSURE = 2.0


def runnable_copy(unit: Path, directory: Path) -> Path:
    """A copy of ``unit`` in ``directory`` whose ExecStart runs the grstats of this test."""
    text = unit.read_text(encoding="utf-8")
    assert INSTALLED_GRSTATS in text
    copy = directory / unit.name
    copy.write_text(text.replace(INSTALLED_GRSTATS, str(GRSTATS)), encoding="utf-8")
    return copy


def verify(unit: Path) -> subprocess.CompletedProcess[str]:
    """Run ``systemd-analyze verify`` on one unit file."""
    program = require("systemd-analyze")
    return subprocess.run(
        [program, "verify", "--man=no", "--recursive-errors=no", str(unit)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_the_units_are_there() -> None:
    """deploy/systemd has the agent's, the collector's and the prune's units, and grstats."""
    assert [unit.name for unit in UNITS] == [
        "grstats-agent.service",
        "grstats-collector.service",
        "grstats-spool-prune.service",
    ]
    assert sorted(path.name for path in SYSTEMD.glob("*.timer")) == [PRUNE_TIMER.name]
    assert GRSTATS.is_file()


@pytest.mark.parametrize("unit", UNITS, ids=lambda path: path.name)
def test_unit_passes_systemd_analyze_verify(unit: Path, tmp_path: Path) -> None:
    """systemd-analyze verify accepts the unit without a warning (it exits 0 on many)."""
    done = verify(runnable_copy(unit, tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout == ""


def test_verify_reports_a_broken_unit(tmp_path: Path) -> None:
    """A misspelt key and a bad time span are what the verify test would catch."""
    copy = runnable_copy(AGENT_UNIT, tmp_path)
    text = copy.read_text(encoding="utf-8")
    text = text.replace("RestartSec=5s", "RestartSec=soon").replace("UMask=", "UMaks=")
    copy.write_text(text, encoding="utf-8")
    done = verify(copy)
    assert "Failed to parse sec value, ignoring: soon" in done.stderr
    assert "Unknown key 'UMaks'" in done.stderr


def test_verify_reports_a_missing_program(tmp_path: Path) -> None:
    """The unit as shipped fails verify where /opt/grstats is not installed: the path counts."""
    if Path(INSTALLED_GRSTATS).exists():
        pytest.skip(f"{INSTALLED_GRSTATS} is installed on this machine")
    copy = tmp_path / AGENT_UNIT.name
    copy.write_bytes(AGENT_UNIT.read_bytes())
    done = verify(copy)
    assert done.returncode != 0
    assert f"Command {INSTALLED_GRSTATS} is not executable" in done.stderr


@pytest.mark.parametrize("unit", UNITS, ids=lambda path: path.name)
def test_unit_is_sandboxed(unit: Path, tmp_path: Path) -> None:
    """The unit runs as grstats in a read-only system, and systemd rates its exposure low."""
    settings = Unit.read(unit)
    assert settings.value("User") == "grstats"
    assert settings.value("Group") == "grstats"
    assert settings.value("StateDirectory").startswith("grstats")
    assert settings.value("ConfigurationDirectory") == "grstats"
    assert settings.value("ProtectSystem") == "strict"
    for key in ("ProtectHome", "PrivateTmp", "NoNewPrivileges", "PrivateDevices"):
        assert settings.value(key) == "yes", key
    assert settings.value("CapabilityBoundingSet") == ""
    assert "@system-service" in settings.values("SystemCallFilter")
    assert re.fullmatch(r"\d+M", settings.value("MemoryMax"))
    if unit in DAEMONS:
        assert set(settings.value("RestrictAddressFamilies").split()) == {
            "AF_INET",
            "AF_INET6",
            "AF_UNIX",
        }
        assert settings.value("Restart") == "on-failure"
        assert settings.seconds("RestartSec") >= 1
        assert int(settings.value("StartLimitBurst", "Unit")) >= 1
        assert settings.seconds("StartLimitIntervalSec", "Unit") > 0
        assert settings.value("WantedBy", "Install") == "multi-user.target"
    else:  # the prune reads and removes files: no network at all
        assert settings.value("Type") == "oneshot"
        assert settings.value("RestrictAddressFamilies") == "AF_UNIX"
        assert settings.value("PrivateNetwork") == "yes"

    program = require("systemd-analyze")
    done = subprocess.run(
        [program, "security", "--offline=yes", "--no-pager", str(runnable_copy(unit, tmp_path))],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    found = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", done.stdout)
    assert found is not None, done.stdout + done.stderr
    assert float(found.group(1)) <= MAX_EXPOSURE, done.stdout


def test_sysusers_makes_the_units_user(tmp_path: Path) -> None:
    """systemd-sysusers makes the units' user from grstats.sysusers, with no login shell."""
    program = require("systemd-sysusers")
    (tmp_path / "etc").mkdir()
    done = subprocess.run(
        [program, f"--root={tmp_path}", str(SYSTEMD / "grstats.sysusers")],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    passwd = (tmp_path / "etc" / "passwd").read_text(encoding="utf-8").splitlines()
    entry = next(line.split(":") for line in passwd if line.startswith("grstats:"))
    assert entry[5] == "/var/lib/grstats"
    assert entry[6].endswith("nologin")
    assert Unit.read(AGENT_UNIT).value("User") == entry[0]


def test_agent_exec_start_runs_the_installed_config(host_root: Path, tmp_path: Path) -> None:
    """The agent unit's command parses with grstats's parser and loads deploy/systemd/agent.toml."""
    words = exec_start(Unit.read(AGENT_UNIT))
    assert words[0] == INSTALLED_GRSTATS
    args = parse_grstats(words[1:])
    assert args.handler is run_agent
    assert args.config == Path("/etc/grstats/agent.toml")
    installed = Path(under(host_root, str(args.config)))  # the host_root fixture installed it
    assert installed.read_text(encoding="utf-8") == under(
        host_root, (SYSTEMD / "agent.toml").read_text(encoding="utf-8")
    )
    args.config = installed
    config = config_from(args)
    assert config.source == "mysql"
    assert config.state_dir == host_root / "var/lib/grstats"
    assert Unit.read(AGENT_UNIT).value("WorkingDirectory") == "/var/lib/grstats"
    assert config.tls is not None
    assert config.tls.require_client_cert
    assert config.token_file is not None
    assert config.metrics_listen == "0.0.0.0:9474"
    assert config.mysql is not None
    assert config.mysql.host == "127.0.0.1"
    assert config.mysql.password_file == host_root / "etc/grstats/mysql-password"
    assert config.mysql.ssl_ca is not None


def test_collector_exec_start_parses_with_its_environment_file(host_root: Path) -> None:
    """The collector unit's command, with collector.env expanded, parses and loads its files."""
    unit = Unit.read(COLLECTOR_UNIT)
    assert unit.value("EnvironmentFile") == "/etc/grstats/collector.env"
    environment = read_env_file(SYSTEMD / "collector.env")
    words = exec_start(unit, environment)
    assert words[0] == INSTALLED_GRSTATS
    args = parse_grstats(words[1:])
    assert args.handler is run_collect
    assert args.node == ["db1.example.net:7400", "db2.example.net:7400", "db3.example.net:7400"]
    assert args.spool == "/var/lib/grstats-collector/spool"
    assert "grstats-collector/spool" in unit.value("StateDirectory").split()
    poller, _, _ = settings_from(args)
    assert poller.interval_s == 1.0
    assert args.metrics_listen == "0.0.0.0:9475"
    assert metrics_address(args) is not None
    args = parse_grstats(under(host_root, " ".join(words[1:])).split())
    security = client_security(args)
    assert security.tls is not None
    assert security.token is not None


def test_prune_timer_and_unit_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    """The timer verifies with its service beside it, runs it hourly, and survives downtime."""
    service = runnable_copy(PRUNE_UNIT, tmp_path)
    timer = tmp_path / PRUNE_TIMER.name
    timer.write_bytes(PRUNE_TIMER.read_bytes())
    program = require("systemd-analyze")
    done = subprocess.run(
        [program, "verify", "--man=no", "--recursive-errors=no", str(service), str(timer)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == done.stdout == ""
    settings = Unit.read(PRUNE_TIMER)
    assert settings.value("OnCalendar", "Timer") == "hourly"
    assert settings.value("Persistent", "Timer") == "true"
    assert settings.value("WantedBy", "Install") == "timers.target"


def prune_words(environment: dict[str, str] | None = None) -> list[str]:
    """The prune unit's command, with collector.env (and ``environment``) expanded."""
    unit = Unit.read(PRUNE_UNIT)
    assert unit.value("EnvironmentFile") == Unit.read(COLLECTOR_UNIT).value("EnvironmentFile")
    return exec_start(unit, read_env_file(SYSTEMD / "collector.env") | (environment or {}))


def test_prune_exec_start_prunes_the_collectors_spool() -> None:
    """The prune's command parses, names the collector's own spool and the env's table."""
    args = parse_grstats(prune_words()[1:])
    collector = parse_grstats(
        exec_start(Unit.read(COLLECTOR_UNIT), read_env_file(SYSTEMD / "collector.env"))[1:]
    )
    assert args.handler is run_prune
    assert str(args.spool) == collector.spool
    assert args.table == Path("/var/lib/grstats/table")
    assert args.keep_days == 1
    assert Unit.read(PRUNE_UNIT).value("StateDirectory") == Unit.read(COLLECTOR_UNIT).value(
        "StateDirectory"
    )


def test_prune_command_removes_only_what_the_table_loaded(tmp_path: Path) -> None:
    """Run as installed: the loaded segment older than --keep-days goes, the others stay."""
    spool, table = tmp_path / "spool", tmp_path / "table"
    old, recent, waiting = write_spool(spool, [[make_record(s)] for s in range(3)])
    now = time.time()
    commit(table, 1, spool.resolve(), [old], committed_at=_utc(now - 3 * 86_400))
    commit(table, 2, spool.resolve(), [recent], committed_at=_utc(now - 3600))
    words = replaced(prune_words(), "--spool", str(spool))
    done = run_installed(replaced(words, "--table", str(table)))
    assert done.returncode == 0, done.stderr
    assert "removed 1 loaded segments" in done.stdout
    assert not old.exists()
    assert recent.exists()
    assert waiting.exists()
    done = run_installed(replaced(words, "--table", str(tmp_path / "no-table")))
    assert done.returncode == 2
    assert "--table:" in done.stderr


def _utc(seconds: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(seconds, dt.UTC)


def prevented(unit: Unit) -> set[int]:
    """The exit statuses after which the unit is not restarted (RestartPreventExitStatus=)."""
    return {int(status) for status in unit.value("RestartPreventExitStatus").split()}


def run_installed(words: list[str]) -> subprocess.CompletedProcess[str]:
    """Run an ExecStart's words with the grstats of this test in place of the installed one."""
    assert words[0] == INSTALLED_GRSTATS
    return subprocess.run(
        [str(GRSTATS), *words[1:]], capture_output=True, text=True, check=False, timeout=60
    )


def replaced(words: list[str], flag: str, value: str) -> list[str]:
    """``words`` with the value after ``flag`` replaced by ``value``."""
    index = words.index(flag) + 1
    return [*words[:index], value, *words[index + 1 :]]


@pytest.mark.parametrize("unit", DAEMONS, ids=lambda path: path.name)
def test_units_restart_on_failure_but_not_on_a_configuration_error(unit: Path) -> None:
    """The unit restarts on failure but not after exit 2, an invalid flag or config."""
    settings = Unit.read(unit)
    assert settings.value("Restart") == "on-failure"
    assert prevented(settings) == {2}
    assert settings.value("SyslogLevelPrefix") == "yes"  # the <N> of each log line is read


def test_agent_unit_is_not_restarted_after_an_invalid_config_or_flag(
    host_root: Path, tmp_path: Path
) -> None:
    """The agent's command exits 2 on a bad key value, an unknown key or a bad flag, 1 otherwise."""
    unit = Unit.read(AGENT_UNIT)
    words = under(host_root, " ".join(exec_start(unit))).split()
    good = under(host_root, (SYSTEMD / "agent.toml").read_text(encoding="utf-8"))
    assert "\nperiod_s = 1 " in good
    broken = {
        "period_s": good.replace("\nperiod_s = 1 ", "\nperiod_s = 0 "),
        "perod_s": good.replace("\nperiod_s = 1 ", "\nperod_s = 1 "),
        "TOML": good + "\n[tls\n",
    }
    for name, text in broken.items():
        config = tmp_path / f"{name}.toml"
        config.write_text(text, encoding="utf-8")
        done = run_installed(replaced(words, "--config", str(config)))
        assert done.returncode in prevented(unit), (name, done.stderr)
        assert name in done.stderr
    done = run_installed([*words, "--period", "soon"])
    assert done.returncode in prevented(unit)
    assert "argument --period: invalid float value: 'soon'" in done.stderr
    unusable = tmp_path / "a-file"
    unusable.write_text("", encoding="utf-8")
    # (the config's advertise, db1.example.net, does not resolve here: that would exit 2)
    usable = ["--advertise", "localhost:7400"]
    done = run_installed([*words, *usable, "--state-dir", str(unusable / "state")])
    assert done.returncode == 1, done.stderr  # not a config error: restarted, 5 s later
    assert done.returncode not in prevented(unit)


def test_collector_unit_is_not_restarted_after_invalid_flags(
    host_root: Path, tmp_path: Path
) -> None:
    """The collector's command exits 2 on invalid flags in collector.env, 1 on a busy spool."""
    unit = Unit.read(COLLECTOR_UNIT)
    environment = read_env_file(SYSTEMD / "collector.env")
    spool = tmp_path / "spool"
    for options, message in (
        ("--interval 0", "--interval: 0.0 is not a number of seconds from 1 to 3600"),
        ("--metrics-listen 9475", "--metrics-listen: '9475' is not host:port"),
        ("--segment-size lots", "--segment-size: 'lots' is not a size"),
        ("--intervall 1", "unrecognized arguments: --intervall 1"),
    ):
        words = exec_start(unit, environment | {"GRSTATS_OPTIONS": options})
        words = replaced(under(host_root, " ".join(words)).split(), "--spool", str(spool))
        done = run_installed(words)
        assert done.returncode in prevented(unit), (options, done.stderr)
        assert message in done.stderr
        assert not spool.exists()
    words = replaced(
        under(host_root, " ".join(exec_start(unit, environment))).split(), "--spool", str(spool)
    )
    with SpoolWriter(spool):  # another collector holds the spool: worth retrying later
        done = run_installed(words)
    assert done.returncode == 1, done.stderr
    assert done.returncode not in prevented(unit)
    assert "is in use by another writer" in done.stderr


def rss_peak_mib(pid: int) -> float:
    """The peak resident memory of process ``pid`` (VmHWM), in MiB."""
    status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    found = re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE)
    assert found is not None
    return int(found.group(1)) / 1024


def stop_with(unit: Unit, process: subprocess.Popen[bytes]) -> float:
    """Send the unit's KillSignal; return how long the process took to exit (bounded)."""
    started = time.monotonic()
    process.send_signal(signal.Signals[unit.value("KillSignal")])
    try:
        process.wait(unit.seconds("TimeoutStopSec"))
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        pytest.fail(f"not stopped within TimeoutStopSec={unit.value('TimeoutStopSec')}")
    return time.monotonic() - started


def metrics_answer(port: int) -> bool:
    """Whether /metrics on ``port`` answers with the agent's figures."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=1) as answer:
            return b"grstats_agent_up" in answer.read()
    except OSError:
        return False


def test_agent_and_collector_stop_cleanly_within_the_units_timeouts(tmp_path: Path) -> None:
    """On the units' KillSignal the agent and the collector exit 0 well within TimeoutStopSec."""
    agent_unit, collector_unit = Unit.read(AGENT_UNIT), Unit.read(COLLECTOR_UNIT)
    port, metrics = free_port(), free_port()
    agent = subprocess.Popen(
        [
            str(GRSTATS),
            "agent",
            "--config",
            str(DEPLOY / "examples" / "agent-simulated.toml"),
            "--group-start",
            str(int(time.time())),
            "--listen",
            f"127.0.0.1:{port}",
            "--peers",  # itself (skipped) and a peer that refuses connections
            f"127.0.0.1:{port},127.0.0.1:{free_port()}",
            "--metrics-listen",
            f"127.0.0.1:{metrics}",
            "--state-dir",
            str(tmp_path / "state"),
            "--log-format",
            "json",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    collector: subprocess.Popen[bytes] | None = None
    try:
        wait_until(lambda: metrics_answer(metrics), 30, "the agent's /metrics")
        spool = tmp_path / "spool"
        collector = subprocess.Popen(
            [str(GRSTATS), "collect", "--node", f"127.0.0.1:{port}", "--spool", str(spool)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_until(
            lambda: any(p.stat().st_size > 0 for p in spool.glob("segment-*.open")),
            30,
            "a snapshot in the spool",
        )
        collector_stop = stop_with(collector_unit, collector)
        assert collector.returncode == 0
        assert list(spool.glob("segment-*.sealed"))
        agent_peak = rss_peak_mib(agent.pid)
        agent_stop = stop_with(agent_unit, agent)
        assert agent.returncode == 0
    finally:
        for process in (collector, agent):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()
    print(  # the figures, for the record (pytest -s)
        f"agent stopped in {agent_stop:.2f} s (peak RSS {agent_peak:.0f} MiB), "
        f"collector in {collector_stop:.2f} s"
    )
    assert agent_stop < agent_unit.seconds("TimeoutStopSec") / 3
    assert collector_stop < collector_unit.seconds("TimeoutStopSec") / 3
    memory_high = int(agent_unit.value("MemoryHigh").removesuffix("M"))
    assert agent_peak < memory_high / 2
