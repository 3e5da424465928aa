"""Agents on separate test hosts in network namespaces: partitions, cut links, stalls, skewed clocks."""
