"""Issue 32's proof at a real 60 s scrape interval: two groups by name, no empty rate, no churn.

Not part of the suite (it takes about 7 minutes: a 5-minute rate needs 5 minutes of samples);
the suite proves the same rules at 15 s and 60 s with promtool (deploy/prometheus/tests/
rates.yml) and the names and queries at a 1 s interval (tests/deploy/test_grafana_live.py).
Run it from the repository's root as ``python -m tests.deploy.scrape_60s``; it prints what it
found and exits 1 when a check fails.

Two simulated groups of two members, ``east`` and ``west`` (``--group-name``, the same scenario
and seed), one agent per member with ``--metrics-listen``, all scraped every 60 s by a real
``prometheus`` loading deploy/prometheus/grstats.rules.yml as shipped (evaluated every 60 s).
After 6.5 minutes it checks: every member's five recorded rates are there and above 0;
``grstats_group_info`` names both groups; every agent gave one label set per member of
``grstats_member_info`` over the whole run; the fleet dashboard's group query gives both names.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from grstats.cli.demo import free_ports
from tests.deploy.test_prometheus_live import RULES, Stack, start, stop
from tests.programs import require

if TYPE_CHECKING:
    import subprocess

MEMBERS = 2
GROUPS = ("east", "west")
SCRAPE = "60s"
WAIT_S = 390.0
RATES = (
    "transactions_checked",
    "conflicts_detected",
    "transactions_remote_applied",
    "transactions_local_proposed",
    "transactions_local_rollback",
)


def main() -> int:
    """Run the stack, wait, check; 0 when every check holds."""
    prometheus = require("prometheus", "prometheus")
    workdir = Path(tempfile.mkdtemp(prefix="grstats-scrape-60s-"))
    ports = free_ports(2 * MEMBERS * len(GROUPS) + 1)
    web = f"127.0.0.1:{ports[-1]}"
    processes: list[subprocess.Popen[bytes]] = []
    metrics: list[str] = []
    group_start = str(int(time.time()))
    try:
        for number, name in enumerate(GROUPS):
            base = number * 2 * MEMBERS
            gossip = [f"127.0.0.1:{port}" for port in ports[base : base + MEMBERS]]
            served = [f"127.0.0.1:{port}" for port in ports[base + MEMBERS : base + 2 * MEMBERS]]
            metrics += served
            processes.extend(
                start(
                    [
                        *(sys.executable, "-m", "grstats", "agent", "--source", "simulated"),
                        *("--group-name", name, "--members", str(MEMBERS)),
                        *("--member-index", str(index), "--group-start", group_start),
                        *("--listen", gossip[index], "--peers", ",".join(gossip)),
                        *("--metrics-listen", served[index], "--log-format", "json"),
                    ],
                    workdir / f"{name}-{index}.log",
                )
                for index in range(MEMBERS)
            )
        config = {
            "global": {"scrape_interval": SCRAPE, "evaluation_interval": SCRAPE},
            "rule_files": [str(RULES)],
            "scrape_configs": [{"job_name": "grstats", "static_configs": [{"targets": metrics}]}],
        }
        (workdir / "prometheus.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
        processes.append(
            start(
                [
                    prometheus,
                    f"--config.file={workdir / 'prometheus.yml'}",
                    f"--storage.tsdb.path={workdir / 'data'}",
                    f"--web.listen-address={web}",
                ],
                workdir / "prometheus.log",
            )
        )
        stack = Stack(f"http://{web}", tuple(processes[:-1]), tuple(metrics), workdir)
        print(f"scrape_60s: {len(metrics)} agents, Prometheus at {web}, waiting {WAIT_S:.0f} s")
        time.sleep(WAIT_S)
        return check(stack)
    finally:
        stop(processes)


def check(stack: Stack) -> int:
    """Print each check's finding; 0 when all hold."""
    failed = 0

    def verdict(ok: bool, what: str) -> None:
        nonlocal failed
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {what}")

    for rate in RATES:
        found = stack.query(f"group_name_member_id:grstats_{rate}:max_rate5m")
        values = [float(sample["value"][1]) for sample in found]
        verdict(
            len(found) == MEMBERS * len(GROUPS),
            f"{rate}: {len(found)} series of {MEMBERS * len(GROUPS)} members, values {values}",
        )
    checked = stack.query("group_name_member_id:grstats_transactions_checked:max_rate5m > 0")
    verdict(len(checked) == MEMBERS * len(GROUPS), f"checked rate above 0 for {len(checked)}")
    labels = sorted({s["metric"]["group_label"] for s in stack.query("grstats_group_info")})
    verdict(labels == sorted(GROUPS), f"grstats_group_info names {labels}")
    groups = {s["metric"]["group_name"] for s in stack.query("grstats_group_info")}
    verdict(len(groups) == len(GROUPS), f"{len(groups)} group UUIDs")
    sets = stack.query(
        "max(count by (instance, group_name, member_id) (last_over_time(grstats_member_info[10m])))"
    )
    most = float(sets[0]["value"][1]) if sets else 0.0
    verdict(most == 1.0, f"at most {most:g} label set of grstats_member_info per agent and member")
    fleet = stack.query(
        "group by (group_name, group_label) (topk by (group_name) (1, 2 * max by (group_name, "
        'group_label) (grstats_group_info{group_label!=""}) or label_replace(max by '
        '(group_name) (grstats_group_info), "group_label", "$1", "group_name", "(.+)")))'
    )
    named = sorted(s["metric"]["group_label"] for s in fleet)
    verdict(named == sorted(GROUPS), f"the dashboards' group selector offers {named}")
    print(f"scrape_60s: {'all checks hold' if not failed else f'{failed} check(s) failed'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
