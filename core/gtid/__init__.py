"""MySQL GTIDs and GTID sets: the exact text format and the set algebra (sql/rpl_gtid_set.cc).

>>> s = GtidSet.parse("3E11FA47-71CA-11E1-9E33-C80AA9429562:21-57")
>>> str(s - GtidSet.parse("3E11FA47-71CA-11E1-9E33-C80AA9429562:23-24"))
'3e11fa47-71ca-11e1-9e33-c80aa9429562:21-22:25-57'

Text in is read as ``Gtid_set::add_gtid_text`` reads it, and one GTID as ``Gtid::parse``:

* GNOs are read by ``parse_gno``, which is C's ``strtoll`` in base 0: ``0x10`` is 16, a leading
  zero means octal (``010`` is 8, ``08`` and ``019`` are malformed), a ``+`` is allowed, and so
  are spaces before a number. A GNO runs from 1 to 2^63 - 2; 2^63 - 1 and overflow are malformed.
* In ``a-b``, ``b`` may be 0 (also ``-0``) or less than ``a``: the interval adds nothing, and is
  not an error. ``uuid:1-`` converts no number after the dash, so ``b`` is 0: it adds nothing.
* UUIDs are the dashed 36-character form, in either case; spaces go around every token; commas
  may repeat and trail; intervals may repeat, overlap and come in any order.
* Tags (MySQL 8.3+, ``tags=True``, the default) are 1 to 32 of ``[A-Za-z_][A-Za-z0-9_]``,
  lowercased, with spaces allowed around but not inside them (``Tag::from_cstring``). Spaces
  alone between two colons, or after the last one, read as an *empty* tag: ``uuid:t:1: :2``
  puts 2 back under the untagged UUID, and ``uuid: `` is the empty set. ``tags=False`` reads as
  MySQL 5.7 and 8.0, where any tag, and those spaces, are malformed. Text without tags reads
  the same either way, so every caller uses the default: servers before 8.3 print no tags.

Deliberate differences from MySQL:

* A NUL character is malformed. MySQL reads a C string, which ends at the first NUL, so it
  would read ``uuid:1<NUL>junk`` as ``uuid:1``; grstats refuses rather than drop the rest.
* ``0b101`` is malformed. A ``strtoll`` of C23 (glibc 2.38 and later, when the server is built
  for C23 or GNU extensions) reads it as 5; older C libraries, and MySQL's official builds on
  them, read ``0`` and stop at ``b``. grstats follows the older reading.
* The newest MySQL 9.x development tree adds a second GTID library (``libs/mysql/gtids``) with
  its own text parser; grstats follows ``add_gtid_text`` of the 8.0 and 8.4 releases.
"""

from __future__ import annotations

from grstats.core.gtid._bounds import GNO_MAX, GNO_MIN
from grstats.core.gtid._errors import GtidError, GtidParseError
from grstats.core.gtid._scan import TAG_MAX_LENGTH
from grstats.core.gtid._set import Gtid, GtidInterval, GtidSet
from grstats.core.gtid._text import UUID_SEPARATOR

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
