"""``grstats spark report``: group-wide figures from the ingested table.

One model (:mod:`~grstats.spark.report.model`): partials (:mod:`grstats.spark.rollup`), read
from the rollups ingest wrote or made from the member rows, stitched into pieces, from which
every result table is computed. Modules:

* ``inputs``: where the partials come from (rollups or member rows) and at what grain;
* ``rollup_job``: the Spark jobs whose Python tasks read or make the partials;
* ``stitch``: partials into pieces (each member's minutes, segments, percentiles, group totals);
* ``arrow_tables``: pieces into result tables; ``tables``: the result tables' schemas;
* ``model``: the pipeline from partials to result tables, and the charts' grain.

Around them: ``config`` (what a run covers; no pyspark), ``job`` (read, compute, write),
``output`` (Parquet and CSV), ``summary`` (summary.json), ``page`` and ``svg`` (report.html),
``fleet`` (a fleet's page). pyspark is imported only by the modules that need it, never by
this package itself.
"""
