"""Member weights and versions in scenarios, and the single-primary election order they give."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from grstats.agent.sim.election import Candidate, pick_primary
from grstats.agent.sim.scenario import from_mapping
from grstats.agent.sim.views import snapshot
from grstats.core.errors import ConfigError
from grstats.core.rows import encode_version
from tests.agent.sim.test_group import group_of, run_seconds, scenario

if TYPE_CHECKING:
    from grstats.agent.sim.group import SimulatedGroup


def failover(member: dict[str, dict[str, Any]], seed: int = 1) -> SimulatedGroup:
    """A group of 3 whose primary (member 0) crashes at 5 s, read after its expulsion."""
    group = group_of(
        scenario(
            workload={"rate_tps": 100},
            member=member,
            events=[{"at": 5, "action": "crash", "member": 0}],
        ),
        seed,
    )
    run_seconds(group, 20)
    assert not group.members[0].in_view
    return group


def by_uuid(seed: int = 1) -> tuple[int, int]:
    """Members 1 and 2 of the seed's group: (the lower server_uuid, the higher)."""
    group = group_of(scenario(), seed)
    low, high = sorted((1, 2), key=lambda i: group.members[i].uuid)
    return low, high


class TestElectionOrder:
    def test_the_highest_weight_wins_over_the_lowest_uuid(self) -> None:
        """The member of the higher server_uuid but weight 90 becomes primary, not the lowest uuid.

        ``sort_members_for_election`` sorts the lowest-version members with
        ``Group_member_info::comparator_group_member_weight`` (``has_greater_weight``: weight,
        then the lower uuid; member_info.cc), and ``pick_primary_member`` takes the first
        ONLINE one (primary_election_invocation_handler.cc).
        """
        low, high = by_uuid()
        group = failover({str(high): {"member_weight": 90}})
        assert group.primary == high
        assert low != high

    def test_equal_weights_leave_it_to_the_lowest_uuid(self) -> None:
        """Weights 70 and 70: ``has_greater_weight`` falls back to ``has_lower_uuid_internal``."""
        low, high = by_uuid()
        group = failover({str(low): {"member_weight": 70}, str(high): {"member_weight": 70}})
        assert group.primary == low
        lighter = failover({str(low): {"member_weight": 10}})
        assert lighter.primary == high  # and a lighter one loses to the default 50

    def test_the_lowest_version_wins_over_the_weight(self) -> None:
        """8.0.35 beats 8.0.36 of weight 90: only the lowest-version members are candidates.

        ``sort_and_get_lowest_version_member_position`` (primary_election_invocation_handler.cc)
        ends the candidates at the first member of another version, patch included from
        8.0.17 (``PRIMARY_ELECTION_PATCH_CONSIDERATION``, plugin_constants.h).
        """
        low, high = by_uuid()
        group = failover(
            {
                "0": {"version": "8.0.35"},
                str(high): {"version": "8.0.35", "member_weight": 10},
                str(low): {"member_weight": 90},
            }
        )
        assert group.primary == high

    def test_before_8_0_17_only_the_major_version_counts(self) -> None:
        """With 8.0.13 the lowest, an 8.0.16 member of weight 90 is a candidate and wins.

        Before ``PRIMARY_ELECTION_PATCH_CONSIDERATION`` (0x080017) the lowest-version members
        are those of the lowest major version (``sort_and_get_lowest_version_member_position``).
        """
        low, high = by_uuid()
        group = failover(
            {
                "0": {"version": "8.0.13"},
                str(low): {"version": "8.0.13"},
                str(high): {"version": "8.0.16", "member_weight": 90},
            }
        )
        assert group.primary == high

    def test_no_primary_while_the_lowest_version_members_are_not_online(self) -> None:
        """A higher-version ONLINE member is not picked while the only lower one is RECOVERING.

        ``pick_primary_member`` loops only up to ``lowest_version_end`` over every member of
        the view, whatever its state, and takes an ONLINE one (primary_election_invocation_
        handler.cc); below 5.7.20 the order is by server_uuid alone
        (``PRIMARY_ELECTION_MEMBER_WEIGHT_VERSION``).
        """
        old, new = encode_version("8.0.35"), encode_version("8.0.36")
        members = [
            Candidate(index=0, uuid="b", version=old, weight=50, online=False),
            Candidate(index=1, uuid="a", version=new, weight=50, online=True),
        ]
        assert pick_primary(members) is None
        legacy = encode_version("5.7.19")
        assert (
            pick_primary(
                [
                    Candidate(index=0, uuid="b", version=legacy, weight=90, online=True),
                    Candidate(index=1, uuid="a", version=legacy, weight=10, online=True),
                ]
            )
            == 1
        )


