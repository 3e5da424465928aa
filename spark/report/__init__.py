"""``grstats spark report``: group-wide figures from the ingested member rows.

Modules, one job each: ``config`` (what a run covers, no pyspark), ``transforms`` and its
siblings (pure DataFrame -> DataFrame functions with explicit schemas), ``job`` (read,
transform, write), and the writers of the HTML report, the tables and ``summary.json``.
pyspark is imported only by the modules that need it, never by this package itself.
"""
