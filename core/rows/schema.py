"""The tables grstats serves: column names, order, SQL types and NULL rules, in one place.

``replication_group_members`` and ``replication_group_member_stats`` are MySQL's own tables
(``storage/perfschema/table_replication_group_members.cc`` and
``table_replication_group_member_stats.cc``) and are served exactly as MySQL defines them. The
others are grstats's own: ``replication_group_member_lag`` holds the WL#7374
transaction-monitoring columns of each member's ``group_replication_applier`` channel, named as
MySQL names them in ``replication_connection_status`` (queue) and
``replication_applier_status_by_worker`` (apply) (``table_replication_connection_status.cc``,
``table_replication_applier_status_by_worker.cc``), plus the lag in seconds that MySQL does not
compute, and ProxySQL's TRANSACTIONS_BEHIND;
``replication_group_member_gtid_executed`` holds each member's ``gtid_executed``;
``replication_group_status`` (one row) and ``replication_group_member_status`` (one per member)
hold the group's verdict in MySQL Shell's terms (``cluster.status()``), see
:mod:`grstats.core.verdict`; ``replication_group_member_views`` holds what each member's own
server says of every member, see :mod:`grstats.agent.views`.

WARNING: ONLY APPEND to these column lists. Their order is what users, the collector's spool
and the Spark schema see; MySQL too only ever appended columns (WL#10380).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Kind(enum.Enum):
    """How a column's values are held and rendered."""

    TEXT = "text"  #: str, printed as is
    INTEGER = "integer"  #: int, right-aligned in tables, a JSON number
    TIMESTAMP = "timestamp"  #: int µs since the epoch, printed as TIMESTAMP(6); 0 means unset
    DECIMAL = "decimal"  #: float, printed with 6 decimals (DECIMAL(20,6)), a JSON number


@dataclass(frozen=True, slots=True)
class Column:
    """One column: its exact MySQL name, declared SQL type, nullability and value kind.

    ``collation`` is a text column's collation where it is not its table's default
    (``utf8mb4_0900_ai_ci``, performance_schema's): MySQL's DDL gives ``utf8mb4_bin`` to
    identifiers and states, ``ascii_general_ci`` to host names. Its character set is the
    collation's first word. ``comment`` is its COMMENT in MySQL's DDL ('' for none).
    """

    name: str
    sql_type: str
    nullable: bool
    kind: Kind
    collation: str | None = None
    comment: str = ""

    @property
    def field(self) -> str:
        """The attribute name that holds this column in a row object (lowercase name)."""
        return self.name.lower()


@dataclass(frozen=True, slots=True)
class Table:
    """A table: its name and its columns in MySQL's order."""

    name: str
    columns: tuple[Column, ...]

    @property
    def column_names(self) -> tuple[str, ...]:
        """The column names in order."""
        return tuple(column.name for column in self.columns)

    def column(self, name: str) -> Column:
        """Return the column called ``name``."""
        for column in self.columns:
            if column.name == name:
                return column
        raise KeyError(f"{self.name} has no column {name!r}")


#: The collations of MySQL's DDL (storage/perfschema/table_replication_group_members.cc,
#: ``m_table_def``): ``collate utf8mb4_bin`` and ``CHARACTER SET ASCII``.
BIN = "utf8mb4_bin"
ASCII = "ascii_general_ci"


def _text(
    name: str, sql_type: str, *, nullable: bool = False, collation: str | None = None
) -> Column:
    return Column(name, sql_type, nullable, Kind.TEXT, collation)


def _count(name: str) -> Column:
    return Column(name, "BIGINT UNSIGNED", nullable=False, kind=Kind.INTEGER)


def _timestamp(name: str) -> Column:
    return Column(name, "TIMESTAMP(6)", nullable=False, kind=Kind.TIMESTAMP)


#: Every Group Replication row's CHANNEL_NAME.
GROUP_REPLICATION_APPLIER = "group_replication_applier"

