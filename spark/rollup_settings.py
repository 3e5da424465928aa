"""The settings the rollups are made with, chosen at ingest: flow-control threshold and max gap.

A table keeps one setting: each commit records it (:meth:`RollupSettings.to_json`, the
entry's ``rollup_settings``), ingest refuses other settings for a table whose rollups were
made with these, and a report reads the rollups only when its own threshold and max gap are
the same (:mod:`grstats.spark.rollup` says what they change).

No pyarrow here: the command line reads the defaults and checks the values before it knows
whether the ``spark`` extra is installed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping

#: The default flow-control threshold of the rollups' ``throttling`` (MySQL's default of
#: group_replication_flow_control_certifier_threshold and _applier_threshold).
ROLLUP_FLOW_CONTROL_THRESHOLD = 25_000
#: The largest threshold MySQL accepts for either variable (MAX_FLOW_CONTROL_THRESHOLD,
#: INT_MAX32, in the group replication plugin's plugin.cc).
MAX_FLOW_CONTROL_THRESHOLD = 2_147_483_647
#: The default longest time a snapshot holds its state for (the report's default ``max_gap_s``).
ROLLUP_MAX_GAP_S = 30.0
#: The version of what the rollups hold; a change of meaning bumps it.
ROLLUP_VERSION = 1


class RollupSettingsError(ValueError):
    """A rollup setting is invalid; the message names the field and the value."""


@dataclass(frozen=True, slots=True)
class RollupSettings:
    """What the rollups of a table are made with, chosen at ingest and kept by the table.

    Attributes:
        flow_control_threshold: a sampled ONLINE member throttles while its certifier or
            applier queue is above this size (MySQL's default 25000).
        max_gap_s: the longest time one snapshot holds its state for, in seconds.
    """

    flow_control_threshold: int = ROLLUP_FLOW_CONTROL_THRESHOLD
    max_gap_s: float = ROLLUP_MAX_GAP_S

    def __post_init__(self) -> None:
        threshold = self.flow_control_threshold
        if (
            isinstance(threshold, bool)
            or not isinstance(threshold, int)
            or not 0 < threshold <= MAX_FLOW_CONTROL_THRESHOLD
        ):
            raise RollupSettingsError(
                f"flow_control_threshold: {threshold!r} is not in [1, {MAX_FLOW_CONTROL_THRESHOLD}]"
            )
        gap = self.max_gap_s
        if (
            isinstance(gap, bool)
            or not isinstance(gap, int | float)
            or not (math.isfinite(gap) and gap > 0)
        ):
            raise RollupSettingsError(f"max_gap_s: {gap!r} is not a number of seconds > 0")
        object.__setattr__(self, "max_gap_s", float(gap))  # 10 and 10.0: one setting

    def to_json(self) -> dict[str, Any]:
        """Return the settings as a commit's log entry records them (``rollup_settings``)."""
        return {
            "version": ROLLUP_VERSION,
            "flow_control_threshold": self.flow_control_threshold,
            "max_gap_s": self.max_gap_s,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RollupSettings:
        """Return the settings :meth:`to_json` gave.

        Raises:
            RollupSettingsError: another version of the rollups, or a field missing or invalid.
        """
        version = data.get("version")
        if version != ROLLUP_VERSION:
            raise RollupSettingsError(f"version: {version!r} is not {ROLLUP_VERSION}")
        threshold: Any = data.get("flow_control_threshold")  # checked by __post_init__
        gap: Any = data.get("max_gap_s")
        return cls(threshold, gap)


#: The settings a table gets unless its ingest asks for others.
DEFAULT_SETTINGS = RollupSettings()
