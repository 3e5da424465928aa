"""Shared test settings: hypothesis profiles, grstats imported by its name."""

from __future__ import annotations

import importlib.abc
import os
import sys
from pathlib import Path

# Before anything imports grpc: no fork handlers. The Spark session's JVM is started with
# fork+exec from a test process whose gRPC threads may be busy; with fork support on, gRPC
# logged "skipping fork() handlers" and the JVM gateway exited before sending its port (once,
# in CI=true .ci/run). Nothing in the tests forks and then uses gRPC in the child.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
# Every JVM the tests start (the ``grstats spark`` commands they run, the demo's) compiles with
# C1 alone, as the tests' own Spark session does (tests/spark/conftest.py): the tests' jobs are
# small, and C2's compiler threads took more CPU than they saved, CPU that the other test
# worker needs. A small report: 17.3 -> 10.8 s of CPU, 11.8 -> 9.8 s of wall (docs/benchmarks.md,
# "Test suite"). Nor do they verify the bytecode of Spark's jars as they load it (the jars
# pip installed, which every run verified again): a session up in 8.4-8.8 s instead of
# 10.4-11.1 s. Each JVM notes it on stderr ("Picked up JAVA_TOOL_OPTIONS: ...").
os.environ.setdefault(
    "JAVA_TOOL_OPTIONS",
    "-XX:TieredStopAtLevel=1 -XX:+UnlockDiagnosticVMOptions -XX:-BytecodeVerificationRemote",
)

import pytest
from _pytest.nodeid import coerce_node_id
from hypothesis import HealthCheck, settings

# 200 examples a property, in CI too. The strategies draw from small domains on purpose (a
# few UUIDs and tags, GNOs near 1 and near GNO_MAX: tests/agent/gtid/model.py), so 200
# examples reach every case class the properties exist for, and each CI run (a fresh clone, no
# example database) draws new ones. 600 took the GTID properties 97 s on 2 cores, 200 a third.
settings.register_profile("dev", max_examples=200, deadline=None)
settings.register_profile(
    "ci",
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
# HYPOTHESIS_PROFILE chooses one (.ci/floors runs its tests with "dev": the versions are
# what it proves, and the main run has had the ci profile's examples).
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
)


class _BareFolderImports(importlib.abc.MetaPathFinder):
    """Refuses ``import agent`` and the like, so code and examples import ``grstats.agent``.

    The tests put the checkout on sys.path (for ``tests.*``), where the folders would otherwise
    import as top-level packages beside grstats.X, as no installed grstats allows.
    """

    FOLDERS = frozenset({"agent", "cli", "collector", "core", "spark", "proto"})

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> None:
        """Raise ImportError for a folder of the checkout imported by its bare name."""
        del path, target
        if fullname in self.FOLDERS:
            message = (
                f"import grstats.{fullname}, not {fullname} (the folder is grstats.{fullname})"
            )
            raise ImportError(message, name=fullname)


sys.meta_path.insert(0, _BareFolderImports())


#: Session fixtures too costly to build once per xdist worker: a test that uses one runs on the
#: worker that holds it (``make test`` runs ``pytest -n 2 --dist loadgroup``). A Spark session
#: (the ``spark`` fixture, one JVM) is built on each worker that runs a test needing one: the
#: Spark tests are a third of the suite, and on one worker they alone took longer than the rest.
_SHARED_FIXTURES = frozenset({"spark_cluster"})
#: Groups of tests that share what one worker builds, started first (the longest first) so that
#: the other worker fills in around them: the release files, then the standalone cluster.
_GROUPS_FIRST = ("packaging", "spark_cluster", "grafana-live")

#: What ``make check`` (``pytest --check``) leaves out besides the spark, mysql and slow marks:
#: the folders and files whose tests start processes (grstats, Spark, systemd, Prometheus,
#: clients) or servers (MariaDB, test hosts), as paths under tests/.
_PROCESS_OR_SERVER = (
    "netns/",
    "deploy/",
    "release/",
    "spark/report/test_page_width.py",
    "spark/test_class_archive.py",
    "spark/test_cluster.py",
    "spark/test_extra.py",
    "spark/test_ingest_cli.py",
    "spark/test_ingest_crash.py",
    "spark/test_readme_fleet.py",
    "spark/test_session.py",
    "spark/test_stage.py",
    "spark/test_worker_daemon.py",
    "spark/report/test_cli.py",
    "agent/sources/",
    "agent/doctor/",
    "cli/test_agent_processes.py",
    "cli/test_agent_signals.py",
    "cli/test_client_settings.py",
    "cli/test_doctor.py",
    "cli/test_main.py",
    "cli/test_query.py",
    "cli/test_simulate.py",
    "cli/test_state_dir.py",
    "cli/test_status_watch.py",
    "agent/registry/test_sqlite.py",
    "agent/sql/test_real_clients.py",
    "agent/sql/test_heavy_statements.py",
    "agent/test_advertise.py",
    "agent/test_checks.py",
    "agent/test_config.py",
    "agent/test_grpc_log.py",
    "agent/test_local_faults.py",
    "agent/test_message_memory.py",
    "agent/test_metrics_promtool.py",
    "agent/test_source_visibility.py",
    "agent/test_tls.py",
    "collector/test_cli.py",
    "collector/test_metrics.py",
    "collector/test_spool_kill.py",
    "test_demo.py",
    "test_docs.py",
    "test_import_weight.py",
    "test_packaging.py",
    "test_proto.py",
)


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--check``: the edit loop's selection (``make check``)."""
    parser.addoption(
        "--check",
        action="store_true",
        help="run only the tests that need no Spark, no subprocess and no server (make check)",
    )


def _group_rank(nodeid: str) -> int:
    group = nodeid.rpartition("@")[2] if "@" in nodeid else ""
    return _GROUPS_FIRST.index(group) if group in _GROUPS_FIRST else len(_GROUPS_FIRST)


def _name_groups(items: list[pytest.Item]) -> None:
    """Suffix each grouped test's node id with ``@group``, which loadgroup schedules by.

    pytest-xdist 3.8 does it by assigning ``item._nodeid``, which pytest 9.2 no longer reads
    (its node ids are ``item._id``): without this every ``xdist_group`` was ignored, and two
    workers built the same release files at once.
    """
    for item in items:
        names = sorted({str(mark.args[0]) for mark in item.iter_markers("xdist_group")})
        if names and "@" not in item.nodeid:
            item._id = coerce_node_id(f"{item.nodeid}@{'_'.join(names)}")


def _needs_process_or_server(item: pytest.Item, tests: Path) -> bool:
    if any(item.get_closest_marker(mark) for mark in ("spark", "mysql", "slow")):
        return True
    if _SHARED_FIXTURES.intersection(getattr(item, "fixturenames", ())):
        return True  # a Spark session or cluster
    path = item.path.relative_to(tests).as_posix()
    return path.startswith(_PROCESS_OR_SERVER)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Group the cluster's tests on one xdist worker, groups first; with ``--check``, quick tests only."""
    for item in items:
        if _SHARED_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.xdist_group("spark_cluster"))
    if getattr(config.option, "loadgroup", False):  # an xdist worker of --dist loadgroup
        _name_groups(items)
        items.sort(key=lambda item: _group_rank(item.nodeid))  # stable: same order on each worker
    if config.getoption("check"):
        tests = Path(__file__).parent
        left = [item for item in items if _needs_process_or_server(item, tests)]
        if left:
            config.hook.pytest_deselected(items=left)
            items[:] = [item for item in items if not _needs_process_or_server(item, tests)]
