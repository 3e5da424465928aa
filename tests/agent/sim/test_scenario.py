"""Scenarios: the built-ins load, and a bad file is an error naming the key and the value."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from grstats.agent.sim.scenario import from_mapping, list_scenarios, load_scenario
from grstats.core.errors import ConfigError

if TYPE_CHECKING:
    from pathlib import Path

REQUIRED = {
    "steady",
    "slow-secondary",
    "multi-primary-conflicts",
    "crash-rejoin",
    "primary-failover",
}


def test_builtin_scenarios() -> None:
    """The issue's five scenarios (and more) ship, each with a one-line description."""
    scenarios = list_scenarios()
    assert {s.name for s in scenarios} >= REQUIRED
    for scenario in scenarios:
        assert scenario.description
        assert "\n" not in scenario.description
        assert load_scenario(scenario.name) == scenario


def test_load_by_path(tmp_path: Path) -> None:
    """A scenario can be given as a path to a TOML file."""
    path = tmp_path / "mine.toml"
    path.write_text('name = "mine"\ndescription = "x"\nmembers = 5\n[workload]\nrate_tps = 10\n')
    scenario = load_scenario(str(path))
    assert (scenario.name, scenario.members, scenario.workload.rate_tps) == ("mine", 5, 10.0)


def base(**changes: object) -> dict[str, object]:
    """A valid scenario mapping with ``changes``."""
    return {"name": "t", "description": "d", **changes}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        pytest.param(base(mode="dual"), "mode: 'dual'", id="bad-mode"),
        pytest.param(base(members=10), "members: 10", id="too-many-members"),
        pytest.param(base(workload={"rate_tps": -1}), "workload.rate_tps: -1", id="negative-rate"),
        pytest.param(
            base(workload={"writers": "some"}), "workload.writers: 'some'", id="bad-writers"
        ),
        pytest.param(
            base(events=[{"at": 1, "action": "explode", "member": 0}]),
            "events[0].action",
            id="bad-action",
        ),
        pytest.param(
            base(events=[{"at": 1, "action": "rate", "member": 0}]),
            "events[0].value",
            id="rate-needs-value",
        ),
        pytest.param(
            base(events=[{"at": 1, "action": "crash", "member": 5}]),
            "events[0].member: 5",
            id="member-out-of-group",
        ),
        pytest.param(
            base(flow_control={"period": 0}), "flow_control_period: 0", id="bad-flow-control"
        ),
        pytest.param(base(flow_control={"nope": 1}), "flow_control", id="unknown-flow-control-key"),
        pytest.param(base(version="eight"), "version: 'eight'", id="bad-version"),
        pytest.param({"description": "d"}, "name: None", id="missing-name"),
        pytest.param(
            base(members=3, events=[{"at": 1, "action": "block", "member": 0}]),
            "events[0].members: None",
            id="block-needs-members",
        ),
        pytest.param(
            base(members=3, events=[{"at": 1, "action": "block", "member": 0, "members": [0, 1]}]),
            r"events[0].members: [0, 1] .*without it",
            id="block-of-itself",
        ),
    ],
)
def test_bad_scenarios_name_the_key(data: dict[str, object], message: str) -> None:
    """A scenario with a bad value raises ConfigError naming the key and the value."""
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        from_mapping(data)


def test_unknown_scenario_lists_the_builtins() -> None:
    """An unknown name is an error that lists the built-in scenarios."""
    with pytest.raises(ConfigError, match="steady"):
        load_scenario("no-such-scenario")


def test_resizing_checks_the_events() -> None:
    """Shrinking a scenario below a member its events name is an error naming the event."""
    assert load_scenario("steady").with_members(9).members == 9
    with pytest.raises(ConfigError, match=r"events\[0\]\.member: 2"):
        load_scenario("crash-rejoin").with_members(2)
