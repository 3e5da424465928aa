"""SHOW GRANTS, SHOW PROCESSLIST and SHOW REPLICA STATUS as MySQL answers them on the endpoint.

* SHOW GRANTS: the account's grants as the endpoint enforces them, in MySQL 8's words
  (``mysql_show_grants``, sql/auth/sql_authorization.cc: one column ``Grants for user@host``,
  ``GRANT USAGE ON *.* TO `user`@`host```, then a SELECT on each served schema). Every account
  may read every served schema and nothing else, from any host the endpoint listens to (its
  host is ``%``); SHOW GRANTS FOR another user is the session's 1044 (:func:`.show.grants_for`);
* SHOW [FULL] PROCESSLIST: the endpoint's own connections of the client's user, as MySQL shows
  an account without the PROCESS privilege its own threads (``mysqld_list_processes``,
  sql/sql_show.cc): Id, User, Host (``host:port``), db, Command (``Query`` or ``Sleep``), Time
  (seconds in that command), State (``init`` for the SHOW itself, ``executing`` for another
  statement, ``''`` asleep), Info (the statement, its first 100 characters without FULL:
  ``PROCESS_LIST_WIDTH``);
* SHOW REPLICA STATUS and SHOW SLAVE STATUS: no row, with MySQL 8.0's columns (the Reference
  Manual's "SHOW REPLICA STATUS Statement"; SHOW SLAVE STATUS with the names before 8.0.22):
  the endpoint serves no asynchronous replication channel of its member.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mysql_mimic.results import ResultColumn
from mysql_mimic.types import ColumnType

from grstats.agent.sql import catalog

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

#: The host of every endpoint account in SHOW GRANTS: any (MySQL's ``%``).
ACCOUNT_HOST = "%"
#: sql/sql_show.cc, ``PROCESS_LIST_WIDTH``: Info's length without FULL.
PROCESS_LIST_WIDTH = 100

#: SHOW REPLICA STATUS's columns in order (MySQL 8.0.22 and later); the integer ones are
#: sent as BIGINT.
REPLICA_STATUS_COLUMNS = (
    "Replica_IO_State",
    "Source_Host",
    "Source_User",
    "Source_Port",
    "Connect_Retry",
    "Source_Log_File",
    "Read_Source_Log_Pos",
    "Relay_Log_File",
    "Relay_Log_Pos",
    "Relay_Source_Log_File",
    "Replica_IO_Running",
    "Replica_SQL_Running",
    "Replicate_Do_DB",
    "Replicate_Ignore_DB",
    "Replicate_Do_Table",
    "Replicate_Ignore_Table",
    "Replicate_Wild_Do_Table",
    "Replicate_Wild_Ignore_Table",
    "Last_Errno",
    "Last_Error",
    "Skip_Counter",
    "Exec_Source_Log_Pos",
    "Relay_Log_Space",
    "Until_Condition",
    "Until_Log_File",
    "Until_Log_Pos",
    "Source_SSL_Allowed",
    "Source_SSL_CA_File",
    "Source_SSL_CA_Path",
    "Source_SSL_Cert",
    "Source_SSL_Cipher",
    "Source_SSL_Key",
    "Seconds_Behind_Source",
    "Source_SSL_Verify_Server_Cert",
    "Last_IO_Errno",
    "Last_IO_Error",
    "Last_SQL_Errno",
    "Last_SQL_Error",
    "Replicate_Ignore_Server_Ids",
    "Source_Server_Id",
    "Source_UUID",
    "Source_Info_File",
    "SQL_Delay",
    "SQL_Remaining_Delay",
    "Replica_SQL_Running_State",
    "Source_Retry_Count",
    "Source_Bind",
    "Last_IO_Error_Timestamp",
    "Last_SQL_Error_Timestamp",
    "Source_SSL_Crl",
    "Source_SSL_Crlpath",
    "Retrieved_Gtid_Set",
    "Executed_Gtid_Set",
    "Auto_Position",
    "Replicate_Rewrite_DB",
    "Channel_Name",
    "Source_TLS_Version",
    "Source_public_key_path",
    "Get_Source_public_key",
    "Network_Namespace",
)
_INTEGER_COLUMNS = frozenset(
    {
        "Source_Port",
        "Connect_Retry",
        "Read_Source_Log_Pos",
        "Relay_Log_Pos",
        "Last_Errno",
        "Skip_Counter",
        "Exec_Source_Log_Pos",
        "Relay_Log_Space",
        "Until_Log_Pos",
        "Seconds_Behind_Source",
        "Last_IO_Errno",
        "Last_SQL_Errno",
        "Source_Server_Id",
        "SQL_Delay",
        "SQL_Remaining_Delay",
        "Source_Retry_Count",
        "Auto_Position",
        "Get_Source_public_key",
    }
)
#: SHOW SLAVE STATUS's names where they are not the new ones with Source/Replica swapped back.
_LEGACY_NAMES = {
    "Source_public_key_path": "Master_public_key_path",
    "Get_Source_public_key": "Get_master_public_key",
}


def legacy_name(name: str) -> str:
    """A SHOW REPLICA STATUS column's name in SHOW SLAVE STATUS (MySQL before 8.0.22)."""
    if name in _LEGACY_NAMES:
        return _LEGACY_NAMES[name]
    words = {"Source": "Master", "Replica": "Slave"}
    return "_".join(words.get(word, word) for word in name.split("_"))


