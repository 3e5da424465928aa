"""The agent's read-only MySQL-protocol endpoint (``sql_listen``): the tables for SQL clients.

:class:`SqlEndpoint` serves, with mysql-mimic, ``performance_schema``'s
``replication_group_members`` and ``replication_group_member_stats`` (every member's rows, as
MySQL names and types them) and the schema ``grstats`` (every served table with the freshness
columns), so that ``mysql``/``mariadb`` clients, drivers and exporters that speak MySQL read
the whole group from any agent, and ``sys.gr_member_routing_candidate_status`` for ProxySQL.
Anything that would change the server is refused as on a ``read_only`` server.

This package loads mysql-mimic and sqlglot: the agent imports it only when ``sql_listen`` is
set. :mod:`~grstats.agent.sql.catalog` holds the schemas, :mod:`~grstats.agent.sql.session`
the statements (with :mod:`~grstats.agent.sql.server_variables` its variables,
:mod:`~grstats.agent.sql.results` its result sets, :mod:`~grstats.agent.sql.execution` the
executor's run and :mod:`~grstats.agent.sql.errors` MySQL's errors),
:mod:`~grstats.agent.sql.bounds` what one may cost (:mod:`~grstats.agent.sql.value_bounds`
its values as it runs), :mod:`~grstats.agent.sql.auth` the logins and
:mod:`~grstats.agent.sql.endpoint` the server; :mod:`~grstats.agent.sql.denied` the refusals,
:mod:`~grstats.agent.sql.functions` the functions, :mod:`~grstats.agent.sql.server_show` the
server's SHOW statements and :mod:`~grstats.agent.sql.sys_schema` the sys view.
"""

from __future__ import annotations

from typing import cast

from mysql_mimic.errors import SQLSTATES, ErrorCode

from grstats.core import mysql_errors

# mysql-mimic sends an error's SQLSTATE from its table (HY000 for a code it does not know); it
# knows only its own codes, so MySQL's are added once, here, before any module of the endpoint
# can answer (the mysql client prints them: ERROR 1146 (42S02)).
for _code, _state in mysql_errors.SQLSTATES.items():
    SQLSTATES.setdefault(cast("ErrorCode", _code), _state)

from grstats.agent.sql.endpoint import SqlEndpoint  # noqa: E402  (after the SQLSTATEs)

__all__ = ["SqlEndpoint"]
