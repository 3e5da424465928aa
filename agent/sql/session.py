"""One SQL connection's session: MySQL's statements over the agent's tables, read-only.

:class:`GrstatsSession` is mysql-mimic's ``Session`` (which answers SET, SHOW, DESCRIBE,
information_schema and ``SELECT @@var`` itself) with grstats's rules:

* ``USE`` and a schema named in SHOW accept the served schemas (:mod:`.catalog`) and
  mysql-mimic's own (information_schema, mysql); any other is MySQL's 1049;
* a statement that does not parse is 1064, in MySQL's words; any statement but a read (a
  query) is refused as a ``read_only`` server refuses an account without SUPER, 1290 (writes
  sqlglot cannot parse too, by their first word; START GROUP_REPLICATION, SET GLOBAL, KILL of
  another connection: :mod:`.denied`); EXPLAIN is 1235;
* a function no one knows is 1305, one sqlglot's executor lacks 1235, TIMESTAMPDIFF and Group
  Replication's reading functions are answered (:mod:`.functions`); nothing a client is told
  holds Python's words (1105 ``grstats cannot run this statement`` where no rule applies:
  :mod:`.errors`);
* SHOW GRANTS, SHOW PROCESSLIST and SHOW REPLICA STATUS answer as MySQL does for the account
  (:mod:`.server_show`);
* a table is looked up in the schema it names or the session's (``USE``): unknown is 1146, no
  schema at all is 1046; names are case-insensitive;
* nothing a client can make long runs on the event loop: a statement's text longer than
  :data:`PARSE_ON_LOOP_CHARS` is parsed on the endpoint's worker thread; mysql-mimic's
  information_schema queries (SHOW, DESCRIBE too) and its static queries (a SELECT without
  FROM) run there as the queries over the served tables do (:mod:`.execution`). Every one of
  them is bounded before it runs (:mod:`.bounds`: ``limits.sql_max_join_size`` as MySQL's
  ``max_join_size``, ``limits.sql_max_cost`` for its planning and running, 1104), so the
  thread, which nothing interrupts, is held a bounded time; its client waits
  ``limits.sql_query_timeout_s`` (then 3024, and the result is dropped). ``limits.sql_max_rows``
  and ``limits.sql_max_result_bytes`` bound its result (1104); the text itself is bounded by
  ``limits.sql_max_allowed_packet`` (1153, in the endpoint);
* a query's tables are read from the :class:`SqlSource` on the event loop (only the tables it
  names), then sqlglot's executor runs it on the worker thread, on plain lists
  (:func:`.execution.run_query`);
* ``SELECT`` of ``*`` or of columns from one table with no other clause skips the executor
  (the exporters' and dashboards' query: 0.6 ms instead of 5 ms for 9 members; :mod:`.results`);
* a result column that is a table column (or MIN/MAX of one) has that column's MySQL type
  (:mod:`.catalog`); other columns are typed from their values. Names are as MySQL gives them:
  ``*`` gives the table's names, a column or alias the name as written;
* TIMESTAMP(6) values are sent, and compared with literals, in the session's ``time_zone``:
  ``+00:00`` (UTC) until ``SET time_zone = 'SYSTEM'``, ``'+02:00'`` or ``'Europe/Paris'``
  (:mod:`grstats.core.rows.zone`); any other value is MySQL's 1298 (:mod:`.server_variables`);
* ``@@connect_timeout``, ``@@wait_timeout`` and ``@@interactive_timeout`` are the endpoint's
  ``limits.sql_*_timeout_s`` (:func:`.variables.timeout_schema`); ``SET SESSION wait_timeout``
  sets the session's own, which the endpoint applies (:attr:`GrstatsSession.wait_timeout_s`).

mysql-mimic does not let a session set a result column's flags (NOT_NULL, UNSIGNED, ENUM),
length or decimals, nor its schema and table: clients see them as 0 or empty.
"""

from __future__ import annotations

