"""grstats agent: one per Group Replication member; reads it and gossips its rows to the others."""
