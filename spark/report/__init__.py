"""``grstats spark report``: group-wide figures from the ingested member rows.

One module per job. Transforms are pure DataFrame -> DataFrame functions, each with the
explicit schema it returns, built from Spark's own functions and window functions only:

* ``steps``: each member's snapshots in time order (deltas, held time, segments);
* ``minutes``: the one pass over every row, folded into runs and minutes;
* ``episodes``: gaps and islands of state, connectedness and throttling;
* ``snapshots``: the group at each snapshot; ``percentiles``; ``figures`` (per member and
  group); ``hourly``; ``worst``; ``series`` (chart points);
* ``source``: the time range.

Around them: ``config`` (what a run covers; no pyspark), ``job`` (read, transform, write),
``output`` (Parquet and CSV), ``summary`` (summary.json), ``page`` and ``svg`` (report.html).
pyspark is imported only by the modules that need it, never by this package itself.
"""