import asyncio
import functools
import re
import time
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from mysql_mimic.constants import INFO_SCHEMA
from mysql_mimic.errors import ErrorCode, MysqlError
from mysql_mimic.session import Query, Session, mysql_function_mapping
from mysql_mimic.utils import find_dbs, find_tables
from mysql_mimic.variable_processor import VariableProcessor
from mysql_mimic.variables import GlobalVariables, SessionVariables
from sqlglot import exp
from sqlglot.errors import ParseError, SqlglotError, TokenError

from grstats.agent.sql import (
    catalog,
    denied,
    execution,
    functions,
    metadata,
    results,
    server_show,
    show,
    sys_schema,
)
from grstats.agent.sql import variables as member_variables
from grstats.agent.sql.bounds import check_shape, check_text, parser_exhausted
from grstats.agent.sql.errors import engine_error, sql_error, syntax_error
from grstats.agent.sql.server_variables import DEFAULT_VERSION, VARIABLES
from grstats.agent.sql.value_bounds import engine_env
from grstats.core.mysql_errors import (
    ER_BAD_DB_ERROR,
    ER_DBACCESS_DENIED_ERROR,
    ER_NO_DB_ERROR,
    ER_NO_SUCH_TABLE,
    ER_NOT_SUPPORTED_YET,
)
from grstats.core.rows.zone import TimeZone, parse_time_zone

if TYPE_CHECKING:
    import concurrent.futures
    from collections.abc import Callable, Mapping
    from datetime import timezone

    from mysql_mimic.results import AllowedResult

    from grstats.agent.served import Table
    from grstats.agent.sql.bounds import SqlLimits
    from grstats.core.model import CommunicationInfo, MemberSnapshot
    from grstats.core.rows import Column, Value

T = TypeVar("T")


#: A statement text up to this long is parsed on the event loop (about 6 ms at worst, for a
#: ``SELECT 1+1+...``); a longer one on the worker thread, where it has the query's time.
PARSE_ON_LOOP_CHARS = 1024


@dataclass(frozen=True, slots=True)
class SqlIdentity:
    """Who the endpoint says it is: ``@@server_uuid``, ``@@version``, ``@@hostname``, ``@@port``.

    ``member_id`` is the agent's member ('' before its first read), ``version`` its MySQL
    server's (None until read); ``hostname`` and ``port`` the member's MEMBER_HOST and
    MEMBER_PORT once read, so that ``WHERE MEMBER_PORT = @@port`` finds its row as on the member.
    ``snapshot`` is the agent's last read of its member (None while it cannot read it): its
    Group Replication variables and status (:mod:`.variables`).
    """

    member_id: str
    version: str | None
    hostname: str
    port: int
    snapshot: MemberSnapshot | None = None


class SqlSource(Protocol):
    """What the endpoint reads: the agent. Called on the event loop, once per query."""

    def tables(self, extended: bool) -> Mapping[str, Table]:
        """The served tables by name (``Agent.tables``), with the extended columns or not."""
        ...

    @property
    def sql_identity(self) -> SqlIdentity:
        """The identity the session's variables show, read at each statement."""
        ...


