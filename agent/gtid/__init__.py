"""MySQL GTIDs and GTID sets: the exact text format and the set algebra (sql/rpl_gtid_set.cc).

>>> s = GtidSet.parse("3E11FA47-71CA-11E1-9E33-C80AA9429562:21-57")
>>> str(s - GtidSet.parse("3E11FA47-71CA-11E1-9E33-C80AA9429562:23-24"))
'3e11fa47-71ca-11e1-9e33-c80aa9429562:21-22:25-57'
"""

from __future__ import annotations

from grstats.agent.gtid._bounds import GNO_MAX, GNO_MIN
from grstats.agent.gtid._errors import GtidError, GtidParseError
from grstats.agent.gtid._set import Gtid, GtidInterval, GtidSet
from grstats.agent.gtid._text import TAG_MAX_LENGTH, UUID_SEPARATOR

__all__ = [
    "GNO_MAX",
    "GNO_MIN",
    "TAG_MAX_LENGTH",
    "UUID_SEPARATOR",
    "Gtid",
    "GtidError",
    "GtidInterval",
    "GtidParseError",
    "GtidSet",
]
