"""MySQL Shell's verdict (Status::check_group_status, modules/adminapi/cluster/status.cc)."""

from __future__ import annotations

import pytest

from grstats.core.rows import STATUSES
from grstats.core.verdict import Verdict, has_quorum, tolerance, verdict

ON, REC, UNR = "ONLINE", "RECOVERING", "UNREACHABLE"


@pytest.mark.parametrize(
    ("states", "expected"),
    [
        ([ON], True),
        ([ON, UNR], False),  # Shell: quorumless when unreachable >= total / 2
        ([ON, ON, UNR], True),
        ([ON, UNR, UNR], False),
        ([ON, ON, UNR, UNR], False),
        ([ON, ON, ON, UNR, UNR], True),
        ([REC, ON, UNR], True),
        ([], False),
        (["ERROR"], False),  # an expelled member's own view: no ONLINE or RECOVERING member
        ([ON, REC, "OFFLINE"], True),
        ([ON, "ERROR"], False),
    ],
)
def test_quorum_is_shells(states: list[str], expected: bool) -> None:
    """Quorum is Shell's: ONLINE and RECOVERING are more than half the view (fewer than half UNREACHABLE).

    ``*out_has_quorum = online_members > members.size() / 2`` in ``get_members``
    (mysqlshdk/libs/mysql/group_replication.cc), ``online_members`` counting both states.
    """
    assert has_quorum(states) is expected


@pytest.mark.parametrize(
    ("size", "expected"), [(1, 0), (2, 0), (3, 1), (4, 1), (5, 2), (6, 2), (7, 3), (8, 3), (9, 4)]
)
def test_tolerance_of_an_all_online_view_is_shells(size: int, expected: int) -> None:
    """With every member ONLINE, tolerance is Shell's (ONLINE + RECOVERING - 1) / 2."""
    assert tolerance([ON] * size) == expected


def test_tolerance_counts_unreachable_members_still_in_the_view() -> None:
    """5 members with 2 UNREACHABLE tolerate 0 more failures (Shell would say 1): 3 of 5 loses quorum."""
    assert tolerance([ON, ON, ON, UNR, UNR]) == 0
    assert tolerance([ON] * 7 + [UNR, UNR]) == 2  # 9 members: 4 unreachable is still a minority
    assert tolerance([ON, UNR]) == 0


def test_three_online_members_are_ok_and_tolerate_one_failure() -> None:
    """3 ONLINE members: OK, Shell's sentence with ONE spelled out."""
    assert verdict([ON, ON, ON]) == Verdict(
        "OK", "Group is ONLINE and can tolerate up to ONE failure.", 1
    )


def test_larger_groups_say_the_number() -> None:
    """9 ONLINE members tolerate up to 4 failures, in digits as Shell prints them."""
    assert verdict([ON] * 9).text == "Group is ONLINE and can tolerate up to 4 failures."


def test_one_unreachable_of_three_is_no_tolerance_partial() -> None:
    """One of 3 UNREACHABLE: OK_NO_TOLERANCE_PARTIAL, and 1 member is not active."""
    assert verdict([ON, ON, UNR]) == Verdict(
        "OK_NO_TOLERANCE_PARTIAL",
        "Group is NOT tolerant to any failures. 1 member is not active.",
        0,
    )


def test_two_members_left_after_an_expulsion_stay_partial() -> None:
    """2 ONLINE members and a known member out of the view: OK_NO_TOLERANCE_PARTIAL, tolerance 0."""
    found = verdict([ON, ON], not_in_view=1)
    assert (found.status, found.tolerance) == ("OK_NO_TOLERANCE_PARTIAL", 0)
    assert verdict([ON, ON]).status == "OK_NO_TOLERANCE"


def test_no_quorum_names_the_member_whose_view_it_is() -> None:
    """Half the view UNREACHABLE: NO_QUORUM, as visible from the named member."""
    found = verdict([ON, UNR], not_in_view=1, visible_from="db1:3306")
    assert found == Verdict(
        "NO_QUORUM",
        "Group has no quorum as visible from 'db1:3306' and cannot process write transactions."
        " 2 members are not active.",
        0,
    )


def test_no_online_member_is_no_quorum() -> None:
    """Shell's ERROR (no ONLINE member) is NO_QUORUM here, with Shell's sentences."""
    assert verdict([REC, REC, REC]) == Verdict(
        "NO_QUORUM", "There are no ONLINE members in the group. 3 members are not active.", 0
    )
    assert verdict([UNR, UNR, REC], visible_from="x").text.startswith(
        "Group has no quorum as visible from 'x' and no ONLINE members that can be used"
    )


def test_partition_of_five_then_expulsion() -> None:
    """5 with 2 UNREACHABLE: no tolerance; after their expulsion OK_PARTIAL tolerating one."""
    assert verdict([ON, ON, ON, UNR, UNR]).status == "OK_NO_TOLERANCE_PARTIAL"
    assert verdict([ON, ON, ON], not_in_view=2) == Verdict(
        "OK_PARTIAL",
        "Group is ONLINE and can tolerate up to ONE failure. 2 members are not active.",
        1,
    )


def test_recovering_members_count_for_quorum_and_are_not_active() -> None:
    """A RECOVERING member is in Shell's quorum (not partial) yet counted as not active."""
    found = verdict([ON, ON, REC])
    assert (found.status, found.tolerance) == ("OK", 1)
    assert found.text.endswith(" 1 member is not active.")