class GrstatsSession(Session):
    """One connection's session over ``source``'s tables; statements run on ``executor``.

    ``executor`` is the endpoint's (one thread): a query runs there with
    ``limits.sql_query_timeout_s`` and at most ``limits.sql_max_rows`` rows.
    """

    def __init__(
        self,
        source: SqlSource,
        limits: SqlLimits,
        executor: concurrent.futures.Executor,
    ) -> None:
        schema = {**VARIABLES, **member_variables.timeout_schema(limits)}
        super().__init__(SessionVariables(GlobalVariables(schema)))
        self._source = source
        self._limits = limits
        self._executor = executor
        self._deadline: float | None = None  # the loop's time the statement must end by
        self._status: dict[str, str | None] = {}  # the member's status variables
        self._communication: list[tuple[Value, ...]] = []  # its communication information
        self._communication_info: CommunicationInfo | None = None
        self._identity: SqlIdentity | None = None
        self._known_functions = functions.executor_names(engine_env(limits))
        self.activity = server_show.Activity(time.monotonic())
        # Refusals first (a server's change is never run); unknown functions once
        # mysql-mimic has replaced its own (CONNECTION_ID(), NOW(), ...).
        self.middlewares.insert(0, self._refusal_middleware)
        self.middlewares.insert(2, self._function_middleware)
        self._identify()

    @property
    def wait_timeout_s(self) -> float:
        """How long the session may stay idle before the endpoint closes it: ``@@wait_timeout``."""
        return float(cast("float", self.variables.get("wait_timeout")))

    def interactive(self) -> None:
        """The client said CLIENT_INTERACTIVE: its ``wait_timeout`` is ``interactive_timeout``.

        As MySQL's ``server_mpvio_update_thd`` (sql/auth/sql_authentication.cc) sets
        ``net_wait_timeout`` to ``net_interactive_timeout`` at login.
        """
        seconds = float(cast("float", self.variables.get("interactive_timeout")))
        self.variables.set("wait_timeout", member_variables.Configured(seconds), force=True)

    def _identify(self) -> None:
        """Set the identity's variables from the source (its member id may change)."""
        identity = self._source.sql_identity
        self._identity = identity
        variables = self.variables
        variables.set("version", f"{identity.version or DEFAULT_VERSION}-grstats", force=True)
        variables.set("server_uuid", identity.member_id, force=True)
        variables.set("hostname", identity.hostname, force=True)
        variables.set("port", identity.port, force=True)
        for name, value in member_variables.member_variables(identity.snapshot).items():
            variables.set(name, value, force=True)
        self._status = member_variables.member_status(identity.snapshot, identity.version)
        self._communication = member_variables.communication_rows(identity.snapshot)
        snapshot = identity.snapshot
        self._communication_info = snapshot.communication if snapshot is not None else None

    async def handle_query(self, sql: str, attrs: dict[str, str]) -> AllowedResult:
        """Answer ``sql`` (one or more statements), the identity's variables read afresh.

        mysql-mimic's own, but for where the text is parsed (a long one off the loop) and for
        its time: ``limits.sql_query_timeout_s`` from now, its parse and its statements.
        """
        self._identify()
        self.timestamp = datetime.now(tz=self.timezone())
        loop = asyncio.get_running_loop()
        self._deadline = loop.time() + self._limits.sql_query_timeout_s
        self.activity.start(sql, time.monotonic())
        try:
            if len(sql) <= PARSE_ON_LOOP_CHARS:
                expressions = self._parse_in(sql)
            else:
                expressions = await self._off_loop(functools.partial(self._parse_in, sql))
            result: AllowedResult = None
            for expression in expressions:
                query = Query(
                    expression=expression,
                    sql=sql,
                    attrs=attrs,
                    _middlewares=self.middlewares,
                    _query=self.query,
                )
                result = await query.start()
        except MysqlError:
            raise
        except Exception as error:  # noqa: BLE001  (the boundary: no Python text to a client)
            raise engine_error(error) from None
        else:
            return result
        finally:
            self._deadline = None
            self.activity.end(time.monotonic())

    def _parse_in(self, sql: str) -> list[exp.Expression]:
        """The statements of ``sql``, its parse bounded before it starts (:mod:`.bounds`).

        A parse out of Python's stack (a deep nesting) is 1064, as MySQL's parser out of its;
        SELECTs or expressions nested too deep are 1473 and 1436 here, where it was parsed
        (:func:`.bounds.check_shape`), as MySQL's parser refuses them.
        """
        check_text(sql, self._limits)
        try:
            expressions = self._parse(sql)
        except RecursionError:
            raise parser_exhausted(sql) from None
        for expression in expressions:
            check_shape(expression)
        return expressions

    @property
    def time_zone(self) -> TimeZone:
        """The session's ``time_zone``, which TIMESTAMP(6) values are shown in."""
        return parse_time_zone(str(self.variables.get("time_zone")))

    def timezone(self) -> timezone:
        """The session zone's offset now (mysql-mimic's NOW() and CURRENT_TIMESTAMP use it)."""
        return self.time_zone.offset_at(int(time.time() * 1_000_000))

    def _parse(self, sql: str) -> list[exp.Expression]:
        text = show.canonical_show(sql)
        named = show.grants_for(text)
        if named is not None:  # SHOW GRANTS FOR user: the client's own, or 1044 (sql_parse.cc)
            if named != self.username:
                user, host = self._account()
                raise sql_error(
                    ER_DBACCESS_DENIED_ERROR,
                    f"Access denied for user '{user}'@'{host}' to database 'mysql'",
                )
            text = "SHOW GRANTS"
        try:
            return super()._parse(text)
        except (ParseError, TokenError) as error:
            if denied.writes(sql):
                refusal = denied.unparsed_denial(sql, self._served_table, *self._account())
                raise (refusal if refusal is not None else denied.read_only_error()) from None
            raise syntax_error(sql, error) from None

    async def _refusal_middleware(self, q: Query) -> AllowedResult:
        """A statement that would change the server is refused before anything runs it (1290).

        The rules are :mod:`.denied`'s; KILL of one of the endpoint's own connections is
        mysql-mimic's (a client's Ctrl-C sends KILL QUERY), of any other id 1290.
        """
        refusal = (
            denied.server_change(q.expression)
            or denied.kill_denial(q.expression, server_show.connection_ids(self._control()))
            or functions.argument_error(q.expression)
        )
        if refusal is not None:
            raise refusal
        return await q.next()

    async def _set_var_middleware(self, q: Query) -> AllowedResult:
        """mysql-mimic's SET_VAR hints and function replacement, with the member's functions.

        Group Replication's reading functions are answered as mysql-mimic answers
        CONNECTION_ID(): replaced by their value (:func:`.functions.member_functions`).
        """
        replaced = {
            **mysql_function_mapping(self),
            **functions.member_functions(self._communication_info),
        }
        with VariableProcessor(replaced, self.variables, q.expression).set_variables():
            return await q.next()

    async def _function_middleware(self, q: Query) -> AllowedResult:
        """A function no one knows is MySQL's 1305 (or 1046), before anything runs it."""
        error = functions.unknown_function(q.expression, self.database, self._known_functions)
        if error is not None:
            raise error
        return await q.next()

    def _control(self) -> object:
        """mysql-mimic's registry of the endpoint's connections (None before a connection)."""
        connection = self._connection
        return connection.control if connection is not None else None

    async def use(self, database: str) -> None:
        """``USE database`` and COM_INIT_DB: a served schema or information_schema, else 1049."""
        if not catalog.is_database(database):
            raise sql_error(ER_BAD_DB_ERROR, f"Unknown database '{database}'")
        self.database = database.lower()

    async def schema(self) -> Any:
        """The served tables for information_schema, SHOW and DESCRIBE."""
        return catalog.info_schema()

    async def _query_info_schema(self, expression: exp.Expression) -> AllowedResult:
        """mysql-mimic's information_schema query (``InfoSchema.query``), on the worker thread.

        The tables' sizes bound it before it runs (``sql_max_join_size``), then it has the
        time, rows and bytes of any query.
        """
        info = catalog.info_schema()
        database = (self.database or catalog.INFORMATION_SCHEMA).lower()

        def size_of(table: exp.Table) -> int:
            schema = info.tables.get((table.db or database).lower(), {})
            found = schema.get(table.name.lower())
            return len(found.rows) if found is not None else 1

        return await self._off_loop(
            functools.partial(execution.run_info_schema, expression, info, size_of, self._limits),
            expression,
        )

    async def _static_query_middleware(self, q: Query) -> AllowedResult:
        """mysql-mimic's static query (a SELECT without FROM), on the worker thread, bounded.

        One whose scalar subqueries read a table (``SELECT (SELECT COUNT(*) FROM t)``) is a
        query over the served tables instead.
        """
        expression = q.expression
        if (
            isinstance(expression, exp.Select)
            and not any(
                expression.args.get(a)
                for a in set(exp.Select.arg_types) - {"expressions", "limit", "hint"}
            )
            and expression.find(exp.Table) is None
        ):
            return await self._off_loop(
                functools.partial(execution.run_static, expression, self._limits), expression
            )
        return await q.next()

    async def _info_schema_middleware(self, q: Query) -> AllowedResult:
        """information_schema is queried as the served tables are; mysql-mimic keeps ``mysql``."""
        dbs = [db.lower() for db in find_dbs(q.expression)] or [(self.database or "").lower()]
        if all(db in INFO_SCHEMA and db != catalog.INFORMATION_SCHEMA for db in dbs):
            return await self._query_info_schema(q.expression)
        return await q.next()

    async def _show(self, expression: exp.Show) -> AllowedResult:
        """SHOW as MySQL 8.4 answers it for the served schemas (:mod:`.show`, :mod:`.metadata`).

        VARIABLES, STATUS, WARNINGS and ERRORS are mysql-mimic's; GRANTS, PROCESSLIST and
        REPLICA STATUS the server's (:mod:`.server_show`).
        """
        kind = expression.name.upper()
        if kind in {"VARIABLES", "STATUS", "WARNINGS", "ERRORS"}:
            return await super()._show(expression)
        if kind in {"GRANTS", "PROCESSLIST", "REPLICA STATUS"}:
            return self._show_server(kind, expression)
        if kind == "CREATE DATABASE":
            schema = self._schema(expression.text("target"))
            return [(schema, metadata.create_database(schema))], ["Database", "Create Database"]
        if kind == "CREATE TABLE":
            schema = self._schema(expression.text("db") or self.database)
            table = self._table_name(schema, expression.text("target"))
            text = metadata.create_table(schema, table)
            if text is None:  # information_schema's system views
                raise sql_error(
                    ER_NOT_SUPPORTED_YET,
                    "This version of MySQL doesn't yet support 'SHOW CREATE TABLE' of a view",
                )
            return [(table, text)], ["Table", "Create Table"]
        query = self._show_query(kind, expression)
        name = query.table.lower()
        columns = metadata.info_tables()[name].columns
        counts = self._row_counts() if name == "tables" else {}
        rows = query.answer(columns, metadata.info_rows(name, counts))
        plain = [(column.lower(), output) for column, output in query.outputs]
        result: AllowedResult = results.plain_result(
            plain, columns, rows, self.time_zone, self._limits
        )
        return result

    def _show_server(self, kind: str, expression: exp.Show) -> AllowedResult:
        """SHOW GRANTS, PROCESSLIST or REPLICA STATUS (:mod:`.server_show`)."""
        if kind == "GRANTS":
            return server_show.grants(*self._account_name())
        if kind == "PROCESSLIST":
            full = bool(expression.args.get("full"))
            own = self._connection.connection_id if self._connection is not None else None
            return server_show.processlist(
                server_show.sessions(self._control()), own, full=full, now=time.monotonic()
            )
        return server_show.replica_status(legacy=self._legacy_show())

    def _show_query(self, kind: str, expression: exp.Show) -> show.ShowQuery:
        """The SELECT over information_schema that SHOW ``kind`` stands for (:mod:`.show`)."""
        like = expression.text("like") if expression.args.get("like") else None
        full = bool(expression.args.get("full"))
        if kind == "DATABASES":
            return show.databases_query(like)
        schema = self._schema(expression.text("db") or self.database)
        if kind == "TABLES":
            return show.tables_query(schema, full=full, like=like)
        if kind == "TABLE STATUS":
            return show.table_status_query(schema, like)
        if kind not in {"COLUMNS", "INDEX"}:
            raise sql_error(
                ER_NOT_SUPPORTED_YET, f"This version of MySQL doesn't yet support 'SHOW {kind}'"
            )
        table = self._table_name(schema, expression.text("target"))
        if kind == "COLUMNS":
            return show.columns_query(schema, table, full=full, like=like)
        return show.index_query(schema, table)

    def _show_variables(self, show: exp.Show) -> AllowedResult:
        """SHOW [GLOBAL] VARIABLES [LIKE]: booleans as ON and OFF, as MySQL prints them."""
        return results.like_rows(self._variable_rows(), show), ["Variable_name", "Value"]

    def _show_status(self, show: exp.Show) -> AllowedResult:
        """SHOW [GLOBAL] STATUS [LIKE]: the member's Group Replication status."""
        return results.like_rows(sorted(self._status.items()), show), ["Variable_name", "Value"]

    def _variable_rows(self) -> list[tuple[str, str | None]]:
        return [(name, member_variables.shown(value)) for name, value in self.variables.list()]

    def _schema(self, name: str | None) -> str:
        """The served schema ``name`` names (lower case): 1046 when none, 1049 when unknown."""
        if not name:
            raise sql_error(ER_NO_DB_ERROR, "No database selected")
        if name.lower() not in catalog.SCHEMAS and name.lower() != catalog.INFORMATION_SCHEMA:
            raise sql_error(ER_BAD_DB_ERROR, f"Unknown database '{name}'")
        return name.lower()

    def _table_name(self, schema: str, name: str) -> str:
        """The table ``name`` of ``schema`` as defined (any case): 1146 when there is none."""
        columns = _columns_of(schema, name.lower())
        if columns is None:
            raise sql_error(ER_NO_SUCH_TABLE, f"Table '{schema}.{name}' doesn't exist")
        return name.upper() if schema == catalog.INFORMATION_SCHEMA else name.lower()

    async def query(
        self,
        expression: exp.Expression,
        sql: str,  # noqa: ARG002  (mysql-mimic's signature)
        attrs: dict[str, str],  # noqa: ARG002
    ) -> Any:
        """Run a read over the served tables; refuse anything else (1290, or 1235 for EXPLAIN)."""
        if isinstance(expression, exp.Describe):
            raise sql_error(
                ER_NOT_SUPPORTED_YET, "This version of MySQL doesn't yet support 'EXPLAIN'"
            )
        if not isinstance(expression, exp.Query) or expression.args.get("into"):
            if denied.is_unlock_tables(expression):
                return [], []
            refusal = denied.denial(expression, self._served_table, *self._account())
            raise refusal if refusal is not None else denied.read_only_error()
        sources = self._resolve(expression)
        plain = results.plain_projection(expression, sources)
        snapshot = self._snapshot(sources)
        zone = self.time_zone
        if plain is not None:
            columns, rows = next(iter(snapshot.values()))
            return results.plain_result(plain, columns, rows, zone, self._limits)
        projections = results.projections(expression, sources)
        names, rows = await self._execute(expression, snapshot, zone)
        return results.executed_result(projections, names, rows, zone)

    async def _execute(
        self,
        expression: exp.Expression,
        snapshot: Mapping[tuple[str, str], tuple[tuple[Column, ...], list[tuple[Value, ...]]]],
        zone: TimeZone,
    ) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
        """Run ``expression`` on the worker thread within the time limit (3024 past it).

        TIMESTAMP(6) values are MySQL's text in ``zone`` there.
        """
        return await self._off_loop(
            functools.partial(execution.run_query, expression, snapshot, zone, self._limits),
            expression,
        )

    async def _off_loop(self, work: Callable[[], T], statement: exp.Expression | None = None) -> T:
        """Run ``work`` (``statement``'s) on the worker thread (:func:`.execution.off_loop`).

        Its time is what is left of the statement's (``limits.sql_query_timeout_s``).
        """
        timeout = self._limits.sql_query_timeout_s
        if self._deadline is not None:
            timeout = max(self._deadline - asyncio.get_running_loop().time(), 0.0)
        return await execution.off_loop(self._executor, work, timeout, statement)

    def _resolve(self, expression: exp.Expression) -> dict[tuple[str, str], tuple[Column, ...]]:
        """The served tables ``expression`` reads, by (schema, table); names made canonical."""
        try:
            tables = find_tables(expression)
        except SqlglotError as error:
            raise sql_error(ErrorCode.UNKNOWN_ERROR, str(error)) from None
        found: dict[tuple[str, str], tuple[Column, ...]] = {}
        for table in tables:
            db = table.db or self.database
            if not db:
                raise sql_error(ER_NO_DB_ERROR, "No database selected")
            schema, name = db.lower(), table.name.lower()
            columns = _columns_of(schema, name)
            if columns is None:
                raise sql_error(ER_NO_SUCH_TABLE, f"Table '{db}.{table.name}' doesn't exist")
            table.set("db", exp.to_identifier(schema))
            table.set("this", exp.to_identifier(name))
            found[schema, name] = columns
        return found

    def _snapshot(
        self, sources: Mapping[tuple[str, str], object]
    ) -> dict[tuple[str, str], tuple[tuple[Column, ...], list[tuple[Value, ...]]]]:
        """The columns and rows of each table in ``sources``, read now (on the event loop)."""
        served: dict[bool, Mapping[str, Table]] = {}
        snapshot = {}
        for schema, name in sources:
            if schema == catalog.INFORMATION_SCHEMA:
                columns = metadata.info_tables()[name].columns
                counts = self._row_counts() if name == "tables" else {}
                snapshot[schema, name] = (columns, metadata.info_rows(name, counts))
                continue
            if name in catalog.SESSION_TABLES:
                snapshot[schema, name] = (
                    catalog.SESSION_TABLES[name].columns,
                    self._session_rows(name),
                )
                continue
            if schema == sys_schema.SYS_SCHEMA:
                snapshot[schema, name] = (sys_schema.VIEWS[name].columns, self._view_rows())
                continue
            extended = catalog.extended(schema)
            if extended not in served:
                served[extended] = self._source.tables(extended)
            columns, rows = served[extended][name]
            snapshot[schema, name] = (tuple(columns), list(rows))
        return snapshot

    def _view_rows(self) -> list[tuple[Value, ...]]:
        """sys.gr_member_routing_candidate_status, from the served tables and the member."""
        served = self._source.tables(extended=False)
        snapshot = self._identity.snapshot if self._identity is not None else None
        return sys_schema.routing_candidate_rows(
            str(self.variables.get("server_uuid")),
            served["replication_group_members"],
            served["replication_group_member_stats"],
            read_only=bool(self.variables.get("read_only")),
            super_read_only=bool(self.variables.get("super_read_only")),
            transactions_behind=snapshot.transactions_behind if snapshot is not None else None,
        )

    def _session_rows(self, name: str) -> list[tuple[Value, ...]]:
        """A session table's rows (global_variables, global_status, communication), by name."""
        if name == catalog.GLOBAL_STATUS.name:
            return sorted(self._status.items())
        if name == catalog.COMMUNICATION_INFORMATION.name:
            return list(self._communication)
        return list(self._variable_rows())

    def _row_counts(self) -> dict[tuple[str, str], int]:
        """How many rows each served table has now (information_schema.TABLES.TABLE_ROWS)."""
        counts = {}
        for schema, (extended, tables) in catalog.SCHEMAS.items():
            served = self._source.tables(extended)
            for name in tables:
                if name in catalog.SESSION_TABLES:
                    rows = self._session_rows(name)
                elif schema == sys_schema.SYS_SCHEMA:
                    rows = self._view_rows()
                else:
                    rows = list(served[name][1])
                counts[schema, name] = len(rows)
        return counts

    def _served_table(self, table: exp.Table) -> tuple[str, str] | None:
        """The served table ``table`` names, as (schema, name), or None (a write's target)."""
        db = (table.db or self.database or "").lower()
        name = table.name.lower()
        if db in catalog.SCHEMAS and catalog.table_columns(db, name) is not None:
            return db, name
        return None

    def _account_name(self) -> tuple[str, str]:
        """The client's account as SHOW GRANTS names it: its user, and any host (``%``)."""
        return str(self.username or ""), server_show.ACCOUNT_HOST

    def _legacy_show(self) -> bool:
        """Whether the statement running said SLAVE (SHOW SLAVE STATUS: MySQL's old names)."""
        return bool(re.match(r"\s*SHOW\s+SLAVE\b", self.activity.statement or "", re.IGNORECASE))

    def _account(self) -> tuple[str, str]:
        """The client's user and host as MySQL's errors name them (127.0.0.1 is localhost)."""
        host = ""
        connection = self._connection
        if connection is not None:
            peer = connection.stream.writer.get_extra_info("peername")
            host = str(peer[0]) if isinstance(peer, tuple) and peer else ""
        if host in {"127.0.0.1", "::1", ""}:
            host = "localhost"
        return str(self.username or ""), host


def _columns_of(schema: str, name: str) -> tuple[Column, ...] | None:
    """The columns of a served or information_schema table (lower-case names), else None."""
    if schema == catalog.INFORMATION_SCHEMA:
        table = metadata.info_tables().get(name)
        return table.columns if table is not None else None
    return catalog.table_columns(schema, name)
