"""Errant transactions: each member's GTIDs that the other members' sets of the same instant lack."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from grstats.core.errant import SAME_INSTANT_US, ExecutedSample, errant_transactions
from grstats.core.gtid import GtidSet

GROUP = "8a94f357-aab4-11df-86ab-c80aa9429562"
VIEWS = "9b05a468-bbc5-22e0-97bc-d91bb0530673"
DB1 = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
DB2 = "4f22ab58-82db-22f2-af44-d91bb0530673"
DB3 = "5a33bc69-93ec-33a3-b055-ea2cc1641784"
ASYNC_SOURCE = "6b44cd70-a4fd-44b4-8166-fb3dd2752895"
AT = 1_700_000_040_000_000


def sample(text: str, at: int = AT) -> ExecutedSample:
    """A member's set parsed from ``text``, sampled at ``at``."""
    return ExecutedSample(GtidSet.parse(text), at)


def test_a_write_under_the_members_own_uuid_is_errant() -> None:
    """The GTIDs of a UUID no other member has are errant; the members without any have ''."""
    found = errant_transactions(
        {
            DB1: sample(f"{GROUP}:1-100"),
            DB2: sample(f"{GROUP}:1-98"),
            DB3: sample(f"{GROUP}:1-90,{DB3}:1-3"),
        },
        (GROUP,),
    )
    assert found == {DB1: GtidSet(), DB2: GtidSet(), DB3: GtidSet.parse(f"{DB3}:1-3")}


def test_the_groups_own_gtids_are_never_errant() -> None:
    """A primary's newest commits and the view changes (group name, view-change UUID) are the group's."""
    found = errant_transactions(
        {DB1: sample(f"{GROUP}:1-100,{VIEWS}:1-4"), DB2: sample(f"{GROUP}:1-90")},
        (GROUP.upper(), VIEWS, ""),
    )
    assert found == {DB1: GtidSet(), DB2: GtidSet()}


def test_the_most_advanced_members_channel_gtids_are_in_flight_not_errant() -> None:
    """A primary's inbound-channel GTIDs the secondaries have not applied yet are not errant (no false alarm)."""
    found = errant_transactions(
        {
            DB1: sample(f"{GROUP}:1-100,{ASYNC_SOURCE}:1-500"),
            DB2: sample(f"{GROUP}:1-97,{ASYNC_SOURCE}:1-480"),
            DB3: sample(f"{GROUP}:1-99,{ASYNC_SOURCE}:1-490"),
        },
        (GROUP,),
    )
    assert found == {DB1: GtidSet(), DB2: GtidSet(), DB3: GtidSet()}


def test_a_write_under_a_uuid_the_group_has_is_errant() -> None:
    """C's c:2 is errant though A and B have c:1 (compare_member_transaction_sets; Shell's check_replica_gtid_state)."""
    before = {
        DB1: sample(f"{GROUP}:1-100,{DB3}:1"),
        DB2: sample(f"{GROUP}:1-100,{DB3}:1"),
        DB3: sample(f"{GROUP}:1-90,{DB3}:1-2"),
    }
    found = errant_transactions(before, (GROUP,))
    assert found == {DB1: GtidSet(), DB2: GtidSet(), DB3: GtidSet.parse(f"{DB3}:2")}


def test_the_standard_repair_leaves_nothing_errant() -> None:
    """After an empty transaction of c:2 on A and B (Shell's advice for errant GTIDs), no member is errant."""
    repaired = {
        DB1: sample(f"{GROUP}:1-100,{DB3}:1-2"),
        DB2: sample(f"{GROUP}:1-100,{DB3}:1-2"),
        DB3: sample(f"{GROUP}:1-100,{DB3}:1-2"),
    }
    assert errant_transactions(repaired, (GROUP,)) == {m: GtidSet() for m in repaired}
    partly = {**repaired, DB2: sample(f"{GROUP}:1-100,{DB3}:1")}  # repaired on A only
    assert errant_transactions(partly, (GROUP,)) == {m: GtidSet() for m in repaired}


def test_an_errant_write_in_a_multi_primary_group() -> None:
    """Each writer lacks the others' newest commits; a write of a shared UUID outside the group is still errant."""
    found = errant_transactions(
        {
            DB1: sample(f"{GROUP}:1-100:105,{ASYNC_SOURCE}:1-7"),
            DB2: sample(f"{GROUP}:1-98:101-103,{ASYNC_SOURCE}:1-7"),
            DB3: sample(f"{GROUP}:1-99:104,{ASYNC_SOURCE}:1-9,{DB3}:1"),
        },
        (GROUP,),
    )
    assert found == {
        DB1: GtidSet(),
        DB2: GtidSet(),
        DB3: GtidSet.parse(f"{ASYNC_SOURCE}:8-9,{DB3}:1"),
    }


def test_only_sets_of_the_same_instant_are_compared() -> None:
    """An older set (a crashed member's last) says nothing: alone, the answer is None (unknown)."""
    old = AT - SAME_INSTANT_US - 1
    found = errant_transactions(
        {DB1: sample(f"{GROUP}:1-100,{DB1}:1"), DB3: sample(f"{GROUP}:1-50,{DB1}:1", old)},
        (GROUP,),
    )
    assert found == {DB1: None, DB3: GtidSet()}  # DB3's is compared with DB1's newer set
    same = errant_transactions(
        {DB1: sample(f"{GROUP}:1-100,{DB1}:1"), DB3: sample(f"{GROUP}:1-50", AT - SAME_INSTANT_US)},
        (GROUP,),
    )
    assert same[DB1] == GtidSet.parse(f"{DB1}:1")


def test_a_member_alone_is_not_known() -> None:
    """With no other member's set there is nothing to compare with: None."""
    assert errant_transactions({DB1: sample(f"{DB1}:1-5")}, (GROUP,)) == {DB1: None}


UUIDS = st.sampled_from([GROUP, VIEWS, DB1, DB2, DB3, ASYNC_SOURCE])
SETS = st.lists(
    st.tuples(UUIDS, st.integers(1, 50), st.integers(0, 10)).map(
        lambda found: (found[0], "", found[1], found[1] + found[2])
    ),
    max_size=6,
).map(GtidSet)
SAMPLES = st.dictionaries(
    st.sampled_from([DB1, DB2, DB3]),
    st.builds(ExecutedSample, SETS, st.integers(AT - 2 * SAME_INSTANT_US, AT)),
    min_size=1,
)


@given(SAMPLES)
def test_errant_gtids_are_the_members_own_and_no_one_elses(
    samples: dict[str, ExecutedSample],
) -> None:
    """Errant GTIDs are in the member's set, of no group UUID, in no compared set; a member's own UUID alone is always found."""
    found = errant_transactions(samples, (GROUP, VIEWS))
    assert set(found) == set(samples)
    for member, errant in found.items():
        others = [
            s.executed
            for m, s in samples.items()
            if m != member and s.sampled_at_us >= samples[member].sampled_at_us - SAME_INSTANT_US
        ]
        if not others:
            assert errant is None
            continue
        assert errant is not None
        assert errant <= samples[member].executed
        assert not {GROUP, VIEWS} & set(errant.uuids())
        assert all(errant.isdisjoint(other) for other in others)
        executed = samples[member].executed
        if not any(member in other.uuids() for other in others):
            own = GtidSet(i for i in executed if i.uuid == member)
            assert own <= errant
