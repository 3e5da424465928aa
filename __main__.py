"""``python -m grstats`` is ``grstats``."""

from __future__ import annotations

from grstats.cli import script

script()
