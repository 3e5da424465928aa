"""Spools for the ingest tests, and the slow, obvious reading of a spool they are checked against.

``make_record`` builds a schema-1 record the way the collector does (every column of the four
tables plus the extended ones); ``write_spool`` writes segments of records through the
collector's own writer; ``expected_rows`` reads a spool with the collector's reader and joins
the tables with dicts, one cell at a time: the oracle for the fast, columnar decoder.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from grstats.collector.compression import Compression
from grstats.collector.records import TABLE_NAMES, table_rows
from grstats.collector.spool import (
    SpoolSettings,
    SpoolWriter,
    SyncPolicy,
    read_records,
    sealed_segments,
)
from grstats.core.gtid import GtidSet
from grstats.core.rows import EXTENDED_COLUMNS, TABLES

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

GROUP = "aaaaaaaa-bbbb-cccc-dddd-000000000000"
MEMBER_IDS = [f"00000000-0000-0000-0000-00000000000{i}" for i in range(1, 4)]
T0_US = 1_767_571_200_000_000  # 2026-01-05 00:00:00 UTC
COLUMNS = {
    name: [column.name for column in (*TABLES[name].columns, *EXTENDED_COLUMNS)]
    for name in TABLE_NAMES
}


def make_record(
    second: int,
    members: Iterable[str] = MEMBER_IDS,
    *,
    group: tuple[str, str] | None = None,
    agent_label: str | None = None,
    **cells: Any,
) -> dict[str, Any]:
    """A record collected ``second`` seconds after T0; ``cells`` override columns by name.

    ``group`` (label, GR group name) adds the group keys; without it the record is one written
    before records named their group. ``agent_label`` adds ``agent_group_label`` (the group's
    label as the agent answered it); without it the record is one written before that key.
    """
    now = T0_US + second * 1_000_000
    tables: dict[str, dict[str, Any]] = {
        name: {"columns": COLUMNS[name], "rows": []} for name in TABLE_NAMES
    }
    for index, member in enumerate(members):
        applied = 1000 * second + index
        values: dict[str, Any] = {
            "CHANNEL_NAME": "group_replication_applier",
            "MEMBER_ID": member,
            "MEMBER_HOST": f"db{index + 1}",
            "MEMBER_PORT": 3306,
            "MEMBER_STATE": "ONLINE",
            "MEMBER_ROLE": "PRIMARY" if index == 0 else "SECONDARY",
            "MEMBER_VERSION": "8.0.36",
            "MEMBER_COMMUNICATION_STACK": "XCom",
            "VIEW_ID": "17675712000000001:3",
            "COUNT_TRANSACTIONS_IN_QUEUE": index,
            "COUNT_TRANSACTIONS_CHECKED": applied * 2,
            "COUNT_CONFLICTS_DETECTED": second,
            "COUNT_TRANSACTIONS_ROWS_VALIDATING": 40 + index,
            "TRANSACTIONS_COMMITTED_ALL_MEMBERS": f"{GROUP}:1-{1000 * second}" if second else "",
            "LAST_CONFLICT_FREE_TRANSACTION": f"{GROUP}:{1000 * second}",
            "COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE": 7 * index,
            "COUNT_TRANSACTIONS_REMOTE_APPLIED": applied,
            "COUNT_TRANSACTIONS_LOCAL_PROPOSED": applied // 3,
            "COUNT_TRANSACTIONS_LOCAL_ROLLBACK": index,
            "APPLIER_LAG_SECONDS": 0.25 * index if index != 2 else None,
            "TRANSPORT_SECONDS": 0.002 * (index + 1),
            "WAITING_SECONDS": 0.125 * index,
            "APPLY_SECONDS": 0.001 if index != 2 else None,
            "GTID_EXECUTED": f"{GROUP}:1-{applied}",
            "CONNECTED": "YES" if index != 1 else "NO",
            "IN_VIEW": "YES",
            "LAST_SEEN": now - 1000 * index,
            "AGE_MS": index if index != 2 else None,
            "SOURCE": f"db{index + 1}:7400",
        }
        for name in TABLES["replication_group_member_lag"].column_names:
            if name.endswith("TIMESTAMP"):
                values[name] = now - 5000 if "APPLYING" not in name else 0  # 0: MySQL's zero
            elif name.endswith("TRANSACTION"):
                values[name] = f"{GROUP}:{applied}"
        values.update(cells)
        for name in TABLE_NAMES:
            tables[name]["rows"].append([values.get(column) for column in COLUMNS[name]])
    return {
        "schema": 1,
        "collected_at_us": now,
        "agent": "db1:7400",
        "agent_member": MEMBER_IDS[0],
        "served_at_us": now + 1500,
        "tables": tables,
    } | (
        ({} if group is None else {"group_label": group[0], "group_name": group[1]})
        | ({} if agent_label is None else {"agent_group_label": agent_label})
    )


def write_spool(
    spool: Path,
    segments: list[list[dict[str, Any]]],
    compression: Compression = Compression.NONE,
) -> list[Path]:
    """Write each list of records as one sealed segment of ``spool``; return their paths.

    The segments are stored plain unless ``compression`` says otherwise, as a collector
    before compression wrote them (the tests that damage frames find them at their offsets).
    """
    settings = SpoolSettings(sync=SyncPolicy.SEAL, compression=compression)
    with SpoolWriter(spool, settings) as writer:
        for records in segments:
            for record in records:
                writer.append(record)
            writer.roll()
    return sealed_segments(spool)


def _timestamp(value: int | None) -> dt.datetime | None:
    if not value:
        return None
    return dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=value)


def _yes(value: str | None) -> bool | None:
    return None if value is None else value == "YES"


def _count(text: str | None) -> int | None:
    return None if text is None else GtidSet.parse(text).count()


def _ahead(executed: str | None, committed: str | None) -> int | None:
    if not executed or not committed:
        return None
    return (GtidSet.parse(executed) - GtidSet.parse(committed)).count()


def expected_rows(segments: Iterable[Path]) -> list[dict[str, Any]]:
    """The member rows of ``segments``, read the slow, obvious way, in spool order."""
    rows = []
    for path in segments:
        for offset, record in read_records(path):
            by_table: dict[str, dict[Any, dict[str, Any]]] = {
                name: {row["MEMBER_ID"]: row for row in table_rows(record, name)}
                for name in TABLE_NAMES[1:]
            }
            members: list[dict[str, Any]] = table_rows(record, TABLE_NAMES[0])
            for member in members:
                stats = by_table[TABLE_NAMES[1]].get(member["MEMBER_ID"], {})
                lag = by_table[TABLE_NAMES[2]].get(member["MEMBER_ID"], {})
                gtids = by_table[TABLE_NAMES[3]].get(member["MEMBER_ID"], {})
                collected = _timestamp(record["collected_at_us"])
                assert collected is not None
                row = {
                    "collected_at": collected,
                    "collected_date": collected.date(),
                    "agent": record["agent"],
                    "served_at": _timestamp(record.get("served_at_us")),
                    "member_id": member["MEMBER_ID"],
                    "member_host": member.get("MEMBER_HOST"),
                    "member_port": member.get("MEMBER_PORT"),
                    "member_state": member.get("MEMBER_STATE"),
                    "member_role": member.get("MEMBER_ROLE"),
                    "member_version": member.get("MEMBER_VERSION"),
                    "view_id": stats.get("VIEW_ID"),
                }
                for name in (
                    "COUNT_TRANSACTIONS_IN_QUEUE",
                    "COUNT_TRANSACTIONS_CHECKED",
                    "COUNT_CONFLICTS_DETECTED",
                    "COUNT_TRANSACTIONS_ROWS_VALIDATING",
                    "COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE",
                    "COUNT_TRANSACTIONS_REMOTE_APPLIED",
                    "COUNT_TRANSACTIONS_LOCAL_PROPOSED",
                    "COUNT_TRANSACTIONS_LOCAL_ROLLBACK",
                    "TRANSACTIONS_COMMITTED_ALL_MEMBERS",
                    "LAST_CONFLICT_FREE_TRANSACTION",
                ):
                    row[name.lower()] = stats.get(name)
                row |= {
                    "last_applied_transaction": lag.get("LAST_APPLIED_TRANSACTION"),
                    "last_applied_original_commit": _timestamp(
                        lag.get("LAST_APPLIED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP")
                    ),
                    "last_applied_end_apply": _timestamp(
                        lag.get("LAST_APPLIED_TRANSACTION_END_APPLY_TIMESTAMP")
                    ),
                    "applying_transaction": lag.get("APPLYING_TRANSACTION"),
                    "applying_original_commit": _timestamp(
                        lag.get("APPLYING_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP")
                    ),
                    "applier_lag_seconds": lag.get("APPLIER_LAG_SECONDS"),
                    "gtid_executed": gtids.get("GTID_EXECUTED"),
                    "gtid_executed_count": _count(gtids.get("GTID_EXECUTED")),
                    "gtids_ahead_of_committed_all": _ahead(
                        gtids.get("GTID_EXECUTED"), stats.get("TRANSACTIONS_COMMITTED_ALL_MEMBERS")
                    ),
                    "connected": _yes(member.get("CONNECTED")),
                    "in_view": _yes(member.get("IN_VIEW")),
                    "last_seen": _timestamp(member.get("LAST_SEEN")),
                    "age_ms": member.get("AGE_MS"),
                    "segment": path.name,
                    "record_offset": offset,
                    "group_label": record.get("group_label", "default"),
                    "group_name": record.get("group_name", ""),
                    "agent_group_label": record.get("agent_group_label", ""),
                    "transport_seconds": lag.get("TRANSPORT_SECONDS"),
                    "waiting_seconds": lag.get("WAITING_SECONDS"),
                    "apply_seconds": lag.get("APPLY_SECONDS"),
                }
                rows.append(row)
    return rows


def row_key(row: dict[str, Any]) -> tuple[str, int, str]:
    """Sort rows the way the spool holds them."""
    return (row["segment"], row["record_offset"], row["member_id"])
