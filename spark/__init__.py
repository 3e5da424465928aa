"""grstats Spark jobs: load spooled snapshots and write group-wide reports."""
