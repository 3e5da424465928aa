"""The vocabulary every wing shares, below them all.

Rows and their schema, GTID sets, errors and faults, labels, addresses, the clock, log setup,
TLS and token settings, the wire contract's revision and the Query service's table form.

It sits below the agent, the collector and the Spark jobs (docs/architecture.md): it imports
nothing of theirs, and :mod:`grstats.proto` is the only grstats package below it.
"""
