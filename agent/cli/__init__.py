"""The agent's subcommands of ``grstats`` (agent, demo, query, simulate, version).

:mod:`grstats.cli`, above this package, assembles them with the collector's and Spark's.
"""
