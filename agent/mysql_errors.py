"""MySQL's error numbers grstats sends or reads, each defined once, and their SQLSTATEs.

The numbers and names are MySQL's (include/mysqld_error.h, generated from
share/messages_to_clients.txt), the client library's CR_ codes are errmsg.h's. The SQL
endpoint (:mod:`grstats.agent.sql`) answers with the ER_ codes, the MySQL source
(:mod:`grstats.agent.sources.mysql`) reads them in its server's errors. :data:`SQLSTATES` holds
each one's SQLSTATE where it is not HY000, as ``messages_to_clients.txt`` gives it: the
``mysql`` client prints it (``ERROR 1146 (42S02)``).
"""

from __future__ import annotations

ER_CON_COUNT_ERROR = 1040
ER_DBACCESS_DENIED_ERROR = 1044
ER_ACCESS_DENIED_ERROR = 1045
ER_NO_DB_ERROR = 1046
ER_BAD_DB_ERROR = 1049
ER_BAD_FIELD_ERROR = 1054
ER_PARSE_ERROR = 1064
ER_TOO_BIG_SELECT = 1104
ER_CANT_INITIALIZE_UDF = 1123
ER_HOST_NOT_PRIVILEGED = 1130
ER_TABLEACCESS_DENIED_ERROR = 1142
ER_COLUMNACCESS_DENIED_ERROR = 1143
ER_NO_SUCH_TABLE = 1146
ER_NET_PACKET_TOO_LARGE = 1153
ER_NET_READ_INTERRUPTED = 1159
ER_UNKNOWN_SYSTEM_VARIABLE = 1193
ER_SPECIFIC_ACCESS_DENIED_ERROR = 1227
ER_GLOBAL_VARIABLE = 1229
ER_WRONG_TYPE_FOR_VAR = 1232
ER_NOT_SUPPORTED_YET = 1235
ER_OPTION_PREVENTS_STATEMENT = 1290
ER_UNKNOWN_TIME_ZONE = 1298
ER_SP_DOES_NOT_EXIST = 1305
ER_STACK_OVERRUN_NEED_MORE = 1436
ER_TOO_HIGH_LEVEL_OF_NESTING_FOR_SELECT = 1473
ER_WRONG_PERFSCHEMA_USAGE = 1683
ER_DATA_OUT_OF_RANGE = 1690
ER_MALFORMED_GTID_SET_SPECIFICATION = 1772
ER_QUERY_TIMEOUT = 3024
ER_CLIENT_INTERACTION_TIMEOUT = 4031

#: The client library's own errors (include/errmsg.h): the connection went away.
CR_SERVER_GONE_ERROR = 2006
CR_SERVER_LOST = 2013
CR_SERVER_LOST_EXTENDED = 2055

#: The SQLSTATE of each code above that is not HY000 (share/messages_to_clients.txt).
SQLSTATES: dict[int, bytes] = {
    ER_DBACCESS_DENIED_ERROR: b"42000",
    ER_NO_DB_ERROR: b"3D000",
    ER_BAD_DB_ERROR: b"42000",
    ER_BAD_FIELD_ERROR: b"42S22",
    ER_PARSE_ERROR: b"42000",
    ER_TOO_BIG_SELECT: b"42000",
    ER_TABLEACCESS_DENIED_ERROR: b"42000",
    ER_COLUMNACCESS_DENIED_ERROR: b"42000",
    ER_NO_SUCH_TABLE: b"42S02",
    ER_NET_PACKET_TOO_LARGE: b"08S01",
    ER_NET_READ_INTERRUPTED: b"08S01",
    ER_WRONG_TYPE_FOR_VAR: b"42000",
    ER_NOT_SUPPORTED_YET: b"42000",
    ER_SP_DOES_NOT_EXIST: b"42000",
}
