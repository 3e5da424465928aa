"""The report's result tables: their one definition (Arrow schemas) and their constants.

Every other form is derived from these: the column lists :mod:`grstats.spark.report.arrow_tables`
builds, the Parquet files and CSV headers :mod:`grstats.spark.report.output` writes, and the
keys of summary.json. No pyspark here: the tables are computed with pyarrow. EVENTS is the
table's events dataset (:data:`grstats.spark.events.ARROW_EVENTS`) less GR's group name.
"""

from __future__ import annotations

import pyarrow as pa

from grstats.spark.events import ARROW_EVENTS
from grstats.spark.rollup import GAUGES, STAGES, STATES

__all__ = [
    "EPISODES",
    "EVENTS",
    "EVENT_LOG",
    "FIGURES",
    "HOURLY",
    "LAG_STAGES",
    "MIN_CHECKED_PER_MINUTE",
    "RANKINGS",
    "SERIES",
    "STAGE_NAMES",
    "STAGE_QUANTILES",
    "SWITCHOVERS",
    "WORST",
]

_TS = pa.timestamp("us", tz="UTC")
_F64, _I64, _I32, _TEXT = pa.float64(), pa.int64(), pa.int32(), pa.string()
_RATES = ("applied", "proposed", "checked")

#: A minute's conflict rate is ranked only when the group checked at least this many
#: transactions in it: 1 conflict out of 2 is not a bad minute.
MIN_CHECKED_PER_MINUTE = 100
#: The rankings of the worst minutes, in the order reports show them.
RANKINGS = ("lag_seconds", "applier_queue", "conflict_rate")


def _schema(*fields: tuple[str, pa.DataType]) -> pa.Schema:
    """A schema of nullable fields (Parquet reads every column back as nullable)."""
    return pa.schema([pa.field(name, kind, nullable=True) for name, kind in fields])


def _gauge(name: str) -> pa.DataType:
    return _F64 if name == "lag_seconds" else _I64


