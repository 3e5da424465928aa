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
become SourceDataError in :mod:`grstats.agent.sources.mysql_records`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Any, Self

import aiomysql  # type: ignore[import-untyped]
from pymysql.constants import CLIENT, FIELD_TYPE  # type: ignore[import-untyped]
from pymysql.converters import decoders  # type: ignore[import-untyped]
from pymysql.err import MySQLError  # type: ignore[import-untyped]

from grstats.agent.errors import SourceDataError, SourceError, SourceUnavailable
from grstats.agent.model import GroupView, MemberSnapshot, SourceHealth
from grstats.agent.rows import GROUP_REPLICATION_APPLIER
from grstats.agent.sources.mysql_config import MySQLSourceConfig, read_password, tls_context
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
    has_columns,
    is_truncated,
    member_rows,
    server_variables,
    stats_row,
    transactions_behind,
    variable_map,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping, Sequence
    from types import TracebackType

    from grstats.agent.rows import ApplierStatusRow

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
}

_ER_UNKNOWN_SYSTEM_VARIABLE = 1193
_QUIT_TIMEOUT_S = 1.0

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
    SourceUnavailable at once, saying when the next try is. A read that finds a value outside
    its domain raises SourceDataError and keeps the connection.

    The password is read from the file or variable the config names at each connect and
    handed to the driver; this object never keeps it. ``clock`` (monotonic seconds) and
    ``environ`` (for ``password_env``) can be replaced by tests.
    """

    def __init__(
        self,
        config: MySQLSourceConfig,
        *,
        clock: Callable[[], float] = time.monotonic,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.config = config
        self._clock = clock
        self._environ = environ
        names = ", ".join(["%s"] * len(VARIABLE_NAMES))
        schema = f"`{config.schema}`"
        self._sql = {key: sql.format(schema=schema, names=names) for key, sql in QUERIES.items()}
        self._conn: Any = None
        self._failures = 0
        self._retry_at = 0.0
        self._last_failure = ""
        self._closed = False
        #: How many connects were attempted (for operators' metrics and tests).
        self.connect_attempts = 0

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
        try:
            if self._conn is None:
                self._conn = await self._connect()
            snapshot = await self._read(self._conn)
        except SourceUnavailable as exc:
            raise await self._failed(exc) from exc
        except SourceDataError:
            self._failures = 0
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
        wait = self._retry_at - self._clock()
        if self._failures and wait > 0:
            raise SourceUnavailable(f"{self._last_failure}; retrying in {wait:.1f} s")

    async def _failed(self, exc: SourceUnavailable) -> SourceUnavailable:
        """Drop the connection, schedule the next connect; return the error to raise."""
        conn, self._conn = self._conn, None
        if conn is not None:
            await _close(conn, polite=False)
        self._failures += 1
        config = self.config
        delay = min(config.backoff_initial_s * 2 ** (self._failures - 1), config.backoff_max_s)
        self._retry_at = self._clock() + delay
        self._last_failure = str(exc)
        return SourceUnavailable(f"{exc}; retrying in {delay:.1f} s")

    async def _connect(self) -> Any:
        config = self.config
        self.connect_attempts += 1
        password = read_password(config, self._environ)
        try:
            password.encode("latin-1")
        except UnicodeEncodeError:
            raise SourceUnavailable(
                "password: has characters outside Latin-1, which the driver cannot send"
            ) from None
        context = tls_context(config)
        with _translated(config, "connect", config.connect_timeout_s, "connect_timeout_s"):
            async with asyncio.timeout(config.connect_timeout_s):
                try:
                    conn = await aiomysql.connect(
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
                except Exception:
                    # The driver closes a failed connection's transport, which closes its
                    # socket on a later loop turn: let that happen before the error goes up,
                    # or an agent stopping now would leave the socket to the garbage collector.
                    for _ in range(2):
                        await asyncio.sleep(0)
                    raise
        del password
        if context is not None and not conn.server_capabilities & CLIENT.SSL:
            await _close(conn, polite=False)
            raise SourceUnavailable(f"{config.address}: the server does not offer TLS")
        return conn

    # -- one read --------------------------------------------------------------------

    async def _read(self, conn: Any) -> MemberSnapshot:
        config = self.config
        with _translated(config, "read", config.query_timeout_s, "query_timeout_s"):
            async with asyncio.timeout(config.query_timeout_s):
                variables = server_variables(await self._variables(conn))
                columns, members = await _records(conn, self._sql["members"])
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
        return MemberSnapshot(
            member_id=variables.server_uuid,
            read_at_us=time.time_ns() // 1000,
            view=GroupView(
                members=member_rows(members, variables.single_primary_mode, primary),
                view_id=stats_value.view_id,
                group_name=variables.group_name,
                single_primary_mode=variables.single_primary_mode,
            ),
            stats=stats_value,
            applier=applier,
            gtid_executed=variables.gtid_executed,
            health=health,
            transactions_behind=transactions_behind(connection, variables.gtid_executed),
            server=variables.server,
        )

    async def _variables(self, conn: Any) -> dict[str, str]:
        _, rows = await _records(conn, self._sql["variables"], VARIABLE_NAMES)
        variables = variable_map(GLOBAL_VARIABLES, (tuple(row.values()) for row in rows))
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
        """Return the channel's WL#7374 fields and the read's health (5.7 has none: idle row).

        Queue fields come from ``connection``, the channel's ``replication_connection_status``
        row (``queue_columns`` its table's columns); apply fields from the workers, read here.
        """
        member_id = variables.server_uuid
        if not variables.has_transaction_timestamps:
            return applier_row(member_id, None, ()), SourceHealth(ok=True, message=NO_TIMESTAMPS_57)
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
        if not exc.args or exc.args[0] != _ER_UNKNOWN_SYSTEM_VARIABLE:
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
    """Translate the driver's and the network's exceptions into SourceUnavailable, once."""
    try:
        yield
    except TimeoutError as exc:
        raise SourceUnavailable(
            f"{config.address}: {action} got no answer within {limit_s:g} s ({limit_name})"
        ) from exc
    except MySQLError as exc:
        raise SourceUnavailable(f"{config.address}: {action} failed: {_describe(exc)}") from exc
    except OSError as exc:  # refused, reset, TLS (ssl.SSLError is an OSError)
        raise SourceUnavailable(f"{config.address}: {action} failed: {exc}") from exc


def _describe(exc: BaseException) -> str:
    """Return ``MySQL error CODE: message``, plus the network cause when there is one."""
    args = exc.args
    text = f"MySQL error {args[0]}: {args[1]}" if len(args) == 2 else str(exc) or repr(exc)
    cause = exc.__cause__
    if cause is not None:
        text = f"{text} ({cause or type(cause).__name__})"
    return text
