"""The member model's own checks: FlowControlSettings holds MySQL's ranges and defaults."""

from __future__ import annotations

import pytest

from grstats.core.errors import ConfigError
from grstats.core.model import FlowControlSettings


class TestFlowControlSettings:
    def test_defaults_are_mysqls(self) -> None:
        """Without arguments the settings are MySQL's defaults (QUOTA, 25000, period 1)."""
        settings = FlowControlSettings()
        assert (settings.mode, settings.certifier_threshold, settings.applier_threshold) == (
            "QUOTA",
            25000,
            25000,
        )
        assert (settings.period, settings.hold_percent, settings.release_percent) == (1, 10, 50)

    def test_bounds_are_accepted(self) -> None:
        """Each variable's lowest and highest value is accepted."""
        FlowControlSettings(mode="DISABLED", period=60, hold_percent=100, release_percent=1000)
        FlowControlSettings(period=1, hold_percent=0, release_percent=0, max_quota=2_147_483_647)

    @pytest.mark.parametrize(
        ("changes", "message"),
        [
            ({"hold_percent": 101}, "group_replication_flow_control_hold_percent: 101 is not in 0..100"),
            ({"period": 0}, "group_replication_flow_control_period: 0 is not in 1..60"),
            ({"max_quota": 2**31}, "group_replication_flow_control_max_quota: 2147483648 is not in 0..2147483647"),
            ({"period": True}, "group_replication_flow_control_period: True is not in 1..60"),
            ({"mode": "FAST"}, "group_replication_flow_control_mode: 'FAST' is not QUOTA or DISABLED"),
        ],
    )  # fmt: skip
    def test_out_of_range_names_the_variable(
        self, changes: dict[str, object], message: str
    ) -> None:
        """A value outside MySQL's range is refused, naming the variable and the value."""
        with pytest.raises(ConfigError) as caught:
            FlowControlSettings(**changes)  # type: ignore[arg-type]
        assert str(caught.value) == message
