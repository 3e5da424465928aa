"""The demo's output directory: agents' state and logs, the spool, the table and the report."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from typing import TYPE_CHECKING

from grstats.cli.errors import CliError

if TYPE_CHECKING:
    from pathlib import Path

#: The file that marks a directory as the demo's own, so a later run may empty it.
MARKER = ".grstats-demo"


@dataclass(frozen=True, slots=True)
class Workdir:
    """Where each part of the demo writes, under one directory the user can open."""

    root: Path

    @property
    def agents(self) -> Path:
        """The agents' logs and state directories."""
        return self.root / "agents"

    def agent_log(self, index: int) -> Path:
        """Agent ``index``'s log."""
        return self.agents / f"agent-{index}.log"

    def agent_state(self, index: int) -> Path:
        """Agent ``index``'s state directory (its member registry)."""
        return self.agents / f"state-{index}"

    def agent_state_again(self, index: int) -> Path:
        """The new, empty state directory of agent ``index`` started again."""
        return self.agents / f"state-{index}-again"

    def agent_log_again(self, index: int) -> Path:
        """The log of agent ``index`` started again."""
        return self.agents / f"agent-{index}-again.log"

    @property
    def logs(self) -> Path:
        """The collector's and the Spark jobs' logs."""
        return self.root / "logs"

    @property
    def spool(self) -> Path:
        """The collector's spool."""
        return self.root / "spool"

    @property
    def table(self) -> Path:
        """The ingested Parquet table."""
        return self.root / "table"

    @property
    def report(self) -> Path:
        """The Spark report: report.html, summary.json, tables/."""
        return self.root / "report"


def prepare(root: Path) -> Workdir:
    """Create ``root`` (or empty it if an earlier demo wrote it); refuse anyone else's directory."""
    if root.exists():
        if not root.is_dir():
            raise CliError(f"--out: {str(root)!r} exists and is not a directory", code=2)
        if (root / MARKER).exists():
            shutil.rmtree(root)
        elif any(root.iterdir()):
            raise CliError(
                f"--out: {str(root)!r} is not empty and not an earlier demo's directory "
                "(no .grstats-demo file in it): choose another --out or remove it",
                code=2,
            )
    try:
        root.mkdir(parents=True, exist_ok=True)
        (root / MARKER).write_text(
            "Written by grstats demo; the next demo run empties this directory.\n",
            encoding="utf-8",
        )
    except OSError as exc:
        raise CliError(f"--out: cannot write {str(root)!r}: {exc.strerror}", code=2) from exc
    return Workdir(root)
