"""``python -m agent`` is ``grstats``."""

from __future__ import annotations

import sys

from agent.cli import main

sys.exit(main())
