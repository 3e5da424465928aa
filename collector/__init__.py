"""grstats collector: polls agents and spools snapshots durably for the Spark reports."""