def replica_status(*, legacy: bool) -> tuple[list[tuple[Any, ...]], list[ResultColumn]]:
    """SHOW REPLICA STATUS (SHOW SLAVE STATUS if ``legacy``): no row, MySQL 8.0's columns."""
    columns = [
        ResultColumn(
            legacy_name(name) if legacy else name,
            ColumnType.LONGLONG if name in _INTEGER_COLUMNS else ColumnType.VAR_STRING,
        )
        for name in REPLICA_STATUS_COLUMNS
    ]
    return [], columns


def _quoted(name: str) -> str:
    """An identifier in backquotes, as MySQL 8 writes a grant's names."""
    return "`" + name.replace("`", "``") + "`"


def grants(user: str, host: str) -> tuple[list[tuple[str]], list[ResultColumn]]:
    """SHOW GRANTS for ``user``@``host``: USAGE, and SELECT on each served schema."""
    account = f"{_quoted(user)}@{_quoted(host)}"
    rows = [(f"GRANT USAGE ON *.* TO {account}",)]
    rows += [
        (f"GRANT SELECT ON {_quoted(schema)}.* TO {account}",) for schema in sorted(catalog.SCHEMAS)
    ]
    return rows, [ResultColumn(f"Grants for {user}@{host}", ColumnType.VAR_STRING)]


class Activity:
    """What one session is doing, for SHOW PROCESSLIST: its statement and since when."""

    def __init__(self, now: float) -> None:
        self.statement: str | None = None  # the statement running, None while asleep
        self.since = now  # the monotonic time it started (or the last one ended)

    def start(self, statement: str, now: float) -> None:
        """A statement starts running."""
        self.statement, self.since = statement, now

    def end(self, now: float) -> None:
        """The statement ended: the session sleeps."""
        self.statement, self.since = None, now


@dataclass(frozen=True, slots=True)
class SessionView:
    """One connection as SHOW PROCESSLIST sees it."""

    connection_id: int
    user: str
    host: str
    database: str | None
    activity: Activity


def _connections(control: object) -> dict[int, Any]:
    """mysql-mimic's connections by id (``LocalControl._connections``; none for another)."""
    connections = getattr(control, "_connections", None)
    return dict(connections) if isinstance(connections, dict) else {}


def connection_ids(control: object) -> frozenset[int]:
    """The ids of the endpoint's connections open now."""
    return frozenset(_connections(control))


def _peer(connection: Any) -> str:
    """``host:port`` of a connection's client, as MySQL's processlist Host shows a TCP one."""
    try:
        peer = connection.stream.writer.get_extra_info("peername")
    except AttributeError:
        return ""
    if isinstance(peer, tuple) and len(peer) >= 2:
        return f"{peer[0]}:{peer[1]}"
    return str(peer or "")


def sessions(control: object) -> list[SessionView]:
    """The endpoint's connections that have a session with an activity (logged in)."""
    found = []
    for connection_id, connection in sorted(_connections(control).items()):
        session = getattr(connection, "session", None)
        activity = getattr(session, "activity", None)
        if session is None or not isinstance(activity, Activity) or session.username is None:
            continue
        found.append(
            SessionView(
                connection_id, str(session.username), _peer(connection), session.database, activity
            )
        )
    return found


PROCESSLIST_COLUMNS = (
    ResultColumn("Id", ColumnType.LONGLONG),
    ResultColumn("User", ColumnType.VAR_STRING),
    ResultColumn("Host", ColumnType.VAR_STRING),
    ResultColumn("db", ColumnType.VAR_STRING),
    ResultColumn("Command", ColumnType.VAR_STRING),
    ResultColumn("Time", ColumnType.LONG),
    ResultColumn("State", ColumnType.VAR_STRING),
    ResultColumn("Info", ColumnType.VAR_STRING),
)


def processlist(
    views: Iterable[SessionView], own: int | None, *, full: bool, now: float
) -> tuple[list[tuple[Any, ...]], Sequence[ResultColumn]]:
    """SHOW [FULL] PROCESSLIST for the connection ``own``: its user's connections, by Id."""
    listed = list(views)
    user = next((view.user for view in listed if view.connection_id == own), None)
    rows = []
    for view in listed:
        if view.user != user:
            continue
        statement = view.activity.statement
        if statement is None:
            command, state, info = "Sleep", "", None
        else:
            command = "Query"
            state = "init" if view.connection_id == own else "executing"
            info = statement if full else statement[:PROCESS_LIST_WIDTH]
        seconds = max(int(now - view.activity.since), 0)
        rows.append(
            (view.connection_id, view.user, view.host, view.database, command, seconds, state, info)
        )
    return rows, list(PROCESSLIST_COLUMNS)
