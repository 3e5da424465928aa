"""``python -m grstats`` is ``grstats``."""

from __future__ import annotations

import sys

from grstats.cli import main

sys.exit(main())
