"""The fleet page fits a window 1,000 and 1,400 px wide, in headless Chromium: its tables too.

The page is the fleet of tests/spark/report/fleet_model.py (five groups from the report's
model, one with a primary failover's events as the simulator's agents served them), with a
script added at its end that measures it once laid out: the page's width against the
window's, and how far each table's rows run past the right edge of the page's column (a
table wider than the column scrolls inside its own box, so the page would not show it, but a
reader would have to scroll to see its last columns). Chromium writes the result into the
page, and ``--dump-dom`` prints it.
"""

from __future__ import annotations

import json
import re
import subprocess
from typing import TYPE_CHECKING, Any

import pytest

from grstats.agent.sim.scenario import load_scenario
from grstats.spark.report.fleet import render_fleet
from tests.programs import require
from tests.spark.report.fleet_model import five_groups
from tests.spark.report.test_event_tables import _failover_of

if TYPE_CHECKING:
    from pathlib import Path

#: One worker runs the module, so that its module-scoped fixtures are built once.
pytestmark = pytest.mark.xdist_group("report-page-width")

#: The widths the issue read the page at, in CSS px.
WIDTHS = (1000, 1400)
#: Measures the laid-out page into its root's ``data-fit`` attribute.
MEASURE = """<script>
(function () {
  var root = document.documentElement, body = document.body;
  var right = body.getBoundingClientRect().right - parseFloat(getComputedStyle(body).paddingRight);
  var wide = [];
  document.querySelectorAll("table").forEach(function (table) {
    var widest = 0;
    for (var i = 0; i < table.rows.length; i++) {
      widest = Math.max(widest, table.rows[i].getBoundingClientRect().right);
    }
    if (widest > right + 0.5) {
      wide.push(table.rows[0].textContent.slice(0, 60) + ": " + Math.ceil(widest - right) + " px");
    }
  });
  root.setAttribute("data-fit", JSON.stringify(
    {scrollWidth: root.scrollWidth, clientWidth: root.clientWidth, tables: wide}));
})();
</script>"""


@pytest.fixture(name="chromium", scope="module")
def _chromium() -> str:
    return require("chromium", "chromium")


@pytest.fixture(name="page", scope="module")
def _page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    fleet = five_groups(_failover_of(load_scenario("primary-failover"), 45, 100).events)
    text = render_fleet(
        "Group Replication report",
        "from 2026-01-05T12:00:00Z to the last snapshot",
        [fleet[label].entry for label in sorted(fleet)],
        {label: group.page for label, group in fleet.items()},
    )
    assert text.endswith("</body></html>")
    path = tmp_path_factory.mktemp("page-width") / "report.html"
    path.write_text(text.removesuffix("</body></html>") + MEASURE + "</body></html>", "utf-8")
    return path


def _measure(chromium: str, page: Path, width: int, profile: Path) -> dict[str, Any]:
    """The page laid out by ``chromium`` in a window ``width`` px wide: its root's measures."""
    done = subprocess.run(
        [
            chromium,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            f"--user-data-dir={profile}",
            f"--window-size={width},900",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'<html[^>]* data-fit="([^"]*)"', done.stdout)
    assert found, f"the page's script did not run: {done.stdout[:300]!r} {done.stderr[-1000:]}"
    measured: dict[str, Any] = json.loads(found.group(1).replace("&quot;", '"'))
    return measured


@pytest.mark.parametrize("width", WIDTHS)
def test_the_fleet_page_and_its_tables_fit_the_window(
    chromium: str, page: Path, width: int, tmp_path: Path
) -> None:
    """No sideways scroll at 1,000 or 1,400 px: not of the page, and no table wider than it."""
    measured = _measure(chromium, page, width, tmp_path / "profile")
    assert measured["clientWidth"] <= width
    assert measured["clientWidth"] > width * 0.9  # the window was that wide
    assert measured["scrollWidth"] <= measured["clientWidth"], measured
    assert measured["tables"] == []
