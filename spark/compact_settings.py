"""The defaults of ``grstats spark compact``, without pyspark (the command's help reads them).

:mod:`grstats.spark.compact` does the work with them.
"""

from __future__ import annotations

#: The compacted files' size (delta-rs' default for OPTIMIZE is 100 MiB; a day of a 3-member
#: group's member rows is a few tens of MB, so about one file a day for most groups).
TARGET_MIB = 128
#: An ingest compacts a dataset's date it added to once that date holds more files than
#: this (a day of segments sealed every minute adds 1,440 to each dataset).
COMPACT_OVER = 64
#: How long replaced files stay for readers of earlier versions: Delta's default
#: ``delta.deletedFileRetentionDuration``, 7 days.
VACUUM_HOURS = 168
