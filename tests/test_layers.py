"""No module imports from a layer above its own, and grstats's modules import no cycle.

Imports are read from the source, all of them: at module level, inside functions, under
``TYPE_CHECKING``, and by string (``importlib.import_module("grstats.…")``, a module named in a
setting such as ``spark.python.daemon.module``). docs/architecture.md draws the same layers.
"""

from __future__ import annotations

import ast
import functools
import graphlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

#: Its tests share one parse of every module (:func:`all_imports`, 2 s): on one worker.
pytestmark = pytest.mark.xdist_group("layers")

if TYPE_CHECKING:
    from collections.abc import Iterator

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("cli", "agent", "collector", "spark", "core", "proto")

#: The layers, bottom first. A module belongs to the first layer with a prefix that names it
#: or one of its packages; it may import its own layer and the layers below. The floors of
#: docs/architecture.md: the commands (cli/) on top, the wings (spark/ above collector/, and
#: agent/) below them, the shared vocabulary (core/) and the wire contract (proto/) at the bottom.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("package", ("grstats",)),  # the root __init__: the version, nothing else
    ("wire contract", ("grstats.proto",)),
    ("shared vocabulary", ("grstats.core",)),
    (
        "member reading and gossip core",
        (
            "grstats.agent.limits",
            "grstats.agent.gossip",
            "grstats.agent.sim",
            "grstats.agent.sources",
            "grstats.agent.registry",
            "grstats.agent.identity",
            "grstats.agent.metrics_scope",  # the [metrics] section and the scope's rule
            "grstats.agent.member_probe",  # the [health] section and the probes' rule
            "grstats.agent.config",
            "grstats.agent.messages",
        ),
    ),
    (
        "wire and serving",
        (
            "grstats.agent.convert",
            "grstats.agent.known",
            "grstats.agent.views",
            "grstats.agent.status",
            "grstats.agent.served",
            "grstats.agent.metrics",
            "grstats.agent.metrics_series",
            "grstats.agent.metrics_http",
            "grstats.agent.transports",
            "grstats.agent.server",
            "grstats.agent.sql",
        ),
    ),
    # runtime, rounds, local, registry_sync, tables, event_log, doctor, advertise
    ("agent runtime", ("grstats.agent",)),
    ("collector", ("grstats.collector",)),
    ("spark", ("grstats.spark",)),
    ("commands", ("grstats.cli", "grstats.__main__")),
)

#: The wings beside one another: none imports another's modules but as LAYERS allows
#: (spark/ reads the collector's spool), and the collector and Spark share nothing of the
#: agent's but through core/ and proto/.
SIBLINGS: dict[str, tuple[str, ...]] = {
    "grstats.collector": ("grstats.agent",),
    "grstats.spark": ("grstats.agent",),
}


@dataclass(frozen=True)
class Import:
    """One import of a grstats module by another, and where it is written."""

    importer: str
    imported: str
    line: int
    by_string: bool


def module_files() -> dict[str, Path]:
    """Every module of grstats by dotted name (the root's files and the four folders')."""
    found = {
        "grstats": ROOT / "__init__.py",
        "grstats.__main__": ROOT / "__main__.py",
    }
    for folder in FOLDERS:
        for path in (ROOT / folder).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if "__pycache__" in parts:
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(("grstats", *parts))] = path
    return found


MODULES = module_files()


def layer_of(module: str) -> int:
    """The index in LAYERS of the layer ``module`` belongs to."""
    best: tuple[int, int] | None = None  # (prefix length, layer): the longest prefix wins
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                candidate = (len(prefix), index)
                best = candidate if best is None or candidate[0] > best[0] else best
    assert best is not None, f"{module} is in no layer: add it to LAYERS"
    return best[1]


