"""``MySQLSource``: reads the local member of a MySQL 5.7, 8.0 or 8.4 server (``--source mysql``).

Everything is read from performance_schema tables (``<schema>.<table>``, so an account with
only ``SELECT`` on that schema is enough): ``replication_group_members``, the member's own row
of ``replication_group_member_stats``, ``global_variables``, ``global_status`` (5.7's primary),
the ``group_replication_applier`` row of ``replication_connection_status`` and, on 8.0+, that
channel's rows of ``replication_applier_status_by_worker``. Which columns exist is taken from
each result, so 5.7 (9 stats columns, no role or version) and 8.0 before 8.0.27 (no
communication stack) read as MySQL would show them.

``global_variables`` gives, besides the member's identity and GTIDs, its ``read_only``,
``super_read_only`` and ``group_replication_flow_control_*`` variables (MySQL's default for
each one the server lacks). The applier channel's row gives, on every version, its
RECEIVED_TRANSACTION_SET, from which the member's ``transactions_behind`` is counted (5.7's
row has that column, storage/perfschema/table_replication_connection_status.cc, but no WL#7374
columns), and on 8.0+ the WL#7374 queue fields.

The driver is aiomysql. Its exceptions are translated in one place, :func:`_translated`:
anything about reaching the server becomes SourceUnavailable; values outside their domain
become SourceDataError in :mod:`grstats.agent.sources.mysql_records`. Every error carries a
:class:`~grstats.core.fault.SourceFault` saying why in a DBA's words:
:func:`classify` reads the MySQL error code (and, for a missing privilege or table, what the
server says of itself: :class:`ServerFacts`), and :func:`state_fault` what a read found (a
server that is not MySQL 5.7+, Group Replication not installed, its group name empty, or the
member OFFLINE). Both are pure, for ``grstats doctor`` too.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import re
import ssl
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Self

from grstats.agent.sources.base import LOG_LINES_PER_READ
from grstats.agent.sources.mysql_config import MySQLSourceConfig, read_password, tls_context
from grstats.agent.sources.mysql_driver import CLIENT, FIELD_TYPE, MySQLError, aiomysql, decoders
from grstats.agent.sources.mysql_records import (
    APPLY_COLUMNS,
    CONNECTION_STATUS,
    GLOBAL_STATUS,
    GLOBAL_VARIABLES,
    PRIMARY_MEMBER_STATUS,
    QUEUE_COLUMNS,
    VARIABLE_NAMES,
    WORKER_STATUS,
    Record,
    ServerVariables,
    applier_row,
    cluster_name,
    communication_info,
    has_columns,
    is_truncated,
    log_row,
    member_rows,
    server_variables,
    stats_row,
    transactions_behind,
    variable_map,
)
from grstats.agent.sources.mysql_records import parse_version as _parse_version
from grstats.core import fault as faults
from grstats.core.errors import SourceDataError, SourceError, SourceUnavailable
from grstats.core.model import CommunicationInfo, GroupView, MemberSnapshot, SourceHealth
from grstats.core.mysql_errors import (
    CR_CONN_HOST_ERROR,
    CR_SERVER_GONE_ERROR,
    CR_SERVER_LOST,
    CR_SERVER_LOST_EXTENDED,
    ER_ACCESS_DENIED_ERROR,
    ER_COLUMNACCESS_DENIED_ERROR,
    ER_CON_COUNT_ERROR,
    ER_DBACCESS_DENIED_ERROR,
    ER_HOST_NOT_PRIVILEGED,
    ER_NO_SUCH_TABLE,
    ER_SPECIFIC_ACCESS_DENIED_ERROR,
    ER_TABLEACCESS_DENIED_ERROR,
    ER_UNKNOWN_SYSTEM_VARIABLE,
)
from grstats.core.rows import GROUP_REPLICATION_APPLIER, ApplierStatusRow
from grstats.core.rows.member_log import GR_PREFIX, KEPT_LINES, REPL

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping, Sequence
    from types import TracebackType

    from grstats.core.fault import SourceFault
    from grstats.core.rows import MemberRow
    from grstats.core.rows.member_log import MemberLogRow

__all__ = ["MySQLSource", "MySQLSourceConfig"]

#: The health note of a 5.7 member, which has no WL#7374 columns.
NO_TIMESTAMPS_57 = "MySQL 5.7: no transaction timestamps (WL#7374 is 8.0+)"

#: The queries of one read; ``{schema}`` is the configured schema, an identifier that
#: MySQLSourceConfig checked ([A-Za-z0-9_$]{1,64}), quoted, and ``{names}`` one parameter
#: mark per name in VARIABLE_NAMES. Values are always passed as parameters.
QUERIES = {
    "variables": "SELECT VARIABLE_NAME, VARIABLE_VALUE FROM {schema}.global_variables"
    " WHERE VARIABLE_NAME IN ({names})",
    "members": "SELECT * FROM {schema}.replication_group_members",
    "stats": "SELECT * FROM {schema}.replication_group_member_stats WHERE MEMBER_ID = %s",
    "status": "SELECT VARIABLE_NAME, VARIABLE_VALUE FROM {schema}.global_status"
    " WHERE VARIABLE_NAME = %s",
    "connection": "SELECT * FROM {schema}.replication_connection_status WHERE CHANNEL_NAME = %s",
    "workers": "SELECT * FROM {schema}.replication_applier_status_by_worker"
    " WHERE CHANNEL_NAME = %s ORDER BY WORKER_ID",
    "communication": "SELECT * FROM {schema}.replication_group_communication_information",
    # Group Replication's own lines (agent.rows.member_log.is_group_replication): the first
    # read takes the newest, later ones those logged after the last taken (LOGGED is the
    # table's primary key, table_error_log.cc); both at most LOG_LINES_PER_READ
    "log_first": "SELECT LOGGED, THREAD_ID, PRIO, ERROR_CODE, SUBSYSTEM, DATA FROM"
    " {schema}.error_log WHERE SUBSYSTEM = %s AND DATA LIKE %s ORDER BY LOGGED DESC LIMIT %s",
    "log_since": "SELECT LOGGED, THREAD_ID, PRIO, ERROR_CODE, SUBSYSTEM, DATA FROM"
    " {schema}.error_log WHERE LOGGED > %s AND SUBSYSTEM = %s AND DATA LIKE %s"
    " ORDER BY LOGGED LIMIT %s",
}
#: MySQL Shell's clusters of the InnoDB Cluster metadata (2.x), read for the group's name;
#: ``{metadata}`` is the configured metadata schema, an identifier MySQLSourceConfig checked.
CLUSTERS_SQL = "SELECT cluster_name, attributes FROM {metadata}.clusters WHERE cluster_type = 'gr'"
#: How long a read InnoDB Cluster name is kept: it changes only by Shell's cluster.rename().
CLUSTER_NAME_TTL_S = 60.0
#: Why a read gave no InnoDB Cluster name (``MySQLSource.cluster_name_note``), for the doctor.
NO_METADATA = "no_metadata"
METADATA_DENIED = "metadata_denied"
NO_CLUSTER = "no_cluster"
#: The errors of a server without Shell's metadata 2.x: no schema, table or column.
_NO_METADATA_ERRORS = frozenset({1049, 1054, 1146})
#: The first MySQL with replication_group_communication_information.
COMMUNICATION_SINCE = (8, 0, 27)
#: The first MySQL with performance_schema.error_log (WL#13681).
ERROR_LOG_SINCE = (8, 0, 22)
#: What ``log_note`` says of a server before it: it has no Group Replication log to read.
NO_ERROR_LOG = (
    "MySQL {version} has no performance_schema.error_log (8.0.22+): its Group Replication "
    "log lines are not read"
)
#: ... and of an account that may not read it, or a server without the table.
ERROR_LOG_DENIED = "{schema}.error_log could not be read ({why}): no log lines"
#: error_log's DATA of Group Replication's lines, as LIKE matches it (``_`` escaped).
_GR_DATA_LIKE = GR_PREFIX.replace("_", "\\_") + "%"
#: The member states in which it has a row (``fetch_row_data`` needs a running group
#: communication engine); reading it on an expelled member can wait on that engine.
COMMUNICATION_STATES = frozenset({"ONLINE", "RECOVERING"})

#: The codes of a missing privilege, and of a connection the server dropped
#: (:mod:`grstats.core.mysql_errors`, include/mysqld_error.h and include/errmsg.h).
PRIVILEGE_ERRORS = frozenset(
    {
        ER_DBACCESS_DENIED_ERROR,
        ER_TABLEACCESS_DENIED_ERROR,
        ER_COLUMNACCESS_DENIED_ERROR,
        ER_SPECIFIC_ACCESS_DENIED_ERROR,
    }
)
LOST_CONNECTION_ERRORS = frozenset({CR_SERVER_GONE_ERROR, CR_SERVER_LOST, CR_SERVER_LOST_EXTENDED})
#: The oldest MySQL with Group Replication's performance_schema tables.
OLDEST_MYSQL = (5, 7, 0)
#: What the server says of itself when a read needs explaining (one query, no privilege).
FACTS_SQL = (
    "SELECT @@version AS VERSION, @@version_comment AS VERSION_COMMENT,"
    " @@performance_schema AS PERFORMANCE_SCHEMA, CURRENT_USER() AS ACCOUNT"
)
GROUP_NAME_VARIABLE = "group_replication_group_name"
_ACCOUNT_RE = re.compile(r"user '([^']*)'@'([^']*)'")
_TABLE_RE = re.compile(r"Table '(?:[^'.]*\.)?([^']*)' doesn't exist")
_GR_TABLES = frozenset({"replication_group_members", "replication_group_member_stats"})
_QUIT_TIMEOUT_S = 1.0
_ABORT_TURNS = 10
#: How early a read may make the connect that is due (seconds): the loop wakes a few ms late
#: or early at each period mark, and an attempt due at a mark must not slip to the next one.
RETRY_EARLY_S = 0.05

# TIMESTAMP(6)/DATETIME(6) come back as the server's text, so that the zero timestamp and
# microseconds are read exactly (mysql_records.timestamp_us), in the UTC session time zone.
_DECODERS = {
    **decoders,
    FIELD_TYPE.TIMESTAMP: str,
    FIELD_TYPE.DATETIME: str,
}


class MySQLSource:
    """A :class:`~grstats.agent.sources.base.StatsSource` reading a member's performance_schema.

    One connection, opened by the first :meth:`read`. A read that cannot reach the server
    raises SourceUnavailable and drops the connection; the next read reconnects, but only once
    the backoff delay has passed (``backoff_initial_s``, doubled per further failure up to
    ``backoff_max_s``, reset by a read that reached the server); reads before that raise
    SourceUnavailable at once, repeating the failure: the same text, ending with the time of
    the next attempt (UTC, fixed when the failure happened), and the same fault. A read that
    finds a value outside its domain raises SourceDataError and keeps the connection.

    Every error carries a fault (``exc.fault``, kind ``bad_data`` for SourceDataError). A
    server the agent reached but cannot read a member on (not MySQL 5.7+, Group Replication
    not installed, not started, or without a group name) fails the read too, with backoff: the
    agent has no Group Replication member to report.

    The password is read from the file or variable the config names at each connect and
    handed to the driver; this object never keeps it. ``clock`` (monotonic seconds),
    ``wall_clock`` (UNIX seconds, for the next attempt's time) and ``environ`` (for
    ``password_env``) can be replaced by tests.
    """

    def __init__(
        self,
        config: MySQLSourceConfig,
        *,
        clock: Callable[[], float] = time.monotonic,
        environ: Mapping[str, str] | None = None,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self._clock = clock
        self._wall_clock = wall_clock
        self._environ = environ
        names = ", ".join(["%s"] * len(VARIABLE_NAMES))
        schema = f"`{config.schema}`"
        self._sql = {key: sql.format(schema=schema, names=names) for key, sql in QUERIES.items()}
        self._sql["clusters"] = CLUSTERS_SQL.format(metadata=f"`{config.metadata_schema}`")
        self._cluster_name: tuple[float, str, str] | None = None  # read at, group, name
        #: Why the last read gave no InnoDB Cluster name: NO_METADATA, METADATA_DENIED,
        #: NO_CLUSTER, or '' (it gave one, or the member is in no group).
        self.cluster_name_note = ""
        #: The GRANT that lets the account read the metadata, once a read was refused it.
        self.cluster_name_fix = ""
        self._conn: Any = None
        self._failures = 0
        self._retry_at = 0.0
        self._last_error: SourceUnavailable | None = None
        self._version_read = ""  # global_variables' version in this read, once read
        self._closed = False
        #: How many connects were attempted (for operators' metrics and tests).
        self.connect_attempts = 0
        #: Why the member's Group Replication log lines are not read ('' while they are):
        #: a server before 8.0.22, or an error_log the account may not read.
        self.log_note = ""
        self._logged: str | None = None  # LOGGED of the last line taken, as the server wrote it
        self._new_lines: list[MemberLogRow] = []

    def __repr__(self) -> str:
        state = "connected" if self._is_connected() else "not connected"
        return (
            f"MySQLSource({self.config.address}, user={self.config.user!r}, "
            f"schema={self.config.schema!r}, {state})"
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def read(self) -> MemberSnapshot:
        """Return a fresh snapshot of the local member; SourceError says what failed."""
        if self._closed:
            raise SourceError("read after aclose")
        if not self._is_connected():
            self._conn = None
            self._check_backoff()
        began, began_wall = self._clock(), self._wall_clock()
        try:
            if self._conn is None:
                self._conn = await self._connect()
            snapshot = await self._read(self._conn)
        except SourceUnavailable as exc:
            raise await self._failed(exc, began, began_wall) from exc
        except SourceDataError as exc:
            self._failures = 0
            if exc.fault is None:
                exc.fault = faults.bad_data(str(exc))
            raise
        self._failures = 0
        return snapshot

    async def aclose(self) -> None:
        """Close the connection (politely, with COM_QUIT, if the server still answers)."""
        self._closed = True
        conn, self._conn = self._conn, None
        if conn is not None:
            await _close(conn, polite=True)

    # -- connection and backoff ------------------------------------------------------

    def _is_connected(self) -> bool:
        return self._conn is not None and not self._conn.closed

    def _check_backoff(self) -> None:
        last = self._last_error
        if self._failures and last is not None and self._retry_at > self._clock():
            raise SourceUnavailable(str(last), fault=last.fault)

    async def _failed(
        self, exc: SourceUnavailable, began: float, began_wall: float
    ) -> SourceUnavailable:
        """Drop the connection, schedule the next connect; return the error to raise.

        The next connect is due ``retry_delay`` after the failed attempt *began* (``began``,
        ``began_wall``), not after it failed: reads start on the period's marks, so a delay of
        whole periods lets the attempt due run at a mark rather than one period later (a read
        that took a few ms would otherwise miss the mark it was due at). Its text ends with the
        time of the next attempt, which later reads repeat unchanged.
        """
        conn, self._conn = self._conn, None
        if conn is not None:
            await _close(conn, polite=False)
        self._failures += 1
        config = self.config
        delay = retry_delay(config.backoff_initial_s, config.backoff_max_s, self._failures)
        self._retry_at = began + delay - RETRY_EARLY_S
        if delay > 0:
            tenths = round((began_wall + delay) * 10)
            moment = datetime.fromtimestamp(tenths // 10, UTC)
            when = f"next attempt at {moment:%H:%M:%S}.{tenths % 10} UTC"
        else:
            when = "next attempt at the next read"
        fault = exc.fault or faults.fault_of(exc)
        self._last_error = SourceUnavailable(f"{exc}; {when}", fault=fault)
        return self._last_error

    async def _connect(self) -> Any:
        config = self.config
        self.connect_attempts += 1
        try:
            password = read_password(config, self._environ)
        except SourceUnavailable as exc:
            source = password_source(config)
            raise SourceUnavailable(
                str(exc),
                fault=faults.SourceFault(
                    "access_denied",
                    f"cannot log in to MySQL at {config.address}: {exc}",
                    f"make {source} hold the password of {config.user!r} and be readable by "
                    "the agent's user",
                ),
            ) from None
        try:
            password.encode("latin-1")
        except UnicodeEncodeError:
            raise SourceUnavailable(
                "password: has characters outside Latin-1, which the driver cannot send",
                fault=faults.SourceFault(
                    "access_denied",
                    f"the password from {password_source(config)} has characters outside "
                    "Latin-1, which the MySQL driver cannot send",
                    "set a password of ASCII characters (openssl rand -hex 24) on the account "
                    "and in the file or variable",
                ),
            ) from None
        try:
            context = tls_context(config)
        except SourceUnavailable as exc:
            raise SourceUnavailable(
                str(exc),
                fault=faults.SourceFault(
                    "other",
                    f"cannot use the TLS files of [mysql]: {exc}",
                    "check ssl_ca, ssl_cert and ssl_key: readable PEM files, the key matching "
                    "the certificate",
                ),
            ) from None
        with _translated(config, "connect", config.connect_timeout_s, "connect_timeout_s"):
            async with asyncio.timeout(config.connect_timeout_s):
                conn = _Connection(
                    host=config.host,
                    port=config.port,
                    user=config.user,
                    password=password,
                    connect_timeout=config.connect_timeout_s,
                    charset="utf8mb4",
                    autocommit=True,
                    conv=_DECODERS,
                    ssl=context,
                    init_command="SET time_zone = '+00:00'",
                    program_name="grstats",
                )
                await conn.open()
        del password
        if context is not None and not conn.server_capabilities & CLIENT.SSL:
            await _close(conn, polite=False)
            raise SourceUnavailable(
                f"{config.address}: the server does not offer TLS",
                fault=faults.SourceFault(
                    "other",
                    f"MySQL at {config.address} does not offer TLS, which [mysql] ssl_ca asks for",
                    "enable TLS on the server (ssl_cert and ssl_key under [mysqld]), or remove "
                    "ssl_ca from [mysql]",
                ),
            )
        return conn

    # -- one read --------------------------------------------------------------------

    async def _read(self, conn: Any) -> MemberSnapshot:
        config = self.config
        with _translated(config, "read", config.query_timeout_s, "query_timeout_s"):
            async with asyncio.timeout(config.query_timeout_s):
                try:
                    return await self._read_member(conn)
                except MySQLError as exc:
                    code = _code(exc)
                    if code not in PRIVILEGE_ERRORS and code != ER_NO_SUCH_TABLE:
                        raise
                    facts = await _server_facts(conn, self._version_read)
                    raise SourceUnavailable(
                        f"{config.address}: read failed: {_describe(exc)}",
                        fault=classify(config, "read", exc, facts),
                    ) from exc

    async def _read_member(self, conn: Any) -> MemberSnapshot:
        config = self.config
        self._version_read = ""
        found = await self._variables(conn)
        if not found:
            facts = await _server_facts(conn, "")
            raise SourceUnavailable(
                f"{config.address}: {config.schema}.{GLOBAL_VARIABLES} has no rows",
                fault=empty_variables_fault(config, facts),
            )
        self._version_read = found.get("version", "")
        variables = server_variables(found)
        columns: tuple[str, ...] = ()
        members: list[Record] = []
        fault = state_fault(config, found)
        if fault is None:
            columns, members = await _records(conn, self._sql["members"])
            fault = state_fault(config, found, members)
        if fault is not None and fault.kind != "gr_not_started":
            raise SourceUnavailable(fault.message, fault=fault)
        # Installed but not started: MySQL shows the member OFFLINE, and so does the read,
        # which carries the fault (the agent reports it as it would a failed read).
        primary = None
        if "MEMBER_ROLE" not in columns:  # 5.7: the primary is a status variable
            primary = await self._primary_member(conn)
        _, stats = await _records(
            conn,
            self._sql["stats"],
            (variables.server_uuid,),
        )
        queue_columns, connections = await _records(
            conn, self._sql["connection"], (GROUP_REPLICATION_APPLIER,)
        )
        connection = connections[0] if connections else None
        applier, health = await self._applier(conn, variables, queue_columns, connection)
        stats_value = stats_row(stats[0] if stats else None)
        view_members = member_rows(members, variables.single_primary_mode, primary)
        snapshot = MemberSnapshot(
            member_id=variables.server_uuid,
            read_at_us=time.time_ns() // 1000,
            view=GroupView(
                members=view_members,
                view_id=stats_value.view_id,
                group_name=variables.group_name,
                single_primary_mode=variables.single_primary_mode,
                group_label=await self._group_label(conn, variables.group_name),
            ),
            stats=stats_value,
            applier=applier,
            gtid_executed=variables.gtid_executed,
            health=health,
            transactions_behind=transactions_behind(connection, variables.gtid_executed),
            server=variables.server,
            fault=fault,
            member_weight=variables.member_weight,
            communication=await self._communication(conn, variables, view_members),
        )
        await self._read_log(conn, variables)
        return snapshot

    def take_log(self) -> tuple[MemberLogRow, ...]:
        """The Group Replication lines the reads found since the last call, oldest first."""
        lines, self._new_lines = tuple(self._new_lines), []
        return lines

    async def _read_log(self, conn: Any, variables: ServerVariables) -> None:
        """Read the member's new Group Replication lines of error_log (8.0.22+).

        At most LOG_LINES_PER_READ a read: the newest at the first read, then those logged
        after the last one taken. A server without the table, or an account refused it,
        reads none and says why in ``log_note``; the rest of the read stands.
        """
        if variables.version_tuple < ERROR_LOG_SINCE:
            self.log_note = NO_ERROR_LOG.format(version=".".join(map(str, variables.version_tuple)))
            return
        args: tuple[object, ...]
        if self._logged is None:
            sql, args = self._sql["log_first"], (REPL, _GR_DATA_LIKE, LOG_LINES_PER_READ)
        else:
            sql = self._sql["log_since"]
            args = (self._logged, REPL, _GR_DATA_LIKE, LOG_LINES_PER_READ)
        try:
            _, rows = await _records(conn, sql, args)
        except MySQLError as exc:
            code = _code(exc)
            if code not in PRIVILEGE_ERRORS and code != ER_NO_SUCH_TABLE:
                raise
            self.log_note = ERROR_LOG_DENIED.format(schema=self.config.schema, why=_describe(exc))
            return
        self.log_note = ""
        if self._logged is None:
            rows.reverse()
        if rows:
            lines = [log_row(row, variables.server_uuid) for row in rows]
            self._logged = str(rows[-1]["LOGGED"])
            self._new_lines = [*self._new_lines, *lines][-KEPT_LINES:]

    async def _group_label(self, conn: Any, group_name: str) -> str:
        """The group's InnoDB Cluster name, read at most every CLUSTER_NAME_TTL_S; '' if none.

        A server without MySQL Shell's metadata 2.x, or an account that may not read it, has
        none (``cluster_name_note`` says which, for ``grstats doctor``); the read stands.
        """
        cached = self._cluster_name
        now = self._clock()
        if cached is not None and cached[1] == group_name and now - cached[0] < CLUSTER_NAME_TTL_S:
            return cached[2]
        name, note = "", ""
        if group_name:
            try:
                _, rows = await _records(conn, self._sql["clusters"])
            except MySQLError as exc:
                code = _code(exc)
                if code in PRIVILEGE_ERRORS:
                    note = METADATA_DENIED
                    found = _ACCOUNT_RE.search(str(exc))
                    user = self.config.user
                    account = faults.account_name(*found.groups()) if found else ""
                    account = account or faults.account_name(user, "%")
                    self.cluster_name_fix = faults.grant_statement(
                        self.config.metadata_schema, account
                    )
                elif code in _NO_METADATA_ERRORS:
                    note = NO_METADATA
                else:
                    raise
            else:
                name = cluster_name(rows, group_name)
                note = "" if name else NO_CLUSTER
        self._cluster_name = (now, group_name, name)
        self.cluster_name_note = note
        return name

    async def _communication(
        self, conn: Any, variables: ServerVariables, view_members: Sequence[MemberRow]
    ) -> CommunicationInfo | None:
        """The member's replication_group_communication_information row, where it has one.

        Read only from MySQL 8.0.27 and while the member is ONLINE or RECOVERING (else MySQL
        gives no row, and the read could wait on a group communication engine that has left
        the group). A server without the table, or an account that may not read it, gives None:
        the rest of the read stands.
        """
        own = next((row for row in view_members if row.member_id == variables.server_uuid), None)
        if (
            variables.version_tuple < COMMUNICATION_SINCE
            or own is None
            or own.member_state not in COMMUNICATION_STATES
        ):
            return None
        try:
            _, rows = await _records(conn, self._sql["communication"])
        except MySQLError as exc:
            if _code(exc) in PRIVILEGE_ERRORS or _code(exc) == ER_NO_SUCH_TABLE:
                return None
            raise
        return communication_info(rows[0] if rows else None)

    async def _variables(self, conn: Any) -> dict[str, str]:
        _, rows = await _records(conn, self._sql["variables"], VARIABLE_NAMES)
        pairs = [tuple(row.values()) for row in rows]
        # An unset group name is NULL on some servers: it reads as empty (group_name_empty).
        pairs = [
            (name, "") if value is None and name == GROUP_NAME_VARIABLE else (name, value)
            for name, value in pairs
        ]
        variables = variable_map(GLOBAL_VARIABLES, pairs)
        executed = variables.get("gtid_executed")
        if executed is not None and is_truncated(executed):
            variables["gtid_executed"] = await _full_gtid_executed(conn, len(executed))
        return variables

    async def _primary_member(self, conn: Any) -> str:
        _, rows = await _records(conn, self._sql["status"], (PRIMARY_MEMBER_STATUS,))
        status = variable_map(GLOBAL_STATUS, (tuple(row.values()) for row in rows))
        return status.get(PRIMARY_MEMBER_STATUS, "")

    async def _applier(
        self,
        conn: Any,
        variables: ServerVariables,
        queue_columns: Sequence[str],
        connection: Record | None,
    ) -> tuple[ApplierStatusRow, SourceHealth]:
        """Return the channel's WL#7374 fields and the read's health (5.7 has none: all NULL).

        Queue fields come from ``connection``, the channel's ``replication_connection_status``
        row (``queue_columns`` its table's columns); apply fields from the workers, read here.
        """
        member_id = variables.server_uuid
        if not variables.has_transaction_timestamps:
            unknown = ApplierStatusRow.unknown(member_id)
            return unknown, SourceHealth(ok=True, message=NO_TIMESTAMPS_57)
        channel = (GROUP_REPLICATION_APPLIER,)
        apply_columns, workers = await _records(conn, self._sql["workers"], channel)
        missing = [
            table
            for table, columns, needed in (
                (CONNECTION_STATUS, queue_columns, QUEUE_COLUMNS),
                (WORKER_STATUS, apply_columns, APPLY_COLUMNS),
            )
            if not has_columns(columns, needed)
        ]
        if missing:
            note = f"{', '.join(missing)}: no WL#7374 columns, so no transaction timestamps"
            return applier_row(member_id, None, ()), SourceHealth(ok=True, message=note)
        row = applier_row(member_id, connection, workers)
        return row, SourceHealth()


class _Connection(aiomysql.Connection):  # type: ignore[misc]
    """aiomysql's connection whose failed connect leaves no socket open.

    On a failure aiomysql closes the connection's transport. Over TLS that close waits for the
    server's close_notify, which may come many loop turns later (or never), and a CancelledError
    (``connect_timeout_s``) skips it. :meth:`open` aborts every transport the connect made and
    waits until their sockets are closed, so an agent stopping right after the error leaves
    nothing to the garbage collector.
    """

    def __init__(self, **kwargs: Any) -> None:
        self.grstats_writers: list[asyncio.StreamWriter] = []
        super().__init__(**kwargs)

    @property
    def _writer(self) -> asyncio.StreamWriter | None:
        return self.__dict__.get("_grstats_writer")

    @_writer.setter
    def _writer(self, writer: asyncio.StreamWriter | None) -> None:
        # aiomysql replaces its writer when the connection turns to TLS: remember each one.
        if writer is not None:
            self.grstats_writers.append(writer)
        self.__dict__["_grstats_writer"] = writer

    async def open(self) -> None:
        """Connect and log in (what ``aiomysql.connect`` does), closing every socket on failure."""
        try:
            await self._connect()
        except BaseException:
            for writer in self.grstats_writers:
                writer.transport.abort()
            for _ in range(_ABORT_TURNS):  # abort closes a socket on the next loop turn
                if all(_socket_closed(writer) for writer in self.grstats_writers):
                    break
                await asyncio.sleep(0)
            raise
        self.grstats_writers = []  # the connection's own writer is all that is left open


def _socket_closed(writer: asyncio.StreamWriter) -> bool:
    sock = writer.transport.get_extra_info("socket")
    return sock is None or sock.fileno() == -1


async def _close(conn: Any, *, polite: bool) -> None:
    """Close ``conn`` and wait, briefly, until its socket is really closed.

    ``polite`` first sends COM_QUIT. A TLS connection closes in several steps (close_notify);
    a peer that does not answer in time is cut off, so no socket outlives the source.
    """
    writer = getattr(conn, "_writer", None)  # the driver's stream, kept private by aiomysql
    if polite and writer is not None:
        with contextlib.suppress(MySQLError, OSError):  # TimeoutError is an OSError
            async with asyncio.timeout(_QUIT_TIMEOUT_S):
                await conn.ensure_closed()
    conn.close()
    if writer is None:
        return
    try:
        async with asyncio.timeout(_QUIT_TIMEOUT_S):
            await writer.wait_closed()
    except TimeoutError:
        writer.transport.abort()
        await asyncio.sleep(0)  # the transport closes its socket on the next loop turn
    except OSError:
        pass  # the connection had already failed; its socket is closed


async def _records(
    conn: Any, sql: str, args: Sequence[object] = ()
) -> tuple[tuple[str, ...], list[Record]]:
    """Run ``sql``; return its column names (upper case) and its rows keyed by them."""
    async with conn.cursor() as cursor:
        await cursor.execute(sql, tuple(args))
        columns = tuple(str(column[0]).upper() for column in cursor.description or ())
        rows = await cursor.fetchall()
    return columns, [dict(zip(columns, row, strict=True)) for row in rows]


async def _full_gtid_executed(conn: Any, length: int) -> str:
    """Return ``@@GLOBAL.gtid_executed``, which performance_schema cuts at 1024 characters."""
    try:
        _, rows = await _records(conn, "SELECT @@GLOBAL.gtid_executed AS GTID_EXECUTED")
    except MySQLError as exc:
        if not exc.args or exc.args[0] != ER_UNKNOWN_SYSTEM_VARIABLE:
            raise
        raise SourceDataError(
            f"{GLOBAL_VARIABLES}.gtid_executed: {length} characters, the most "
            "performance_schema shows, so it may be cut, and @@GLOBAL.gtid_executed is unknown"
        ) from exc
    value = rows[0]["GTID_EXECUTED"] if rows else None
    if not isinstance(value, str):
        raise SourceDataError(f"@@GLOBAL.gtid_executed: {value!r} is not text")
    return value


@contextlib.contextmanager
def _translated(
    config: MySQLSourceConfig, action: str, limit_s: float, limit_name: str
) -> Iterator[None]:
    """Translate the driver's and the network's exceptions into SourceUnavailable, once.

    Each carries its fault (:func:`classify`).
    """
    try:
        yield
    except TimeoutError as exc:
        raise SourceUnavailable(
            f"{config.address}: {action} got no answer within {limit_s:g} s ({limit_name})",
            fault=classify(config, action, exc),
        ) from exc
    except MySQLError as exc:
        raise SourceUnavailable(
            f"{config.address}: {action} failed: {_describe(exc)}",
            fault=classify(config, action, exc),
        ) from exc
    except OSError as exc:  # refused, reset, TLS (ssl.SSLError is an OSError)
        raise SourceUnavailable(
            f"{config.address}: {action} failed: {exc}", fault=classify(config, action, exc)
        ) from exc


# -- diagnosis: pure, from the error and what the server says of itself ------------------


@dataclass(frozen=True, slots=True)
class ServerFacts:
    """What the server says of itself (:data:`FACTS_SQL`), asked when a read needs explaining.

    Attributes:
        version: ``global_variables``' version when the read got that far, else ``@@version``;
            ``""`` when unknown.
        version_comment: ``@@version_comment`` (MariaDB names itself there too).
        performance_schema: ``@@performance_schema``, None when unknown.
        account: ``CURRENT_USER()``, the account the server matched, as ``user@host``.
    """

    version: str = ""
    version_comment: str = ""
    performance_schema: bool | None = None
    account: str = ""

    @property
    def is_mariadb(self) -> bool:
        """Whether the server is MariaDB, which has no Group Replication."""
        return "mariadb" in f"{self.version} {self.version_comment}".lower()

    @property
    def version_tuple(self) -> tuple[int, int, int] | None:
        """(major, minor, patch) of ``version``, None when it is not a version."""
        try:
            return _parse_version(self.version)
        except SourceDataError:
            return None


async def _server_facts(conn: Any, version: str) -> ServerFacts:
    """Ask the server what it is (best effort: what cannot be asked stays unknown).

    ``version`` is global_variables' when the read got it, which then wins over ``@@version``
    and ``@@version_comment`` (tests and proxies serve MySQL's tables from another server).
    """
    try:
        _, rows = await _records(conn, FACTS_SQL)
    except MySQLError:
        return ServerFacts(version=version)
    row = rows[0] if rows else {}
    enabled = row.get("PERFORMANCE_SCHEMA")
    return ServerFacts(
        version=version or _text(row.get("VERSION")),
        version_comment="" if version else _text(row.get("VERSION_COMMENT")),
        performance_schema=None if enabled is None else str(enabled) in {"1", "ON"},
        account=_text(row.get("ACCOUNT")),
    )


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return "" if value is None else str(value)


def _code(exc: BaseException) -> int | None:
    """The MySQL error code of a driver error, None for others."""
    args = exc.args
    return args[0] if isinstance(exc, MySQLError) and args and isinstance(args[0], int) else None


def retry_delay(initial_s: float, max_s: float, failures: int) -> float:
    """Seconds from a failed connect attempt to the next one, after ``failures`` in a row (1+).

    ``initial_s`` doubled per further failure, capped at ``max_s``: one attempt per step, so a
    server that refuses is not hammered, and with the defaults (1 s to 5 s) a server that
    answers again is read within 5 s, and its member is ``CONNECTED YES`` at every agent
    within 10 s (the read, then the same period's push: docs/configuration.md).
    """
    if failures < 1:
        raise ValueError(f"failures: {failures!r} is not 1 or more")
    return float(min(initial_s * 2.0 ** min(failures - 1, 64), max_s))


def password_source(config: MySQLSourceConfig) -> str:
    """Where the password came from, as messages name it: never the password itself."""
    if config.password_env is not None:
        return f"password_env ${config.password_env}"
    if config.password_file is not None:
        return f"password_file {str(config.password_file)!r}"
    return "no password (neither password_file nor password_env is set)"


def classify(  # noqa: PLR0911 (one return per kind of fault)
    config: MySQLSourceConfig,
    action: str,
    exc: BaseException,
    facts: ServerFacts | None = None,
) -> SourceFault:
    """Return the fault a driver or network error ``exc`` of ``action`` (connect, read) means.

    ``facts`` (what the server says of itself) refine a missing privilege (the account to
    grant to) and a missing table (MariaDB, an old MySQL, or no Group Replication).
    """
    address = config.address
    code = _code(exc)
    cause = exc.__cause__
    if isinstance(exc, TimeoutError) or isinstance(cause, TimeoutError):
        if action == "connect":
            return faults.connect_timeout(address, config.connect_timeout_s)
        return faults.server_down(
            f"MySQL at {address} did not answer a read within {config.query_timeout_s:g} s "
            "(query_timeout_s)",
            "check the server's load and locks (SHOW PROCESSLIST); raise [mysql] "
            "query_timeout_s if reads are slow there",
        )
    if code == CR_CONN_HOST_ERROR or (action == "connect" and code is None):
        return _connect_fault(config, cause if code is not None else exc)
    if code == ER_CON_COUNT_ERROR:
        return faults.too_many_connections(address, _server_text(exc))
    if code in {ER_ACCESS_DENIED_ERROR, ER_HOST_NOT_PRIVILEGED}:
        return faults.access_denied(
            address, _account(exc, config, None), password_source(config), _server_text(exc)
        )
    if code in PRIVILEGE_ERRORS:
        return faults.missing_privilege(
            address, _account(exc, config, facts), config.schema, _server_text(exc)
        )
    if code == ER_NO_SUCH_TABLE:
        return _missing_table_fault(config, exc, facts or ServerFacts())
    if code in LOST_CONNECTION_ERRORS or (code is None and isinstance(exc, OSError)):
        return faults.server_down(
            f"lost the connection to MySQL at {address} during a {action}: "
            f"{_server_text(exc) if code is not None else exc}",
            "check that mysqld is running (see its error log for a crash or restart); the "
            "agent reconnects by itself",
        )
    return faults.SourceFault("other", f"MySQL at {address}: {action} failed: {_describe(exc)}")


def _connect_fault(config: MySQLSourceConfig, cause: BaseException | None) -> SourceFault:
    address = config.address
    if isinstance(cause, ConnectionRefusedError) or (
        isinstance(cause, OSError) and cause.errno == errno.ECONNREFUSED
    ):
        return faults.connect_refused(address, cause.strerror or "ECONNREFUSED")
    if isinstance(cause, TimeoutError) or (
        isinstance(cause, OSError) and cause.errno == errno.ETIMEDOUT
    ):
        return faults.connect_timeout(address, config.connect_timeout_s)
    if isinstance(cause, ssl.SSLError):
        return faults.SourceFault(
            "other",
            f"the TLS handshake with MySQL at {address} failed: {cause}",
            "check that [mysql] ssl_ca signed the server's certificate (and, with "
            "ssl_verify_identity, that the certificate names the host)",
        )
    reason = str(cause) if cause is not None else "unknown reason"
    return faults.SourceFault(
        "other",
        f"cannot connect to MySQL at {address}: {reason}",
        "check [mysql] host and port, and that the agent's host can reach the server",
    )


def _missing_table_fault(
    config: MySQLSourceConfig, exc: BaseException, facts: ServerFacts
) -> SourceFault:
    address = config.address
    match = _TABLE_RE.search(_server_text(exc))
    table = match.group(1) if match else "a table"
    if facts.is_mariadb:
        return faults.not_mysql(
            address, f"runs MariaDB {facts.version}, which has no Group Replication"
        )
    version = facts.version_tuple
    if version is not None and version < OLDEST_MYSQL:
        return faults.not_mysql(address, f"runs MySQL {facts.version}, older than 5.7")
    if table in _GR_TABLES:
        return faults.gr_not_installed(address)
    return faults.not_mysql(address, f"has no table {config.schema}.{table}")


def empty_variables_fault(config: MySQLSourceConfig, facts: ServerFacts) -> SourceFault:
    """The fault of a server whose ``global_variables`` has none of the variables asked for."""
    if facts.performance_schema is False:
        return faults.performance_schema_off(config.address)
    if facts.is_mariadb:
        return faults.not_mysql(
            config.address, f"runs MariaDB {facts.version}, which has no Group Replication"
        )
    return faults.not_mysql(config.address, f"shows no rows in {config.schema}.{GLOBAL_VARIABLES}")


def state_fault(  # noqa: PLR0911 (one return per kind of fault)
    config: MySQLSourceConfig,
    variables: Mapping[str, str],
    members: Sequence[Record] | None = None,
) -> SourceFault | None:
    """Return why the server holds no Group Replication member to read, or None.

    From ``variables`` (``global_variables``, lower-case names): not MySQL 5.7+, the plugin
    not installed (none of its variables), or the group name empty; then, given ``members``
    (``replication_group_members``), the member OFFLINE or absent: installed, not started.
    """
    address = config.address
    version = variables.get("version", "")
    facts = ServerFacts(version=version)
    if facts.is_mariadb:
        return faults.not_mysql(address, f"runs MariaDB {version}, which has no Group Replication")
    parsed = facts.version_tuple
    if parsed is not None and parsed < OLDEST_MYSQL:
        return faults.not_mysql(address, f"runs MySQL {version}, older than 5.7")
    if GROUP_NAME_VARIABLE not in variables:
        return faults.gr_not_installed(address)
    if not variables[GROUP_NAME_VARIABLE].strip():
        return faults.group_name_empty(address)
    if members is None:
        return None
    uuid = variables.get("server_uuid", "").lower()
    own = [row for row in members if _text(row.get("MEMBER_ID")).lower() == uuid]
    own = own or [row for row in members if not row.get("MEMBER_ID")]
    table = f"{config.schema}.replication_group_members"
    if not own:
        return faults.gr_not_started(address, f"not listed in {table}")
    state = _text(own[0].get("MEMBER_STATE"))
    if state.upper() == "OFFLINE":
        return faults.gr_not_started(address, f"OFFLINE in {table}")
    return None


def _account(exc: BaseException, config: MySQLSourceConfig, facts: ServerFacts | None) -> str:
    """``'user'@'host'``: the account the server matched, else the one its message names."""
    if facts is not None and "@" in facts.account:
        user, _, host = facts.account.rpartition("@")
        return faults.account_name(user, host)
    match = _ACCOUNT_RE.search(_server_text(exc))
    if match:
        return faults.account_name(match.group(1), match.group(2))
    return faults.account_name(config.user, "%")


def _server_text(exc: BaseException) -> str:
    """The server's message of a driver error, with its code: ``MySQL error 1045: ...``."""
    args = exc.args
    if len(args) == 2:  # the driver's (code, message)
        return f"MySQL error {args[0]}: {args[1]}"
    return str(exc) or type(exc).__name__


def _describe(exc: BaseException) -> str:
    """Return ``MySQL error CODE: message``, plus the network cause when there is one."""
    args = exc.args
    text = f"MySQL error {args[0]}: {args[1]}" if len(args) == 2 else str(exc) or repr(exc)
    cause = exc.__cause__
    if cause is not None:
        text = f"{text} ({cause or type(cause).__name__})"
    return text
