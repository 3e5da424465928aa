"""The certification database: slots or a dict hold the same versions; steady's stays small."""

from __future__ import annotations

import random
import tracemalloc

from grstats.agent.sim.certification import (
    DENSE_MAX_KEYS,
    DenseCertification,
    SparseCertification,
    certification,
)
from grstats.agent.sim.group import TICKS_PER_SECOND, SimulatedGroup
from grstats.agent.sim.scenario import from_mapping, load_scenario

START_US = 1_700_000_000_000_000


def test_slots_and_a_dict_hold_the_same_versions() -> None:
    """The same writes and sweeps leave the same keys, versions and count in both."""
    rng = random.Random(7)  # noqa: S311  (keys of a test)
    dense, sparse = DenseCertification(1000), SparseCertification()
    for round_ in range(1, 6):
        for version in range(round_ * 10_000, round_ * 10_000 + 500):
            keys = rng.choices(range(1000), k=4)
            dense.write(keys, version)
            sparse.write(keys, version)
        assert dense == sparse
        assert dense.get(keys[0]) == sparse.get(keys[0]) == version
        below, equal = round_ * 10_000 + 250, round_ * 10_000 + 100
        pauses = [sum(1 for _ in db.sweep(below, equal, 300)) for db in (dense, sparse)]
        assert dense == sparse
        assert len(dense) == len(sparse) == len(dict(sparse.items())) > 0
        assert all(v >= below or v == equal for _, v in dense.items())
        assert pauses[0] == 4  # 1000 slots, 300 at a time
    assert dense.get(1001 % 1000) == sparse.get(1)
    assert SparseCertification().get(5) is DenseCertification(10).get(5) is None


def test_slots_for_the_built_in_key_spaces_a_dict_beyond() -> None:
    """Key spaces up to DENSE_MAX_KEYS get slots (all built-in scenarios); larger ones a dict."""
    assert isinstance(certification(100_000, START_US), DenseCertification)
    assert isinstance(certification(DENSE_MAX_KEYS + 1, START_US), SparseCertification)
    assert isinstance(certification(1000, -1), SparseCertification)  # versions could be <= 0
    group = SimulatedGroup(load_scenario("steady"), 1, START_US)
    assert isinstance(group.certification, DenseCertification)


def test_steady_group_holds_its_write_sets_in_its_slots() -> None:
    """5 s of steady (500 tps, 4 of 100,000 keys each) write ~10,000 keys: < 200 KB more at peak.

    A dict took ~75 bytes a key (~0.75 MB here); the ~70,000 keys of a minute peaked at 8.5 MB
    at the stable-set round, and the agent's RSS kept it.
    """
    group = SimulatedGroup(load_scenario("steady"), 1, START_US)
    group.advance_to(TICKS_PER_SECOND)
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        group.advance_to(6 * TICKS_PER_SECOND)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(group.certification) > 8000
    assert peak - before < 200_000, peak - before


def test_a_large_key_space_gives_the_same_conflicts() -> None:
    """Multi-primary over 1,000,000 keys (a dict) detects conflicts and collects garbage."""
    scenario = from_mapping(
        {
            "name": "wide",
            "description": "d",
            "mode": "multi-primary",
            "workload": {"rate_tps": 100, "key_space": 1_000_000, "skew": 1.2},
        }
    )
    group = SimulatedGroup(scenario, 1, START_US)
    group.advance_to(61 * TICKS_PER_SECOND)
    assert isinstance(group.certification, SparseCertification)
    assert group.conflicts > 0
    assert group.gc_runs >= 2  # the round at the start and the one at 60 s
    assert 0 < len(group.certification) < 61 * 3 * 100 * 4
