"""The doctor's checklist: what each check found, and the list as text or JSON (pure).

A :class:`Check` is one line of ``grstats doctor``: its ``name`` (stable, for scripts:
``config``, ``state_dir``, ``port.listen``, ``mysql.connect``, ``peer:HOST:PORT``, ...), its
status (:data:`STATUSES`), what it found and, unless it passed, what to do. The run passes
when no check failed: warnings and skipped checks do not fail it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from grstats.core.checks import check_choice

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

OK = "ok"
WARNING = "warning"
SKIPPED = "skipped"
FAILED = "failed"
#: Every status, in the order the summary counts them.
STATUSES = (OK, WARNING, SKIPPED, FAILED)

#: The label of each status in the table, all of one width.
LABELS = {OK: "[ ok ]", WARNING: "[warn]", SKIPPED: "[skip]", FAILED: "[FAIL]"}
#: The colour of each label on a terminal (ANSI SGR codes): green, yellow, dim, bold red.
COLOURS = {OK: "32", WARNING: "33", SKIPPED: "2", FAILED: "1;31"}
_FIX_INDENT = " " * (len(LABELS[OK]) + 1)


@dataclass(frozen=True, slots=True)
class Check:
    """One line of the checklist.

    Attributes:
        name: what was checked, stable for scripts (``port.listen``, ``peer:db2:7400``).
        status: one of :data:`STATUSES`.
        message: what the check found, one sentence naming the file, address or account.
        fix: what to do about it; ``""`` for a check that passed or was skipped.
    """

    name: str
    status: str
    message: str
    fix: str = ""

    def __post_init__(self) -> None:
        check_choice("status", self.status, STATUSES)

    @classmethod
    def ok(cls, name: str, message: str) -> Check:
        """A check that passed."""
        return cls(name, OK, message)

    @classmethod
    def failed(cls, name: str, message: str, fix: str) -> Check:
        """A check that failed, with what to do."""
        return cls(name, FAILED, message, fix)

    @classmethod
    def warning(cls, name: str, message: str, fix: str = "") -> Check:
        """A check that passed with a reservation (the run still passes)."""
        return cls(name, WARNING, message, fix)

    @classmethod
    def skipped(cls, name: str, reason: str) -> Check:
        """A check not made, and why (it depends on one that failed, or does not apply)."""
        return cls(name, SKIPPED, reason)


def passed(checks: Iterable[Check]) -> bool:
    """Whether no check failed."""
    return all(check.status != FAILED for check in checks)


def summary(checks: Sequence[Check]) -> str:
    """One line: how many checks had each status, and whether the run passed."""
    counts = [
        f"{sum(c.status == status for c in checks)} {status}"
        for status in STATUSES
        if any(c.status == status for c in checks)
    ]
    verdict = "passed" if passed(checks) else "FAILED"
    return f"{verdict}: {', '.join(counts) or 'nothing checked'}"


def render_table(checks: Sequence[Check], *, colour: bool = False) -> str:
    """The checklist for people: one line per check, a ``fix:`` line under each that has one.

    ``colour`` colours the labels with ANSI codes (for a terminal only).
    """
    lines = []
    for check in checks:
        label = LABELS[check.status]
        if colour:
            label = f"\x1b[{COLOURS[check.status]}m{label}\x1b[0m"
        lines.append(f"{label} {check.message}")
        if check.fix:
            lines.append(f"{_FIX_INDENT}fix: {check.fix}")
    lines.append(summary(checks))
    return "\n".join(lines) + "\n"


def render_json(checks: Sequence[Check]) -> str:
    """The checklist for scripts: ``{"ok": bool, "checks": [{name, status, message, fix}]}``."""
    document = {"ok": passed(checks), "checks": [asdict(check) for check in checks]}
    return json.dumps(document, indent=2) + "\n"