class TestShownSettings:
    def test_member_version_and_weight_are_the_members(self) -> None:
        """MEMBER_VERSION of each row and @@group_replication_member_weight follow [member.N].

        ``Group_member_info`` carries each member's own version and weight
        (plugin/group_replication/src/member_info.cc); MEMBER_VERSION is printed per row by
        ``get_group_members_info`` (ps_information.cc).
        """
        group = group_of(
            scenario(member={"2": {"version": "8.0.35", "member_weight": 80}}, members=3)
        )
        run_seconds(group, 1)
        read = snapshot(group, 0)
        versions = {row.member_id: row.member_version for row in read.view.members}
        assert versions[group.members[2].uuid] == "8.0.35"
        assert versions[group.members[1].uuid] == "8.0.36"
        assert snapshot(group, 2).member_weight == 80
        assert snapshot(group, 1).member_weight == 50

    def test_views_are_logged_while_any_member_is_below_8_3_0(self) -> None:
        """One 8.0.36 member among 8.4.0 ones keeps the View_change_log_events.

        ``m_need_vcle`` holds while a member is below ``MEMBER_VERSION_REMOVING_VCLE``
        (plugin/group_replication/include/member_version.h, ``prepare_view_change_packet``).
        """
        mixed = group_of(scenario(version="8.4.0", member={"1": {"version": "8.0.36"}}))
        assert mixed.logs_views
        assert not group_of(scenario(version="8.4.0")).logs_views


@pytest.mark.parametrize(
    ("member", "message"),
    [
        (
            {"1": {"member_weight": 101}},
            "member.1.member_weight: 101 is not a whole number in 0..100",
        ),
        (
            {"1": {"member_weight": -1}},
            "member.1.member_weight: -1 is not a whole number in 0..100",
        ),
        ({"1": {"member_weight": 7.5}}, "member.1.member_weight: 7.5 is not a whole number"),
        ({"1": {"member_weight": True}}, "member.1.member_weight: True is not a whole number"),
        ({"1": {"version": "eight"}}, "member.1.version: 'eight' is not a MySQL version"),
        ({"1": {"version": 8}}, "member.1.version: 8 is not a MySQL version"),
        ({"1": {"weight": 60}}, "member.1.weight: 60 is not a member setting"),
        ({"1": 60}, "member.1: 60 is not a table"),
        ({"x": {"version": "8.0.36"}}, "member: 'x' is not a member index"),
        ({"5": {"version": "8.0.36"}}, "member.5: 5 is not in 0..2 for 3 members"),
    ],
)
def test_bad_member_settings_name_the_field_and_value(member: dict[str, Any], message: str) -> None:
    """A [member.N] table's bad key or value is refused, naming it (plugin.cc: 0..100)."""
    with pytest.raises(ConfigError, match=message.replace(".", r"\.").replace("(", r"\(")):
        from_mapping({"name": "t", "description": "d", "member": member})


def test_view_change_uuid_needs_every_member_at_8_0_26() -> None:
    """group_replication_view_change_uuid came with 8.0.26: a 8.0.25 member refuses it (WL#14539)."""
    with pytest.raises(ConfigError, match=r"version is '8\.0\.25' \(member\.2\.version\)"):
        from_mapping(
            {
                "name": "t",
                "description": "d",
                "view_change_uuid": "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa",
                "member": {"2": {"version": "8.0.25"}},
            }
        )