#: performance_schema.replication_group_members, 8.0.27+: 8 columns
#: (storage/perfschema/table_replication_group_members.cc).
REPLICATION_GROUP_MEMBERS = Table(
    "replication_group_members",
    (
        _text("CHANNEL_NAME", "CHAR(64)"),
        _text("MEMBER_ID", "CHAR(36)", collation=BIN),
        _text("MEMBER_HOST", "CHAR(255)", collation=ASCII),
        Column("MEMBER_PORT", "INTEGER", nullable=True, kind=Kind.INTEGER),
        _text("MEMBER_STATE", "CHAR(64)", collation=BIN),
        _text("MEMBER_ROLE", "CHAR(64)", collation=BIN),  # 8.0.2+ (WL#10380)
        _text("MEMBER_VERSION", "CHAR(64)", collation=BIN),  # 8.0.2+ (WL#10380)
        _text("MEMBER_COMMUNICATION_STACK", "CHAR(64)", collation=BIN),  # 8.0.27+
    ),
)

#: performance_schema.replication_group_member_stats, 8.0.2+: 13 columns, all NOT NULL
#: (storage/perfschema/table_replication_group_member_stats.cc).
REPLICATION_GROUP_MEMBER_STATS = Table(
    "replication_group_member_stats",
    (
        _text("CHANNEL_NAME", "CHAR(64)"),
        _text("VIEW_ID", "CHAR(60)", collation=BIN),
        _text("MEMBER_ID", "CHAR(36)", collation=BIN),
        _count("COUNT_TRANSACTIONS_IN_QUEUE"),
        _count("COUNT_TRANSACTIONS_CHECKED"),
        _count("COUNT_CONFLICTS_DETECTED"),
        _count("COUNT_TRANSACTIONS_ROWS_VALIDATING"),
        _text("TRANSACTIONS_COMMITTED_ALL_MEMBERS", "LONGTEXT"),
        _text("LAST_CONFLICT_FREE_TRANSACTION", "TEXT"),
        _count("COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE"),  # columns 9-12: 8.0.2+ (WL#10380)
        _count("COUNT_TRANSACTIONS_REMOTE_APPLIED"),
        _count("COUNT_TRANSACTIONS_LOCAL_PROPOSED"),
        _count("COUNT_TRANSACTIONS_LOCAL_ROLLBACK"),
    ),
)

#: MySQL 5.7's replication_group_member_stats has only the first 9 columns (WL#10380).
MYSQL57_STATS_COLUMNS = 9

#: grstats's lag table: WL#7374 fields of the group_replication_applier channel.
#: Transaction columns are CHAR(90), the 8.3+ width that holds tagged GTIDs.
REPLICATION_GROUP_MEMBER_LAG = Table(
    "replication_group_member_lag",
    (
        _text("CHANNEL_NAME", "CHAR(64)"),
        _text("MEMBER_ID", "CHAR(36)", collation=BIN),
        # replication_connection_status, columns 11-19
        _text("LAST_QUEUED_TRANSACTION", "CHAR(90)", nullable=True),
        _timestamp("LAST_QUEUED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP"),
        _timestamp("LAST_QUEUED_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP"),
        _timestamp("LAST_QUEUED_TRANSACTION_START_QUEUE_TIMESTAMP"),
        _timestamp("LAST_QUEUED_TRANSACTION_END_QUEUE_TIMESTAMP"),
        _text("QUEUEING_TRANSACTION", "CHAR(90)", nullable=True),
        _timestamp("QUEUEING_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP"),
        _timestamp("QUEUEING_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP"),
        _timestamp("QUEUEING_TRANSACTION_START_QUEUE_TIMESTAMP"),
        # replication_applier_status_by_worker, columns 7-15
        _text("LAST_APPLIED_TRANSACTION", "CHAR(90)", nullable=True),
        _timestamp("LAST_APPLIED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP"),
        _timestamp("LAST_APPLIED_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP"),
        _timestamp("LAST_APPLIED_TRANSACTION_START_APPLY_TIMESTAMP"),
        _timestamp("LAST_APPLIED_TRANSACTION_END_APPLY_TIMESTAMP"),
        _text("APPLYING_TRANSACTION", "CHAR(90)", nullable=True),
        _timestamp("APPLYING_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP"),
        _timestamp("APPLYING_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP"),
        _timestamp("APPLYING_TRANSACTION_START_APPLY_TIMESTAMP"),
        # grstats: how far behind the member is, in seconds (see agent.rows.applier.lag_seconds)
        Column("APPLIER_LAG_SECONDS", "DECIMAL(20,6)", nullable=True, kind=Kind.DECIMAL),
        # grstats: transactions received from the group and not applied yet, ProxySQL's
        # transactions_behind (see agent.model.MemberSnapshot); NULL when unknown
        Column("TRANSACTIONS_BEHIND", "BIGINT UNSIGNED", nullable=True, kind=Kind.INTEGER),
        # grstats: the lag by stage, seconds (see agent.rows.applier.stage_seconds): the last
        # queued transaction's original commit to the end of its queueing, the last applied
        # one's wait before its apply and its apply; NULL when a time is unknown (MySQL 5.7)
        Column("TRANSPORT_SECONDS", "DECIMAL(20,6)", nullable=True, kind=Kind.DECIMAL),
        Column("WAITING_SECONDS", "DECIMAL(20,6)", nullable=True, kind=Kind.DECIMAL),
        Column("APPLY_SECONDS", "DECIMAL(20,6)", nullable=True, kind=Kind.DECIMAL),
    ),
)

