"""Compare a report read from the rollups with the same report read from the member rows."""

from __future__ import annotations

import math
from typing import Any

from grstats.spark.report.stitch import PERCENTILES, percentile_name
from grstats.spark.report.tables import STAGE_QUANTILES
from grstats.spark.sketch import LINEAR_LIMIT, RELATIVE_ACCURACY, RESOLUTION

#: Figures a rollup answers through a sketch: within RELATIVE_ACCURACY of the rows' value
#: (RESOLUTION / 2 below LINEAR_LIMIT; whole numbers rounded).
SKETCHED = frozenset(percentile_name(g, q) for g, qs in PERCENTILES.items() for q in qs)
#: The lag by stage's percentiles (lag_stages rows), in seconds like the lag's.
STAGE_PERCENTILES = frozenset(f"p{round(q * 100)}" for q in STAGE_QUANTILES)
#: What differs by design: which source, how percentiles were computed, the chart's bucket
#: (at least a minute from the rollups) and so the chart table's size.
BY_DESIGN = frozenset({"source", "percentiles", "chart_bucket_s", "chart_series"})
#: Floating-point sums added in another order; the slope's times are epoch hours in doubles
#: (about 1e-8 relative either way, see tests/spark/report/test_rollups.py).
REL = 1e-9
SLOPE_REL = 1e-7


def differences(rollups: Any, rows: Any, path: str = "") -> list[str]:
    """Return where ``rollups`` (summary.json or a part) differs from ``rows`` beyond design."""
    name = path.rsplit(".", 1)[-1]
    if name in BY_DESIGN:
        return []
    if isinstance(rows, dict) and isinstance(rollups, dict):
        found = (
            [f"{path}: keys {sorted(set(rows) ^ set(rollups))}"] if set(rows) ^ set(rollups) else []
        )
        for key in sorted(set(rows) & set(rollups)):
            found += differences(rollups[key], rows[key], f"{path}.{key}")
        return found
    if isinstance(rows, list) and isinstance(rollups, list):
        if len(rows) != len(rollups):
            return [f"{path}: {len(rollups)} items against {len(rows)}"]
        return [
            found
            for index, (left, right) in enumerate(zip(rollups, rows, strict=True))
            for found in differences(left, right, f"{path}[{index}]")
        ]
    return [] if _same_value(name, rollups, rows) else [f"{path}: {rollups!r} against {rows!r}"]


def _same_value(name: str, rollups: Any, rows: Any) -> bool:
    if name in SKETCHED | STAGE_PERCENTILES and rows is not None and rollups is not None:
        integer = not name.startswith("lag_seconds") and name not in STAGE_PERCENTILES
        linear = RESOLUTION / 2 if abs(rows) < LINEAR_LIMIT else 0.0
        allowed = max(RELATIVE_ACCURACY * abs(rows), linear) + 0.5 * integer
        return bool(abs(rollups - rows) <= allowed * (1 + 1e-9))
    if isinstance(rows, float) and isinstance(rollups, float):
        rel = SLOPE_REL if name.endswith("_slope_per_h") else REL
        return math.isclose(rollups, rows, rel_tol=rel, abs_tol=1e-9)
    return bool(rollups == rows)