#: Per member (``scope`` "member") and per group (``scope`` "group", member_id null).
FIGURES = _schema(
    ("group_label", _TEXT),
    ("scope", _TEXT),
    ("member_id", _TEXT),
    ("member_host", _TEXT),
    ("member_port", _I32),
    ("first_at", _TS),
    ("last_at", _TS),
    ("snapshots", _I64),
    ("observed_s", _F64),
    *((f"{state.lower()}_s", _F64) for state in STATES),
    ("not_connected_s", _F64),
    *((f"{name}_per_s", _F64) for name in _RATES),
    ("applied", _I64),
    ("proposed", _I64),
    ("checked", _I64),
    ("conflicts", _I64),
    ("rollback", _I64),
    ("conflict_rate", _F64),
    ("rollback_ratio", _F64),
    ("cert_queue_p50", _I64),
    ("cert_queue_p95", _I64),
    ("cert_queue_max", _I64),
    ("applier_queue_p50", _I64),
    ("applier_queue_p95", _I64),
    ("applier_queue_max", _I64),
    ("rows_validating_mean", _F64),
    ("rows_validating_max", _I64),
    ("rows_validating_slope_per_h", _F64),
    ("lag_seconds_p50", _F64),
    ("lag_seconds_p95", _F64),
    ("lag_seconds_p99", _F64),
    ("lag_seconds_max", _F64),
    ("gtids_ahead_p50", _I64),
    ("gtids_ahead_max", _I64),
    ("throttling_s", _F64),
    ("unreachable_episodes", _I64),
    ("not_connected_episodes", _I64),
)
#: Islands of one state, connectedness (YES/NO) or throttling (YES/NO) of a member.
EPISODES = _schema(
    ("group_label", _TEXT),
    ("member_id", _TEXT),
    ("kind", _TEXT),
    ("value", _TEXT),
    ("start", _TS),
    ("end", _TS),
    ("duration_s", _F64),
    ("open_start", pa.bool_()),
    ("open_end", pa.bool_()),
)
#: One row per member and UTC hour.
HOURLY = _schema(
    ("group_label", _TEXT),
    ("member_id", _TEXT),
    ("hour", _TS),
    ("snapshots", _I64),
    *((f"{name}_per_s", _F64) for name in _RATES),
    ("conflict_rate", _F64),
    *(
        field
        for name in GAUGES
        for field in ((f"{name}_mean", _F64), (f"{name}_max", _gauge(name)))
    ),
    ("throttling_s", _F64),
    ("not_connected_s", _F64),
)
#: One row per ranked minute: ``rank`` 1 is the worst.
WORST = _schema(
    ("group_label", _TEXT),
    ("ranking", _TEXT),
    ("rank", _I32),
    ("minute", _TS),
    ("member_id", _TEXT),
    ("value", _F64),
)
#: One chart point per member and bucket with at least one sampled snapshot; ``samples``
#: counts the snapshots with an applier queue.
SERIES = _schema(
    ("group_label", _TEXT),
    ("member_id", _TEXT),
    ("bucket_start", _TS),
    ("samples", _I64),
    ("applier_queue_max", _I64),
    ("lag_seconds_max", _F64),
)
#: The lag by stage: the member rows' column -> the stage's name in LAG_STAGES.
STAGE_NAMES = {name: name.removesuffix("_seconds") for name in STAGES}
#: The percentiles LAG_STAGES gives of each stage.
STAGE_QUANTILES = (0.5, 0.95, 0.99)
#: One row per member and stage (transport, waiting, apply; :mod:`grstats.spark.report.stages`):
#: ``samples`` sampled snapshots gave the stage's time, of which the percentiles (from the
#: sketches) and the exact max, in seconds; ``unknown`` says why a stage without samples is
#: unknown (null when it is known): MySQL 5.7 gives no WL#7374 timestamps, or none in range.
LAG_STAGES = _schema(
    ("group_label", _TEXT),
    ("member_id", _TEXT),
    ("stage", _TEXT),
    ("samples", _I64),
    *((f"p{round(q * 100)}", _F64) for q in STAGE_QUANTILES),
    ("max", _F64),
    ("unknown", _TEXT),
)
#: The range's events, per group, in time order (the agents' replication_group_events).
EVENTS = _schema(*((f.name, f.type) for f in ARROW_EVENTS if f.name != "group_name"))
#: The GR log lines around each event of EVENTS (:func:`grstats.spark.member_log.lines_around`):
#: one row per event and line; ``event`` numbers the group's events in EVENTS' order from 1,
#: the event's time, member and type repeat it, then the line's columns
#: (``replication_group_member_log``'s; ``line_member_id`` the member whose server wrote it).
EVENT_LOG = _schema(
    ("group_label", _TEXT),
    ("event", _I64),
    ("event_time", _TS),
    ("member_id", _TEXT),
    ("event_type", _TEXT),
    ("logged", _TS),
    ("thread_id", _I64),
    ("prio", _TEXT),
    ("error_code", _TEXT),
    ("subsystem", _TEXT),
    ("data", _TEXT),
    ("line_member_id", _TEXT),
)
#: One row per primary elected in the range (:mod:`grstats.spark.report.event_tables`): when,
#: the member that was primary before and the one elected, the elected one's view, and how
#: long the group had no primary: from the first sign of the old primary's loss (null when
#: the events hold none) to the election. Then the write outage, added later (columns are
#: only ever appended): when the new primary's super_read_only turned OFF (null when its
#: events do not say), from the loss to then (to the election when unknown), and which of
#: the two ended it (SUPER_READ_ONLY or MEMBER_ROLE).
SWITCHOVERS = _schema(
    ("group_label", _TEXT),
    ("time", _TS),
    ("old_primary", _TEXT),
    ("new_primary", _TEXT),
    ("view_id", _TEXT),
    ("primary_lost_at", _TS),
    ("primary_lost_by", _TEXT),
    ("no_primary_s", _F64),
    ("writable_at", _TS),
    ("write_outage_s", _F64),
    ("write_outage_end", _TEXT),
)
