"""``sys.gr_member_routing_candidate_status``: the view ProxySQL's Group Replication check reads.

It is no part of MySQL's own sys schema: DBAs add it with ``addition_to_sys.sql`` (Lefred's
mysql_gr_routing_check, with the ``transactions_to_cert`` column and the local member's row
only as grpubr/mysql_gr_routing_check's ``addition_to_sys.sql`` defines it), and ProxySQL's
monitor runs ``SELECT viable_candidate,read_only,transactions_behind FROM
sys.gr_member_routing_candidate_status`` on each member (lib/MySQL_Monitor.cpp,
``monitor_group_replication_thread``), taking a member out of its writer or reader group by
the answer. The endpoint answers it from the tables it serves, as the script's definition
computes it on the member:

* ``viable_candidate``: ``sys.gr_member_in_primary_partition()``, ``YES`` when the local
  member is ONLINE and fewer than half of replication_group_members' rows are not ONLINE
  (``(non_online >= total/2) = 0``), else ``NO``;
* ``read_only``: ``NO`` when ``read_only`` and ``super_read_only`` are both OFF, else ``YES``;
* ``transactions_behind``: ``sys.gr_applier_queue_length()``, the count of the applier
  channel's received GTIDs not yet executed (the agent's ``transactions_behind``); its
  ``gtid_count`` of NULL is 0 (its loop never runs), so a member with no such channel shows 0;
* ``transactions_to_cert``: the member's COUNT_TRANSACTIONS_IN_QUEUE.

One row, from the local member's replication_group_member_stats row (``WHERE member_id =
server_uuid``); none while the agent has no such row.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from grstats.core.rows import Column, Kind, Table

if TYPE_CHECKING:
    from collections.abc import Sequence

    from grstats.core.rows import Value

SYS_SCHEMA = "sys"
ROUTING_CANDIDATE_STATUS = Table(
    "gr_member_routing_candidate_status",
    (
        Column("viable_candidate", "VARCHAR(3)", nullable=True, kind=Kind.TEXT),
        Column("read_only", "VARCHAR(3)", nullable=False, kind=Kind.TEXT),
        Column("transactions_behind", "INT", nullable=True, kind=Kind.INTEGER),
        Column("transactions_to_cert", "BIGINT UNSIGNED", nullable=True, kind=Kind.INTEGER),
    ),
)
#: The sys schema's views the endpoint answers, by name.
VIEWS = {ROUTING_CANDIDATE_STATUS.name: ROUTING_CANDIDATE_STATUS}


def _named(columns: Sequence[Column], row: Sequence[Value]) -> dict[str, Value]:
    return {column.name.upper(): value for column, value in zip(columns, row, strict=True)}


def viable_candidate(own_state: str, states: Sequence[str]) -> str:
    """``gr_member_in_primary_partition()``: YES if the member is ONLINE in a majority."""
    not_online = sum(1 for state in states if state != "ONLINE")
    return "YES" if own_state == "ONLINE" and not not_online >= len(states) / 2 else "NO"


def routing_candidate_rows(  # noqa: PLR0913  (the view reads two tables and three values)
    member_id: str,
    members: tuple[Sequence[Column], Sequence[Sequence[Value]]],
    stats: tuple[Sequence[Column], Sequence[Sequence[Value]]],
    *,
    read_only: bool,
    super_read_only: bool,
    transactions_behind: int | None,
) -> list[tuple[Value, ...]]:
    """The view's rows for the local member ``member_id`` (one, or none without its stats)."""
    member_rows = [_named(members[0], row) for row in members[1]]
    states = [str(row["MEMBER_STATE"]) for row in member_rows]
    own = next((row for row in member_rows if row["MEMBER_ID"] == member_id), None)
    viable = viable_candidate(str(own["MEMBER_STATE"]), states) if own is not None else None
    flag = "YES" if read_only or super_read_only else "NO"
    behind = transactions_behind or 0
    own_stats = [_named(stats[0], values) for values in stats[1]]
    return [
        (viable, flag, behind, row["COUNT_TRANSACTIONS_IN_QUEUE"])
        for row in own_stats
        if row["MEMBER_ID"] == member_id
    ]