#: grstats's table of each member's ``@@GLOBAL.gtid_executed`` (``Gtid_set::to_string`` text),
#: as sampled on the same wall-clock mark by every member, and when (SAMPLED_AT, on the serving
#: agent's clock; unset while none was received).
REPLICATION_GROUP_MEMBER_GTID_EXECUTED = Table(
    "replication_group_member_gtid_executed",
    (
        _text("MEMBER_ID", "CHAR(36)", collation=BIN),
        _text("GTID_EXECUTED", "LONGTEXT"),
        _timestamp("SAMPLED_AT"),
    ),
)


def _yes_no(name: str) -> Column:
    return Column(name, "ENUM('YES','NO')", nullable=False, kind=Kind.TEXT)


def _on_off(name: str) -> Column:
    return Column(name, "ENUM('ON','OFF')", nullable=True, kind=Kind.TEXT)


def _queue(name: str) -> Column:
    return Column(name, "BIGINT UNSIGNED", nullable=True, kind=Kind.INTEGER)


#: grstats's group verdict, one row: MySQL Shell's ``status`` and ``statusText`` of
#: ``cluster.status()`` (modules/adminapi/cluster/status.cc, ``Status::check_group_status``),
#: how many more failures keep quorum, the mode, the primaries and flow control's state.
REPLICATION_GROUP_STATUS = Table(
    "replication_group_status",
    (
        _text("GROUP_NAME", "CHAR(36)", collation=BIN),
        _text("VIEW_ID", "CHAR(60)", collation=BIN),
        _text("STATUS", "CHAR(32)"),
        _text("STATUS_TEXT", "TEXT"),
        _count("TOLERANCE"),
        _text("MODE", "CHAR(16)"),  # single-primary, multi-primary, or '' when unknown
        _text("PRIMARY_MEMBERS", "TEXT"),  # MEMBER_IDs, comma-separated
        _yes_no("THROTTLED"),
        _text("THROTTLED_BY", "TEXT"),  # MEMBER_IDs, comma-separated
        _timestamp("AS_OF"),
        # the group's human name: its InnoDB Cluster name, else the agents' group_label
        _text("GROUP_LABEL", "VARCHAR(63)"),
        # seconds TRANSACTIONS_COMMITTED_ALL_MEMBERS has not advanced while transactions were
        # certified, from two broadcast rounds on (agent.stable_set); NULL while it advances
        Column("STABLE_SET_STALLED_S", "BIGINT UNSIGNED", nullable=True, kind=Kind.INTEGER),
        _text("STABLE_SET_HELD_BY", "TEXT"),  # MEMBER_IDs holding it back, comma-separated
        # COUNT_TRANSACTIONS_ROWS_VALIDATING's growth over the last minute while it is stalled
        Column("ROWS_VALIDATING_PER_MINUTE", "BIGINT", nullable=True, kind=Kind.INTEGER),
    ),
)

