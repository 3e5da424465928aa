"""grstats simulate: listing, ground truth as tables and JSON, errors for bad arguments."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from grstats.agent.sim.scenario import list_scenarios
from grstats.cli import main
from grstats.core.rows import REPLICATION_GROUP_MEMBER_STATS, REPLICATION_GROUP_MEMBERS


def test_list_names_every_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    """--list prints each built-in scenario with its one-line description."""
    assert main(["simulate", "--list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == len(list_scenarios())
    for scenario, line in zip(list_scenarios(), out, strict=True):
        assert line.startswith(scenario.name)
        assert line.endswith(scenario.description)


def test_json_is_keyed_by_table_and_column(capsys: pytest.CaptureFixture[str]) -> None:
    """JSON output is one object keyed by table name, rows keyed by the exact column names."""
    assert (
        main(
            [
                "simulate",
                "--scenario",
                "steady",
                "--members",
                "4",
                "--seconds",
                "20",
                "--format",
                "json",
            ]
        )
        == 0
    )
    tables = json.loads(capsys.readouterr().out)
    assert set(tables) == {
        "replication_group_members",
        "replication_group_member_stats",
        "replication_group_member_lag",
        "replication_group_member_gtid_executed",
        "simulation_summary",
    }
    members = tables["replication_group_members"]
    assert len(members) == 4
    assert list(members[0]) == list(REPLICATION_GROUP_MEMBERS.column_names)
    assert list(tables["replication_group_member_stats"][0]) == list(
        REPLICATION_GROUP_MEMBER_STATS.column_names
    )
    assert [m["MEMBER_ROLE"] for m in members].count("PRIMARY") == 1
    stats = tables["replication_group_member_stats"]
    assert sum(s["COUNT_TRANSACTIONS_LOCAL_PROPOSED"] for s in stats) == 500 * 20
    assert isinstance(stats[0]["COUNT_TRANSACTIONS_CHECKED"], int)


def test_same_seed_same_output(capsys: pytest.CaptureFixture[str]) -> None:
    """Two runs with the same scenario, members and seed print the same ground truth."""
    args = [
        "simulate",
        "--scenario",
        "multi-primary-conflicts",
        "--seconds",
        "15",
        "--seed",
        "5",
        "--format",
        "json",
    ]
    main(args)
    first = capsys.readouterr().out
    main(args)
    assert capsys.readouterr().out == first


def test_table_format_titles_each_table(capsys: pytest.CaptureFixture[str]) -> None:
    """The table format prints each table under a '-- name' line, as the mysql client would."""
    assert main(["simulate", "--scenario", "steady", "--seconds", "5"]) == 0
    out = capsys.readouterr().out
    assert "-- replication_group_members\n+---" in out
    assert "3 rows in set" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ["--scenario", "nope", "--seconds", "5"], "scenario: 'nope'", id="unknown-scenario"
        ),
        pytest.param(["--scenario", "steady", "--seconds", "0"], "--seconds: 0", id="zero-seconds"),
        pytest.param(
            ["--scenario", "steady", "--members", "10", "--seconds", "5"],
            "members: 10",
            id="ten-members",
        ),
        pytest.param(
            ["--scenario", "crash-rejoin", "--members", "2", "--seconds", "5"],
            "events[0].member",
            id="event-out-of-group",
        ),
        pytest.param(["--seconds", "5"], "needs --scenario", id="no-scenario"),
    ],
)
def test_bad_arguments_exit_2_naming_the_value(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bad arguments exit 2 with one line naming the argument and its value."""
    assert main(["simulate", *args]) == 2
    assert message in capsys.readouterr().err


def test_installed_script_runs_a_scenario(tmp_path: Path) -> None:
    """The installed grstats runs a scenario file given by path and exits 0."""
    path = tmp_path / "two.toml"
    path.write_text('name = "two"\ndescription = "two members"\nmembers = 2\n')
    script = Path(sys.executable).parent / "grstats"
    done = subprocess.run(
        [script, "simulate", "--scenario", str(path), "--seconds", "3", "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert len(json.loads(done.stdout)["replication_group_members"]) == 2


def test_time_zone_moves_the_tables_not_the_json(capsys: pytest.CaptureFixture[str]) -> None:
    """--time-zone Europe/Paris shows the WL#7374 times in CET; JSON has them in UTC with Z."""
    run = ["simulate", "--scenario", "steady", "--members", "3", "--seconds", "5"]
    assert main([*run, "--format", "json", "--time-zone", "Europe/Paris"]) == 0
    lag = json.loads(capsys.readouterr().out)["replication_group_member_lag"]
    name = "LAST_APPLIED_TRANSACTION_END_APPLY_TIMESTAMP"
    utc = [datetime.fromisoformat(row[name]) for row in lag if row[name] is not None]
    assert utc
    assert {moment.utcoffset() for moment in utc} == {timedelta(0)}
    assert main([*run, "--format", "vertical", "--time-zone", "Europe/Paris"]) == 0
    out = capsys.readouterr().out
    paris = ZoneInfo("Europe/Paris")  # the default start is in November: CET, +01:00
    for moment in utc:
        assert f"{name}: {moment.astimezone(paris):%Y-%m-%d %H:%M:%S.%f}\n" in out
    unset = sum(row[name] is None for row in lag)  # null in JSON, MySQL's zeros in the tables
    assert out.count(f"{name}: 0000-00-00 00:00:00.000000\n") == unset


def test_a_bad_time_zone_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    """A zone MySQL refuses is exit status 2, naming --time-zone and the value."""
    run = ["simulate", "--scenario", "steady", "--seconds", "1", "--time-zone", "+14:30"]
    assert main(run) == 2
    assert "--time-zone: Unknown or incorrect time zone: '+14:30'" in capsys.readouterr().err
