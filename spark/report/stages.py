"""The lag by stage: each member's transport, waiting and apply times, from its partials.

The member rows hold, per snapshot, the stage times of the last transaction through the
member's ``group_replication_applier`` channel (``grstats.core.rows.applier.stage_seconds``):
transport (its original commit to the end of its queueing), waiting (from there to the start
of its apply) and apply (start to end). The member partials keep them over sampled snapshots
(:data:`grstats.spark.rollup.STAGES`: max, count and a sketch), so each member's percentiles
are its partials' sketches merged, as the other gauges' (:mod:`grstats.spark.report.stitch`),
and its maximum is exact. A snapshot repeats its last transaction's times until another
transaction passes, so the percentiles are over snapshots, as the lag's are.

A stage without any value is *unknown*, never 0, and the row says why
(:data:`UNKNOWN_57`, :data:`UNKNOWN_NONE`): MySQL 5.7 has no WL#7374 timestamps, which a
member's partials show as sampled snapshots none of which had WL#7374 fields (``wl7374_n``
0). Rollups and data files written before grstats took the stages hold none either (null
columns): their minutes add no value, and the reason they give is the second.

The rows are LAG_STAGES' (:mod:`grstats.spark.report.tables`): one per member and stage. No
pyspark here: this runs in the report's Python tasks and on the driver.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from grstats.spark.report.stitch import aggregate, key_columns, merged_sketches, owners
from grstats.spark.report.tables import LAG_STAGES, STAGE_NAMES, STAGE_QUANTILES
from grstats.spark.rollup import STAGES
from grstats.spark.sketch import quantile

__all__ = ["UNKNOWN_57", "UNKNOWN_NONE", "lag_stages", "member_stages"]

#: Why a member's stage is unknown when none of its sampled snapshots had WL#7374 fields.
UNKNOWN_57 = (
    "unknown: MySQL 5.7 gives no WL#7374 timestamps (no sampled snapshot of the member had them)"
)
#: Why it is unknown otherwise.
UNKNOWN_NONE = (
    "unknown: no sampled snapshot gave it (no transaction through the applier channel with "
    "its times yet, or rows ingested before grstats took the lag by stage)"
)
_MEMBER = ("group_label", "member_id")
_SORT_KEYS = [(name, "ascending") for name in (*_MEMBER, "_order")]


def member_stages(partials: pa.Table) -> pa.Table:
    """Return LAG_STAGES rows of member partials (any order, any grain): 3 per member."""
    owner_keys, row_codes = owners(partials, _MEMBER)
    count = len(owner_keys)
    sums = aggregate(
        pa.table(
            {
                "owner": row_codes,
                "wl7374_n": partials.column("wl7374_n"),
                **{f"{s}_n": partials.column(f"{s}_n") for s in STAGES},
                **{f"{s}_max": partials.column(f"{s}_max") for s in STAGES},
            }
        ),
        ("owner",),
        [
            ("wl7374_n", "sum"),
            *((f"{s}_n", "sum") for s in STAGES),
            *((f"{s}_max", "max") for s in STAGES),
        ],
    )
    found = {row.pop("owner"): row for row in sums.to_pylist()}
    keys = key_columns(owner_keys, _MEMBER)
    labels, members = keys["group_label"].to_pylist(), keys["member_id"].to_pylist()
    rows: list[dict[str, object]] = []
    sketches = {
        s: merged_sketches(partials.column(f"{s}_sketch"), row_codes, count) for s in STAGES
    }
    for owner in range(count):
        totals = found[owner]
        for stage in STAGES:
            samples = totals[f"{stage}_n"] or 0
            rows.append(
                {
                    "group_label": labels[owner],
                    "member_id": members[owner],
                    "stage": STAGE_NAMES[stage],
                    "samples": samples,
                    **{
                        f"p{round(q * 100)}": quantile(sketches[stage][owner], q, integer=False)
                        for q in STAGE_QUANTILES
                    },
                    "max": totals[f"{stage}_max"],
                    "unknown": _unknown(samples, totals["wl7374_n"]),
                }
            )
    return pa.Table.from_pylist(rows, schema=LAG_STAGES)


def _unknown(samples: int, timed: int | None) -> str | None:
    """Why a stage with ``samples`` values is unknown (None: it is known)."""
    if samples:
        return None
    return UNKNOWN_57 if timed == 0 else UNKNOWN_NONE


def lag_stages(rows: pa.Table) -> pa.Table:
    """LAG_STAGES ``rows`` in report order: by group, member, then transport, waiting, apply."""
    order = pc.index_in(rows.column("stage"), value_set=pa.array(list(STAGE_NAMES.values())))
    ranked = rows.append_column("_order", order)
    return ranked.take(pc.sort_indices(ranked, sort_keys=_SORT_KEYS)).drop_columns(["_order"])