#: grstats's per-member part of the verdict: each member's state, role, freshness, lag,
#: queues, read-only flags and whether flow control holds its writers back.
REPLICATION_GROUP_MEMBER_STATUS = Table(
    "replication_group_member_status",
    (
        _text("MEMBER_ID", "CHAR(36)", collation=BIN),
        _text("MEMBER_HOST", "CHAR(255)", collation=ASCII),
        Column("MEMBER_PORT", "INTEGER", nullable=True, kind=Kind.INTEGER),
        _text("MEMBER_STATE", "CHAR(64)", collation=BIN),
        _text("MEMBER_ROLE", "CHAR(64)", collation=BIN),
        _text("MEMBER_VERSION", "CHAR(64)", collation=BIN),
        _yes_no("CONNECTED"),
        Column("AGE_MS", "BIGINT UNSIGNED", nullable=True, kind=Kind.INTEGER),
        Column("APPLIER_LAG_SECONDS", "DECIMAL(20,6)", nullable=True, kind=Kind.DECIMAL),
        _queue("APPLIER_QUEUE"),  # COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE
        _queue("CERTIFIER_QUEUE"),  # COUNT_TRANSACTIONS_IN_QUEUE
        _queue("TRANSACTIONS_BEHIND"),
        _on_off("READ_ONLY"),
        _on_off("SUPER_READ_ONLY"),
        _yes_no("THROTTLING"),
        # grstats: the member's clock minus the median of the members' clocks, ms (see
        # agent.gossip.clocks), at most 24 days either way; NULL while its clock is not known
        Column("CLOCK_SKEW_MS", "INTEGER", nullable=True, kind=Kind.INTEGER),
        # grstats: the GTIDs of the member's gtid_executed the group does not have, MySQL's
        # text ('' for none; see agent.errant); NULL while no set of the same instant is known
        _text("ERRANT_TRANSACTIONS", "LONGTEXT", nullable=True),
        # grstats: YES while the member is split from the group's view, MySQL Shell's
        # "split-brain!" (absent from it or UNREACHABLE in it while its own server says ONLINE
        # or RECOVERING: agent.known.split_state); MEMBER_STATE stays the group view's
        _yes_no("SPLIT_BRAIN"),
        # grstats: the member's group_replication_member_weight (0..100) as its agent gossips
        # it; NULL where not heard (an older agent, or a server before 5.7.20): the next
        # primary forecast counts it at MySQL's default 50 (agent.election)
        Column("MEMBER_WEIGHT", "INTEGER", nullable=True, kind=Kind.INTEGER),
        # grstats: a RECOVERING member's or an applier backlog's progress (agent.recovery):
        # the transactions left, those applied per second over the last minute, and the
        # seconds until none is left (0: none is; NULL while they do not fall); NULL where
        # the agent does not know it (a RECOVERING member's is known to its own agent)
        _queue("TRANSACTIONS_LEFT"),
        Column("APPLY_RATE", "DECIMAL(20,6)", nullable=True, kind=Kind.DECIMAL),
        Column("ETA_S", "DECIMAL(20,6)", nullable=True, kind=Kind.DECIMAL),
    ),
)

#: grstats's table of what happened to the members (agent.events): each member's events as
#: its own agent recorded them, from every member, ordered by EVENT_TIME. EVENT_TIME is on the
#: clock of the member that reported it (REPORTED_BY), so every agent serves the same rows.
REPLICATION_GROUP_EVENTS = Table(
    "replication_group_events",
    (
        _timestamp("EVENT_TIME"),
        _text("MEMBER_ID", "CHAR(36)", collation=BIN),  # the member it happened to
        _text("EVENT_TYPE", "CHAR(32)"),  # agent.rows.events.EventType
        _text("OLD_VALUE", "CHAR(64)"),  # what it was ('' when nothing was)
        _text("NEW_VALUE", "CHAR(64)"),  # what it became ('' when nothing is)
        _text("VIEW_ID", "CHAR(60)", collation=BIN),  # the reporting member's view then
        _text("REPORTED_BY", "CHAR(36)", collation=BIN),  # the member whose agent recorded it
        _text("DETAIL", "TEXT"),
    ),
)

