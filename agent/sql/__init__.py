"""The agent's read-only MySQL-protocol endpoint (``sql_listen``): the tables for SQL clients.

:class:`SqlEndpoint` serves, with mysql-mimic, ``performance_schema``'s
``replication_group_members`` and ``replication_group_member_stats`` (every member's rows, as
MySQL names and types them) and the schema ``grstats`` (every served table with the freshness
columns), so that ``mysql``/``mariadb`` clients, drivers and exporters that speak MySQL read
the whole group from any agent, and ``sys.gr_member_routing_candidate_status`` for ProxySQL.
Anything that would change the server is refused as on a ``read_only`` server.

This package loads mysql-mimic and sqlglot: the agent imports it only when ``sql_listen`` is
set. :mod:`~grstats.agent.sql.catalog` holds the schemas, :mod:`~grstats.agent.sql.session`
the statements, :mod:`~grstats.agent.sql.bounds` what one may cost,
:mod:`~grstats.agent.sql.auth` the logins and :mod:`~grstats.agent.sql.endpoint` the server;
:mod:`~grstats.agent.sql.denied` the refusals, :mod:`~grstats.agent.sql.functions` the
functions, :mod:`~grstats.agent.sql.server_show` the server's SHOW statements and
:mod:`~grstats.agent.sql.sys_schema` the sys view.
"""

from __future__ import annotations

from grstats.agent.sql.endpoint import SqlEndpoint

__all__ = ["SqlEndpoint"]
