"""grstats: every MySQL Group Replication member's health, from any member.

The repository's root is this package: each folder is the subpackage of its name
(``agent/`` is :mod:`grstats.agent`, ``collector/`` :mod:`grstats.collector`, ``spark/``
:mod:`grstats.spark`, ``proto/`` :mod:`grstats.proto`), and :mod:`grstats.cli` is the command
line above them all. docs/architecture.md draws the layers. :data:`__version__` is the
version git gives this tree (:mod:`grstats._version`).
"""

from __future__ import annotations

from grstats._version import __version__

__all__ = ["__version__"]