#: grstats's table of each member's own view (issue 47): one row per observer and member, the
#: MEMBER_STATE the observer's own server gives the member in its replication_group_members
#: (``get_group_members_info`` in plugin/group_replication/src/ps_information.cc: the
#: observer's view, UNREACHABLE where its failure detector suspects the member), or NOT_LISTED
#: where its view lacks it, with the observer's VIEW_ID (see agent.views).
REPLICATION_GROUP_MEMBER_VIEWS = Table(
    "replication_group_member_views",
    (
        _text("OBSERVER_ID", "CHAR(36)", collation=BIN),  # the member whose server reports
        _text("MEMBER_ID", "CHAR(36)", collation=BIN),  # the member it reports of
        _text("MEMBER_STATE", "CHAR(64)", collation=BIN),  # GR's state, or NOT_LISTED
        _text("VIEW_ID", "CHAR(60)", collation=BIN),  # the observer's own view ('' for none)
        # MySQL 8.4's MEMBER_FAILURE_SUSPICIONS_COUNT of the observer's server for the member
        # (replication_group_communication_information); read by the observer's agent and not
        # gossiped: NULL but for the serving agent's own member, or before 8.4
        Column(
            "MEMBER_FAILURE_SUSPICIONS_COUNT", "BIGINT UNSIGNED", nullable=True, kind=Kind.INTEGER
        ),
        # the observer's agent's round trip to the member's agent, ms (the clock filter's of the
        # last exchanges); NULL when the two agents do not exchange directly
        Column("ROUND_TRIP_MS", "DECIMAL(20,6)", nullable=True, kind=Kind.DECIMAL),
        # ms since the observer's agent last reported it (its last read); NULL when never
        Column("AGE_MS", "BIGINT UNSIGNED", nullable=True, kind=Kind.INTEGER),
        # the observer's agent heard and its server read within the silence, as CONNECTED
        _yes_no("CONNECTED"),
        # what the observation contradicts, '' for nothing: a split-brain, a one-way link or a
        # lagging view (the values of agent.rows.views.DISAGREEMENTS, see agent.views)
        _text("DISAGREEMENT", "CHAR(16)"),
    ),
)

#: grstats's columns appended to every table with ``extended`` (WL#2860's CONNECTED and more).
#: They mean the same in every table, and CONNECTED and AGE_MS the same in
#: ``replication_group_member_status`` (see :mod:`grstats.agent.served`).
EXTENDED_COLUMNS: tuple[Column, ...] = (
    # the member's agent is heard (directly or relayed) within the silence, whatever its server
    Column("CONNECTED", "ENUM('YES','NO')", nullable=False, kind=Kind.TEXT),
    Column("IN_VIEW", "ENUM('YES','NO')", nullable=False, kind=Kind.TEXT),
    # when the member's agent last reported it (its last read), on the serving agent's clock
    Column("LAST_SEEN", "TIMESTAMP(6)", nullable=False, kind=Kind.TIMESTAMP),
    # ms since LAST_SEEN; NULL when the member was never reported
    Column("AGE_MS", "BIGINT UNSIGNED", nullable=True, kind=Kind.INTEGER),
    # the agent the row came through: 'local', a peer's address, or 'registry'
    Column("SOURCE", "CHAR(255)", nullable=False, kind=Kind.TEXT),
)

#: The tables by name.
TABLES: dict[str, Table] = {
    table.name: table
    for table in (
        REPLICATION_GROUP_MEMBERS,
        REPLICATION_GROUP_MEMBER_STATS,
        REPLICATION_GROUP_MEMBER_LAG,
        REPLICATION_GROUP_MEMBER_GTID_EXECUTED,
        REPLICATION_GROUP_STATUS,
        REPLICATION_GROUP_MEMBER_STATUS,
        REPLICATION_GROUP_EVENTS,
        REPLICATION_GROUP_MEMBER_VIEWS,
    )
}

#: The tables of members' rows: ``extended`` adds EXTENDED_COLUMNS to these, and the collector
#: spools them. The status tables hold their freshness columns already.
ROW_TABLES = tuple(TABLES)[:4]
