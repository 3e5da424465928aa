"""The server variables an endpoint's session starts with: :data:`VARIABLES`, mysql-mimic's schema.

mysql-mimic's own, with the identity's (``@@version``, ``@@server_uuid``, ``@@hostname``,
``@@port``: :class:`~.session.GrstatsSession` sets them at each statement), a read-only
server's, the settings clients send on connect, and the member's (:mod:`.variables`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mysql_mimic.variables import SYSTEM_VARIABLES

from grstats.agent.sql import variables as member_variables
from grstats.agent.sql.errors import sql_error
from grstats.core.mysql_errors import ER_UNKNOWN_TIME_ZONE
from grstats.core.rows.zone import TimeZoneError, parse_time_zone

if TYPE_CHECKING:
    from mysql_mimic.variables import VariableSchema

VERSION_COMMENT = "grstats read-only Group Replication stats"
#: The version MySQL reports before the agent has read its server's.
DEFAULT_VERSION = "8.0.0"


def time_zone_variable(value: object) -> str:
    """``@@time_zone`` as MySQL shows a value set: ``SYSTEM``, ``+02:00``, ``Europe/Paris``.

    Raises:
        MysqlError: 1298, "Unknown or incorrect time zone: 'x'", as MySQL's ``my_tz_find``.
    """
    try:
        return parse_time_zone(str(value)).name
    except TimeZoneError as exc:
        raise sql_error(ER_UNKNOWN_TIME_ZONE, str(exc)) from None


#: MySQL 8.4's default ``optimizer_switch`` (sql/sys_vars.cc, ``Sys_optimizer_switch``).
OPTIMIZER_SWITCH = (
    "index_merge=on,index_merge_union=on,index_merge_sort_union=on,"
    "index_merge_intersection=on,engine_condition_pushdown=on,index_condition_pushdown=on,"
    "mrr=on,mrr_cost_based=on,block_nested_loop=on,batched_key_access=off,materialization=on,"
    "semijoin=on,loosescan=on,firstmatch=on,duplicateweedout=on,"
    "subquery_materialization_cost_based=on,use_index_extensions=on,"
    "condition_fanout_filter=on,derived_merge=on,use_invisible_indexes=off,skip_scan=on,"
    "hash_join=on,subquery_to_derived=off,prefer_ordering_index=on,hypergraph_optimizer=off,"
    "derived_condition_pushdown=on,hash_set_operations=on"
)


def results_charset_variable(value: object) -> str:
    """``@@character_set_results`` as the endpoint keeps it: ``binary`` (no conversion) as utf8mb4.

    mysqldump sets ``binary`` around SHOW CREATE TABLE; the endpoint's text is UTF-8 already,
    which is what no conversion sends (mysql-mimic cannot encode with ``binary`` itself).
    """
    text = str(value)
    return "utf8mb4" if text.lower() in {"binary", "none", "null"} else text


#: The endpoint's ``time_zone`` until a session sets one: UTC (MySQL's default is SYSTEM).
DEFAULT_TIME_ZONE = "+00:00"

#: The server's variables: mysql-mimic's, with the identity's and a read-only server's.
VARIABLES: dict[str, VariableSchema] = {
    **SYSTEM_VARIABLES,
    "version": (str, f"{DEFAULT_VERSION}-grstats", False),
    "version_comment": (str, VERSION_COMMENT, False),
    "server_uuid": (str, "", False),
    "hostname": (str, "", False),
    "port": (int, 0, False),
    "performance_schema": (bool, True, False),
    "time_zone": (time_zone_variable, DEFAULT_TIME_ZONE, True),
    # Session settings clients send on connect: mysqld_exporter 0.14 sends
    # SET lock_wait_timeout=2 and counts the connection down if it fails.
    "lock_wait_timeout": (int, 31536000, True),
    "net_read_timeout": (int, 30, True),
    "innodb_lock_wait_timeout": (int, 50, True),
    # mysqldump's: SET SQL_QUOTE_SHOW_CREATE=1 (it stops when refused), @@optimizer_switch
    "character_set_results": (results_charset_variable, "utf8mb4", True),
    "sql_quote_show_create": (bool, True, True),
    "optimizer_switch": (str, OPTIMIZER_SWITCH, True),
    "unique_checks": (bool, True, True),
    "foreign_key_checks": (bool, True, True),
    "sql_notes": (bool, True, True),
    **member_variables.SCHEMA,
}