def test_agents_not_heard_are_said() -> None:
    """Members whose agents are not heard are counted in the sentence, singular and plural."""
    assert verdict([ON, ON, ON], not_heard=1).text == (
        "Group is ONLINE and can tolerate up to ONE failure."
        " 1 member is not connected: its rows are the last received."
    )
    assert verdict([ON, ON, ON], not_heard=2).text.endswith(
        " 2 members are not connected: their rows are the last received."
    )


def test_no_view_is_unknown() -> None:
    """No view at all: UNKNOWN, tolerance 0."""
    assert verdict([]).status == "UNKNOWN"


@pytest.mark.parametrize(
    ("size", "down"), [(size, down) for size in range(1, 10) for down in range(size + 1)]
)
def test_every_verdict_is_one_of_shells_values(size: int, down: int) -> None:
    """Every mix of ONLINE and UNREACHABLE members of 1-9 gives one of the six statuses."""
    found = verdict([ON] * (size - down) + [UNR] * down)
    assert found.status in STATUSES
    assert found.tolerance <= (size - 1) // 2
    assert (found.status == "NO_QUORUM") is (2 * down >= size)


#: Every branch of Shell's ``Status::check_group_status`` (modules/adminapi/cluster/status.cc),
#: with ``has_quorum`` from ``get_members`` (mysqlshdk/libs/mysql/group_replication.cc):
#: (states of the view, known members outside it, STATUS, STATUS_TEXT, TOLERANCE). Shell's
#: sentences say "Cluster" where grstats says "Group".
SHELL_CASES = [
    pytest.param(
        [ON, ON, ON],
        0,
        "OK",
        "Group is ONLINE and can tolerate up to ONE failure.",
        1,
        id="check_group_status: tolerated 1 -> OK, 'ONE failure'",
    ),
    pytest.param(
        [ON] * 5,
        0,
        "OK",
        "Group is ONLINE and can tolerate up to 2 failures.",
        2,
        id="check_group_status: tolerated 2 -> the number in digits",
    ),
    pytest.param(
        [ON, ON, ON],
        2,
        "OK_PARTIAL",
        "Group is ONLINE and can tolerate up to ONE failure. 2 members are not active.",
        1,
        id="check_group_status: missing_from_group 2 -> OK_PARTIAL, 2 not active (issue 28)",
    ),
    pytest.param(
        [ON, ON, REC],
        0,
        "OK",
        "Group is ONLINE and can tolerate up to ONE failure. 1 member is not active.",
        1,
        id="check_group_status: RECOVERING in quorum_size -> not partial, yet not active",
    ),
    pytest.param(
        [ON, REC],
        0,
        "OK_NO_TOLERANCE",
        "Group is NOT tolerant to any failures. 1 member is not active.",
        0,
        id="check_group_status: tolerated 0, total_in_group == quorum_size -> OK_NO_TOLERANCE",
    ),
    pytest.param(
        [ON, ON],
        1,
        "OK_NO_TOLERANCE_PARTIAL",
        "Group is NOT tolerant to any failures. 1 member is not active.",
        0,
        id="check_group_status: tolerated 0, missing_from_group -> OK_NO_TOLERANCE_PARTIAL",
    ),
    pytest.param(
        [ON, ON, UNR],
        0,
        "OK_NO_TOLERANCE_PARTIAL",
        "Group is NOT tolerant to any failures. 1 member is not active.",
        0,
        id="check_group_status: tolerated 0, total_in_group != quorum_size -> _PARTIAL",
    ),
    pytest.param(
        [ON, UNR],
        0,
        "NO_QUORUM",
        "Group has no quorum as visible from 'db1:3306' and cannot process write"
        " transactions. 1 member is not active.",
        0,
        id="check_group_status: !has_quorum -> NO_QUORUM",
    ),
    pytest.param(
        [ON, ON, UNR, UNR],
        0,
        "NO_QUORUM",
        "Group has no quorum as visible from 'db1:3306' and cannot process write"
        " transactions. 2 members are not active.",
        0,
        id="get_members: 2 of 4 is not more than half -> NO_QUORUM",
    ),
    pytest.param(
        [REC, REC, REC],
        0,
        "NO_QUORUM",
        "There are no ONLINE members in the group. 3 members are not active.",
        0,
        id="check_group_status: online_count 0 with quorum -> ERROR (grstats: NO_QUORUM)",
    ),
    pytest.param(
        ["ERROR"],
        4,
        "NO_QUORUM",
        "Group has no quorum as visible from 'db1:3306' and no ONLINE members that can be used"
        " to restore it. 5 members are not active.",
        0,
        id="check_group_status: online_count 0, no quorum -> ERROR (grstats: NO_QUORUM)",
    ),
    pytest.param(
        [ON, ON, ON, UNR, UNR],
        0,
        "OK_NO_TOLERANCE_PARTIAL",
        "Group is NOT tolerant to any failures. 2 members are not active.",
        0,
        id="deviation: Shell OK_PARTIAL tolerating 1; 2 UNREACHABLE still in the view",
    ),
]


@pytest.mark.parametrize(("states", "missing", "status", "text", "tolerated"), SHELL_CASES)
def test_every_branch_of_shells_check_group_status(
    states: list[str], missing: int, status: str, text: str, tolerated: int
) -> None:
    """Each case gives Shell's status, sentence and tolerance, or the documented deviation."""
    assert verdict(states, not_in_view=missing, visible_from="db1:3306") == Verdict(
        status, text, tolerated
    )
