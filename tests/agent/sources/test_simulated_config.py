"""SimulatedSourceConfig: the [simulated] section, its ranges, its scenario and its source."""

from __future__ import annotations

import subprocess
import sys
from typing import TYPE_CHECKING, Any

import pytest

from grstats.agent.config import load_config
from grstats.agent.sources import SimulatedSourceConfig
from grstats.agent.sources.simulated import SimulatedSource
from grstats.cli import build_parser
from grstats.cli.agent import config_from
from grstats.cli.errors import CliError
from grstats.core.errors import ConfigError

if TYPE_CHECKING:
    from pathlib import Path

START = 1_700_000_000.0


def simulated(**changes: Any) -> SimulatedSourceConfig:
    """A valid [simulated] section for member 0 of the steady group, with ``changes``."""
    return SimulatedSourceConfig(**{"member_index": 0, "group_start_s": START, **changes})


class TestSimulatedSourceConfig:
    def test_defaults(self) -> None:
        """Only member_index and group_start_s are required; the scenario is steady."""
        config = simulated()
        assert (config.scenario, config.members, config.seed) == ("steady", None, 1)

    @pytest.mark.parametrize(
        ("key", "value", "message"),
        [
            ("scenario", "", "simulated.scenario: '' is not a scenario name or file path"),
            ("member_index", -1, "simulated.member_index: -1 is not in 0..8"),
            ("member_index", 9, "simulated.member_index: 9 is not in 0..8"),
            ("member_index", True, "simulated.member_index: True is not in 0..8"),
            ("members", 0, "simulated.members: 0 is not in 1..9"),
            ("members", 10, "simulated.members: 10 is not in 1..9"),
            ("members", "3", "simulated.members: '3' is not in 1..9"),
            ("seed", -1, "simulated.seed: -1 is not in 0..9223372036854775807"),
            ("seed", "1", "simulated.seed: '1' is not in 0..9223372036854775807"),
            ("group_start_s", -1, "simulated.group_start_s: -1 is not a UNIX time in [0, 253402300799] seconds"),
            ("group_start_s", float("inf"), "simulated.group_start_s: inf is not a UNIX time"),
            ("group_name", "", "simulated.group_name: '' is not a group name (1 to 63 printable characters, no spaces at either end)"),
            ("group_name", " east", "simulated.group_name: ' east' is not a group name"),
            ("group_name", "x" * 64, "simulated.group_name: 'xxxx"),
            ("group_name", 7, "simulated.group_name: 7 is not a group name"),
        ],
    )  # fmt: skip
    def test_bad_value_names_key_and_range(self, key: str, value: Any, message: str) -> None:
        """A bad value raises ConfigError starting with simulated.<key>."""
        with pytest.raises(ConfigError) as caught:
            simulated(**{key: value})
        assert str(caught.value).startswith(f"simulated.{key}: ")
        assert message in str(caught.value)

    def test_member_index_within_members(self) -> None:
        """member_index must be a member of a group of ``members``."""
        with pytest.raises(ConfigError, match=r"^simulated.member_index: 3 is not in 0..2 for 3"):
            simulated(member_index=3, members=3)

    def test_build_reads_the_right_member(self) -> None:
        """build() returns a SimulatedSource for member_index of the group sized to members."""
        source = simulated(member_index=4, members=5, seed=7).build(clock=lambda: START + 5)
        assert isinstance(source, SimulatedSource)
        assert source.member_index == 4
        assert len(source.group.members) == 5
        assert (source.group.seed, source.group.start_us) == (7, int(START * 1_000_000))

    async def test_built_source_reads_its_member(self) -> None:
        """The built source's snapshot is of its own member."""
        source = simulated(member_index=1).build(clock=lambda: START + 5)
        snapshot = await source.read()
        assert snapshot.member_id == source.group.members[1].uuid

    async def test_group_name_names_the_group(self) -> None:
        """group_name reaches the built group: its UUIDs, and its label in every read."""
        section = simulated(member_index=1, group_name="orders")
        source = section.build(clock=lambda: START + 5)
        assert source.group.name == "orders"
        assert section.member_uuid() == source.group.members[1].uuid
        assert source.group.members[1].uuid != simulated(member_index=1).member_uuid()
        assert (await source.read()).view.group_label == "orders"
        unnamed = simulated(member_index=1).build(clock=lambda: START + 5)
        assert unnamed.group.name == ""
        assert (await unnamed.read()).view.group_label == ""

    def test_group_name_from_file_and_flag(self, tmp_path: Path) -> None:
        """[simulated] group_name is read from the file, and --group-name overrides it."""
        path = tmp_path / "agent.toml"
        path.write_text(
            'source = "simulated"\n[simulated]\nmember_index = 0\ngroup_start_s = 0\n'
            'group_name = "orders"\n'
        )
        config = load_config(path)
        assert config.simulated is not None
        assert config.simulated.group_name == "orders"
        args = build_parser().parse_args(["agent", "--config", str(path), "--group-name", "east"])
        flagged = config_from(args).simulated
        assert flagged is not None
        assert flagged.group_name == "east"
        args = build_parser().parse_args(["agent", "--config", str(path), "--group-name", "a "])
        with pytest.raises(CliError, match=r"^simulated.group_name: 'a ' is not a group name"):
            config_from(args)

    def test_member_index_beyond_the_scenario(self) -> None:
        """Without members, member_index is checked against the scenario's own size."""
        with pytest.raises(
            ConfigError, match=r"^simulated.member_index: 3 is not in 0..2 for scenario 'steady'"
        ):
            simulated(member_index=3).build()

    def test_unknown_scenario(self) -> None:
        """A scenario that is neither built in nor a file is named as simulated.scenario."""
        with pytest.raises(ConfigError, match=r"^simulated.scenario: 'nope' is neither"):
            simulated(scenario="nope").build()

    def test_scenario_file(self, tmp_path: Path) -> None:
        """A scenario path is loaded from the file."""
        path = tmp_path / "tiny.toml"
        path.write_text('name = "tiny"\ndescription = "One member."\nmembers = 1\n')
        assert simulated(scenario=str(path)).sized_scenario().members == 1

    def test_members_that_do_not_fit(self) -> None:
        """Shrinking a scenario below the members its events name is refused as simulated.members."""
        with pytest.raises(ConfigError, match=r"^simulated.members: 2 does not fit scenario"):
            simulated(scenario="crash-rejoin", members=2).sized_scenario()


def test_the_simulator_loads_on_demand() -> None:
    """Making the section loads no simulator (a MySQL agent never needs it); build() loads it."""
    check = (
        "import sys; from grstats.agent.sources import SimulatedSourceConfig; "
        "config = SimulatedSourceConfig(member_index=0, group_start_s=0); "
        "assert 'grstats.agent.sim.group' not in sys.modules, sorted(sys.modules); "
        "config.build(); assert 'grstats.agent.sim.group' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", check], check=True, timeout=60, capture_output=True)
