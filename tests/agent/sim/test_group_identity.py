"""A simulated group's identity: its UUIDs follow from scenario, seed and name; its name is its label."""

from __future__ import annotations

import json

import pytest

from grstats.agent.sim.group import (
    TICKS_PER_SECOND,
    SimulatedGroup,
    group_uuid,
    member_uuid,
    stable_uuid,
)
from grstats.agent.sim.scenario import from_mapping, load_scenario
from grstats.agent.sim.views import executed_set, not_started, snapshot
from grstats.cli import main
from grstats.core.errors import ConfigError
from grstats.core.model import MAX_LABEL_LENGTH

START_US = 1_700_000_000_000_000


def group_of(
    scenario: str = "steady",
    seed: int = 1,
    name: str = "",
    *,
    members: int | None = None,
    start_us: int = START_US,
) -> SimulatedGroup:
    """A fresh group of the built-in ``scenario`` (sized to ``members``), seed and name."""
    loaded = load_scenario(scenario)
    if members is not None:
        loaded = loaded.with_members(members)
    return SimulatedGroup(loaded, seed, start_us, name)


def uuids(group: SimulatedGroup) -> set[str]:
    """The group's member UUIDs."""
    return {member.uuid for member in group.members}


class TestDerivation:
    def test_names_part_groups_of_one_scenario_and_seed(self) -> None:
        """Same scenario and seed, different names: different group names, disjoint member UUIDs."""
        east, west = group_of(name="east"), group_of(name="west")
        assert east.group_name != west.group_name
        assert not uuids(east) & uuids(west)
        assert not {east.group_name, west.group_name} & (uuids(east) | uuids(west))

    def test_same_inputs_same_uuids(self) -> None:
        """Every agent of one group computes the same UUIDs from the same config, in any process."""
        first, again = group_of(name="east"), group_of(name="east")
        assert first.group_name == again.group_name == group_uuid("steady", 1, "east")
        assert [m.uuid for m in first.members] == [m.uuid for m in again.members]
        assert [m.uuid for m in first.members] == [
            member_uuid("steady", 1, i, "east") for i in range(3)
        ]
        # the derivation, spelled out: stable across runs (blake2b of the parts' repr)
        assert first.group_name == stable_uuid("group", "steady", 1, "east")
        assert first.members[2].uuid == stable_uuid("member", "steady", 1, "east", 2)

    def test_scenario_and_seed_part_unnamed_groups(self) -> None:
        """Without a name, groups of other scenarios or seeds differ too."""
        steady, failover = group_of(), group_of("primary-failover")
        reseeded = group_of(seed=2)
        names = {steady.group_name, failover.group_name, reseeded.group_name}
        assert len(names) == 3
        assert not uuids(steady) & uuids(failover)
        assert not uuids(steady) & uuids(reseeded)
        assert steady.name == failover.name == ""

    def test_start_and_size_do_not_change_the_uuids(self) -> None:
        """Start and size are not part of the identity: member i has one UUID in any size."""
        three = group_of(name="east")
        five = group_of(name="east", members=5, start_us=START_US + 7_000_000)
        assert five.group_name == three.group_name
        assert [m.uuid for m in five.members[:3]] == [m.uuid for m in three.members]

    def test_view_ids_are_the_groups_own(self) -> None:
        """Two groups of one seed started together have different view ids (the random part)."""
        assert group_of(name="east").view_id != group_of(name="west").view_id
        assert group_of(name="east").view_id == group_of(name="east").view_id


class TestGtids:
    def test_gtids_and_view_changes_carry_the_groups_uuid(self) -> None:
        """Each group's transactions and logged view changes are GTIDs of its own UUID only."""
        east, west = group_of(name="east"), group_of(name="west")
        for group in (east, west):
            group.advance_to(3 * TICKS_PER_SECOND)
            executed = snapshot(group, 1).gtid_executed
            assert executed.uuids() == [group.group_name]
            assert executed_set(group, [0] * 3, 3).uuids() == [group.group_name]  # view changes
        assert snapshot(east, 0).gtid_executed.isdisjoint(snapshot(west, 0).gtid_executed)

    def test_a_view_change_uuid_is_kept(self) -> None:
        """A scenario's view_change_uuid names the view changes whatever the group's name."""
        uuid = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
        data = {"name": "t", "description": "d", "view_change_uuid": uuid}
        group = SimulatedGroup(from_mapping(data), 1, START_US, "east")
        assert group.view_uuid == uuid != group.group_name


class TestLabel:
    def test_snapshots_carry_the_name_as_label(self) -> None:
        """A named group's snapshots, before and after its start, have its name as group_label."""
        group = group_of(name="orders")
        assert not_started(group, 0).view.group_label == "orders"
        group.advance_to(TICKS_PER_SECOND)
        assert snapshot(group, 0).view.group_label == "orders"
        assert snapshot(group, 0).view.group_name == group.group_name

    def test_no_name_no_label(self) -> None:
        """Without a name, group_label stays ''."""
        group = group_of()
        assert not_started(group, 1).view.group_label == ""
        assert snapshot(group, 1).view.group_label == ""

    @pytest.mark.parametrize("name", [" east", "east ", "a\tb", "x" * (MAX_LABEL_LENGTH + 1)])
    def test_a_bad_name_is_refused(self, name: str) -> None:
        """A name that is not a group label raises ConfigError naming group_name and the value."""
        with pytest.raises(ConfigError) as caught:
            group_of(name=name)
        assert str(caught.value).startswith(f"group_name: {name!r} is not a group name (1 to 63")


class TestSimulateCommand:
    def test_group_name_sets_the_uuids(self, capsys: pytest.CaptureFixture[str]) -> None:
        """The simulate command's --group-name gives the members and GTIDs of the named group."""
        args = ["simulate", "--scenario", "steady", "--seconds", "2", "--format", "json"]
        assert main([*args, "--group-name", "east"]) == 0
        tables = json.loads(capsys.readouterr().out)
        members = {row["MEMBER_ID"] for row in tables["replication_group_members"]}
        assert members == {member_uuid("steady", 1, i, "east") for i in range(3)}
        executed = tables["replication_group_member_gtid_executed"][0]["GTID_EXECUTED"]
        assert executed.startswith(group_uuid("steady", 1, "east") + ":")

    def test_a_bad_group_name_exits_2(self, capsys: pytest.CaptureFixture[str]) -> None:
        """A bad --group-name exits 2 naming the flag and the value."""
        args = ["simulate", "--scenario", "steady", "--seconds", "2", "--group-name", "east "]
        assert main(args) == 2
        assert "--group-name: 'east ' is not a group name" in capsys.readouterr().err