def resolve(name: str) -> str | None:
    """The grstats module that ``name`` (a module, or a name inside one) is, if any."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def is_module_name(value: object) -> bool:
    """Whether ``value`` is a string that names a grstats module or a name in one."""
    return (
        isinstance(value, str)
        and value.startswith("grstats.")
        and all(part.isidentifier() for part in value.split("."))
    )


def imports_of(module: str, path: Path) -> Iterator[Import]:
    """Every grstats module that ``module`` imports, by statement or by string."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        names: list[str] = []
        by_string = False
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            names = [f"{base}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Constant) and is_module_name(node.value):
            names, by_string = [str(node.value)], True
        for name in names:
            target = resolve(name)
            if target is not None and target != module:
                yield Import(module, target, getattr(node, "lineno", 0), by_string)


@functools.cache
def all_imports() -> tuple[Import, ...]:
    """Every import of every grstats module: parsed once a run, when a test first asks."""
    return tuple(found for module, path in MODULES.items() for found in imports_of(module, path))


def test_every_module_is_in_a_layer() -> None:
    """The layer table covers every module (a new package must be placed in it)."""
    for module in MODULES:
        layer_of(module)


def test_the_string_imports_are_seen() -> None:
    """The scanner reads imports by string: the command root loads its subcommands that way."""
    strings = {(i.importer, i.imported) for i in all_imports() if i.by_string}
    assert ("grstats.cli", "grstats.cli.spark") in strings
    assert ("grstats.cli", "grstats.cli.collector") in strings


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_import_goes_up_a_layer(module: str) -> None:
    """A module imports only from its own layer or the layers below it."""
    own = layer_of(module)
    upward = [
        f"{MODULES[module].relative_to(ROOT)}:{i.line} imports {i.imported} "
        f"({LAYERS[layer_of(i.imported)][0]}){' by string' if i.by_string else ''}"
        for i in all_imports()
        if i.importer == module and layer_of(i.imported) > own
    ]
    assert not upward, f"{module} ({LAYERS[own][0]}) imports from above:\n" + "\n".join(upward)


def sideways(imports: tuple[Import, ...]) -> list[str]:
    """The imports of ``imports`` that run from a wing to one beside it (SIBLINGS)."""
    return [
        f"{MODULES[i.importer].relative_to(ROOT)}:{i.line} imports {i.imported}"
        for i in imports
        for wing, beside in SIBLINGS.items()
        if (i.importer == wing or i.importer.startswith(wing + "."))
        and any(i.imported == other or i.imported.startswith(other + ".") for other in beside)
    ]


def test_no_wing_imports_a_wing_beside_it() -> None:
    """The collector and the Spark jobs import nothing of the agent's: what they share is in core/."""
    assert sideways(all_imports()) == []


def test_the_sideways_check_finds_an_import() -> None:
    """The check above can fail: a collector module importing the agent's runtime is caught."""
    found = Import("grstats.collector.poller", "grstats.agent.runtime", 1, by_string=False)
    assert sideways((found,)) == ["collector/poller.py:1 imports grstats.agent.runtime"]


def test_only_the_commands_import_the_commands() -> None:
    """No module outside cli/ imports one of cli/ (each wing's commands are there, none in a wing)."""
    outside = [
        f"{MODULES[i.importer].relative_to(ROOT)}:{i.line} imports {i.imported}"
        for i in all_imports()
        if i.imported.startswith("grstats.cli")
        and not i.importer.startswith("grstats.cli")
        and i.importer != "grstats.__main__"
    ]
    assert outside == []


#: The modules that may import the generated protobuf code: the Query service's table form,
#: the agent's wire modules, and the clients of the Query service (grstats query, the demo,
#: grstats doctor, the collector). The gossip core, the transport seam and the runtime work
#: with domain values.
WIRE_MODULES = frozenset(
    {
        "grstats.core.query_wire",
        "grstats.agent.convert",
        "grstats.agent.server",
        "grstats.agent.transports.rpc",
        "grstats.cli.query",
        "grstats.cli.demo.tables",
        "grstats.agent.doctor.wire",
        "grstats.collector.poller",
        "grstats.collector.records",
    }
)


def test_only_the_wire_modules_import_protobuf() -> None:
    """grstats.proto is imported by the wire modules and the Query clients, by nothing else."""
    importers = {
        i.importer
        for i in all_imports()
        if i.imported.startswith("grstats.proto") and not i.importer.startswith("grstats.proto")
    }
    assert importers == WIRE_MODULES


#: The most lines one module of the SQL endpoint may have: its wing is kept in rooms of one job.
SQL_MODULE_MOST_LINES = 700


def test_no_sql_module_is_over_700_lines() -> None:
    """Every module of grstats.agent.sql has at most SQL_MODULE_MOST_LINES lines."""
    sql = [module for module in MODULES if module.split(".")[:3] == ["grstats", "agent", "sql"]]
    assert len(sql) > 1
    lines = {
        module: len(MODULES[module].read_text(encoding="utf-8").splitlines()) for module in sql
    }
    assert {m: n for m, n in lines.items() if n > SQL_MODULE_MOST_LINES} == {}


def cycle_in(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle of ``graph`` (``[a, b, …, a]``), or ``[]`` when there is none."""
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as error:
        return list(error.args[1])
    return []


def test_there_is_no_import_cycle() -> None:
    """No two grstats modules import each other, directly or through others."""
    graph: dict[str, set[str]] = {module: set() for module in MODULES}
    for found in all_imports():
        graph[found.importer].add(found.imported)
    assert cycle_in(graph) == []


def test_the_cycle_check_finds_a_cycle() -> None:
    """The check above can fail: a three-module loop is found."""
    assert sorted(set(cycle_in({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}))) == [
        "a",
        "b",
        "c",
    ]
