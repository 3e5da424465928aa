"""Tests of the agent's read-only MySQL-protocol endpoint."""
