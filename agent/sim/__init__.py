"""The built-in simulated group: a deterministic Group Replication model for demos and tests."""
