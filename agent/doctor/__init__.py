"""``grstats doctor``: check everything an operator set up for one agent, as a checklist.

Each check gives one line, ok, failed (with its fix), a warning or skipped (with the reason);
the run passes when none failed. :func:`check_config` loads the config (the first line);
:func:`examine` runs the others: this host (:mod:`~grstats.agent.doctor.local`, the ports:
:mod:`~grstats.agent.doctor.ports`), the member's MySQL server
(:mod:`~grstats.agent.doctor.source`), this agent's certificate
(:mod:`~grstats.agent.doctor.certificate`) and the peers (:mod:`~grstats.agent.doctor.peers`).
:mod:`~grstats.agent.doctor.checklist` renders the lines for people or scripts.
"""

from __future__ import annotations

from grstats.agent.doctor.checklist import (
    FAILED,
    OK,
    SKIPPED,
    STATUSES,
    WARNING,
    Check,
    passed,
    render_json,
    render_table,
)
from grstats.agent.doctor.local import check_config, not_checked
from grstats.agent.doctor.run import DoctorOptions, examine

__all__ = [
    "FAILED",
    "OK",
    "SKIPPED",
    "STATUSES",
    "WARNING",
    "Check",
    "DoctorOptions",
    "check_config",
    "examine",
    "not_checked",
    "passed",
    "render_json",
    "render_table",
]
