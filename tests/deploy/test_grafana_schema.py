"""deploy/grafana's dashboards against Grafana's published schema, and how they hold together.

**Schema.** No package on npm or PyPI ships Grafana's dashboard schema as a JSON Schema (the
Python ``grafana-foundation-sdk`` reads a dashboard without checking it: it drops what it
does not know), and Grafana is not installed. Grafana publishes the schema as TypeScript
types generated from its CUE kinds: the npm package ``@grafana/schema``, here 10.4.19, the
last Grafana 10, the major version the dashboards require (``__requires``, schemaVersion 38;
a later Grafana migrates them on load; 10.0's types still lacked fields that Grafana 10
writes, such as a threshold's ``null`` base and an annotation's ``builtIn``). Each dashboard is written out as TypeScript object literals, each checked with
``satisfies`` against its type by ``tsc --strict``: a field the type does not have (excess
property check), a wrong type, or an enum value it does not list is an error. The dashboard
as a whole is checked against ``Dashboard`` (a required field missing is an error too); each
panel's ``options`` and ``fieldConfig.defaults.custom`` against its plugin's ``Options`` and
field config, each override's property value against the field config's type of that
property, each query against ``PrometheusDataQuery``. There a field may be left out: the
plugin's required fields all have defaults, which Grafana fills in. Enums are compared by
value (``"absolute"`` for ``ThresholdsMode.Absolute``), as the JSON spells them.
tests/deploy/grafana_schema/package.json pins the packages; CI installs them (``npm ci
--prefix tests/deploy/grafana_schema``); elsewhere the test is skipped without them.

**Structure** (no package needed): unique panel ids and titles, whole grid positions inside
Grafana's 24 columns and not overlapping, every query on the ``${DS_PROMETHEUS}`` data source
variable, every variable a text names defined (or one of Grafana's own), every recording rule
a query reads defined in deploy/prometheus/grstats.rules.yml, every link to a dashboard of
deploy/grafana with variables it has. tests/deploy/test_grafana_live.py runs the queries.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from tests.deploy.files import DEPLOY
from tests.deploy.grafana import (
    LABEL_VALUES,
    QUERY_RESULT,
    dashboards,
    javascript_regex,
    load,
    panels,
    references,
    targets,
    variables,
)
from tests.mariadb import missing

if TYPE_CHECKING:
    from collections.abc import Iterator

SCHEMA = Path(__file__).parent / "grafana_schema"
TSC = SCHEMA / "node_modules" / "typescript" / "bin" / "tsc"
RULES = DEPLOY / "prometheus" / "grstats.rules.yml"
DATASOURCE = {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}
#: Panel plugin id -> its module of @grafana/schema and the type of its custom field config.
PANEL_TYPES = {
    "stat": ("stat/panelcfg/x/StatPanelCfg", "never"),
    "table": ("table/panelcfg/x/TablePanelCfg", "schema.TableFieldOptions"),
    "timeseries": ("timeseries/panelcfg/x/TimeSeriesPanelCfg", "timeseries.FieldConfig"),
    "state-timeline": (
        "statetimeline/panelcfg/x/StateTimelinePanelCfg",
        "statetimeline.FieldConfig",
    ),
}
PROMETHEUS = "prometheus/dataquery/x/PrometheusDataQuery"
#: Grafana's own variables a query may name: time range and interval macros.
QUERY_MACROS = {"__range", "__range_s", "__range_ms", "__rate_interval", "__interval"}
#: ... and a data link: the row, field or series clicked, and the time range as URL parameters.
LINK_MACROS = {"__data", "__field", "__series", "__value", "__url_time_range"}
#: Variable formats used in links (``${DS_PROMETHEUS:queryparam}`` is ``var-DS_PROMETHEUS=uid``).
FORMATS = {"", "text", "queryparam", "raw", "regex", "pipe", "csv", "percentencode"}
#: A JSON value as TypeScript sees it: an enum by its values, everything else as declared;
#: Defaults: the same with every field optional, for what Grafana fills with defaults.
JSON_TYPES = """\
type Json<T> = T extends string
  ? `${T}`
  : T extends number | boolean | null | undefined
    ? T
    : T extends ReadonlyArray<infer U>
      ? Array<Json<U>>
      : T extends object
        ? { [K in keyof T]: Json<T[K]> }
        : T;
type Defaults<T> = T extends string
  ? `${T}`
  : T extends number | boolean | null | undefined
    ? T
    : T extends ReadonlyArray<infer U>
      ? Array<Defaults<U>>
      : T extends object
        ? { [K in keyof T]?: Defaults<T[K]> }
        : T;
"""
TSCONFIG = {
    "compilerOptions": {
        "strict": True,
        "noEmit": True,
        "target": "es2022",
        "module": "esnext",
        "moduleResolution": "bundler",
        "skipLibCheck": True,
        "types": [],
    },
    "files": [],
}


def board_ids() -> list[str]:
    """The dashboards' file names, as test ids."""
    return [path.name for path in dashboards()]


@pytest.fixture(name="board", params=dashboards(), ids=board_ids())
def _board(request: pytest.FixtureRequest) -> dict[str, Any]:
    """One dashboard of deploy/grafana."""
    path: Path = request.param
    return load(path)


def literal(value: object) -> str:
    """``value`` as a TypeScript literal (JSON is one)."""
    return json.dumps(value, indent=2)


def module(panel_type: str) -> str:
    """The TypeScript name of a panel plugin's module (``statetimeline`` for state-timeline)."""
    return PANEL_TYPES[panel_type][0].split("/")[0]


def checks(board: dict[str, Any]) -> Iterator[tuple[str, str, object]]:
    """What to check, as (name, TypeScript type, value): the board, then each panel's parts."""
    # __requires (and __inputs) are what Grafana's export adds for its import, not the model
    model = {key: value for key, value in board.items() if not key.startswith("__")}
    yield "dashboard", "Defaults<schema.Dashboard>", model
    for panel in panels(board):
        if panel["type"] == "row":
            continue
        name = f"panel_{panel['id']}"
        plugin = module(panel["type"])
        yield f"{name}_options", f"Defaults<{plugin}.Options>", panel.get("options", {})
        config = panel.get("fieldConfig", {"defaults": {}, "overrides": []})
        custom = PANEL_TYPES[panel["type"]][1]
        if "custom" in config["defaults"]:
            yield f"{name}_custom", f"Defaults<{custom}>", config["defaults"]["custom"]
        for i, override in enumerate(config["overrides"]):
            for j, prop in enumerate(override["properties"]):
                key = prop["id"]
                owner = "schema.FieldConfig"
                if key.startswith("custom."):
                    owner, key = custom, key.removeprefix("custom.")
                kind = f'Defaults<NonNullable<{owner}["{key}"]>>'
                yield f"{name}_override_{i}_{j}", kind, prop["value"]
        for target in panel.get("targets", []):
            yield f"{name}_target_{target['refId']}", "Json<Query>", target


def typescript(board: dict[str, Any]) -> str:
    """The TypeScript source that type-checks ``board``."""
    composable = "@grafana/schema/dist/esm/raw/composable"
    lines = [
        'import type * as schema from "@grafana/schema";',
        f'import type {{ PrometheusDataQuery }} from "{composable}/{PROMETHEUS}_types.gen";',
    ]
    for path, _ in PANEL_TYPES.values():
        lines.append(f'import type * as {path.split("/")[0]} from "{composable}/{path}_types.gen";')
    lines += [JSON_TYPES, "type Query = PrometheusDataQuery;"]
    for name, kind, value in checks(board):
        lines.append(f"export const {name} = {literal(value)} satisfies {kind};")
    return "\n".join(lines) + "\n"


def test_dashboards_type_check_against_grafanas_schema(tmp_path: Path) -> None:
    """The TypeScript compiler finds no error in either dashboard against Grafana's types."""
    node = shutil.which("node")
    if node is None or not TSC.exists():
        missing(
            "Grafana's schema packages are not installed: "
            "npm ci --prefix tests/deploy/grafana_schema (needs node and npm)"
        )
    assert node is not None
    (tmp_path / "node_modules").symlink_to(SCHEMA / "node_modules")
    files = []
    for path in dashboards():
        source = tmp_path / f"{path.stem}.ts"
        source.write_text(typescript(load(path)), encoding="utf-8")
        files.append(source.name)
    (tmp_path / "tsconfig.json").write_text(
        json.dumps({**TSCONFIG, "files": files}), encoding="utf-8"
    )
    done = subprocess.run(
        [node, str(TSC), "--project", "tsconfig.json", "--pretty", "false"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    checked = sum(1 for path in dashboards() for _ in checks(load(path)))
    print(f"tsc: {len(files)} dashboards, {checked} values checked")  # for the record (pytest -s)


def test_schema_check_fails_on_a_broken_dashboard(tmp_path: Path) -> None:
    """The check fails on a misspelt field, an unknown enum value and a wrong type."""
    node = shutil.which("node")
    if node is None or not TSC.exists():
        missing("Grafana's schema packages are not installed: see test above")
    assert node is not None
    (tmp_path / "node_modules").symlink_to(SCHEMA / "node_modules")
    board = load(dashboards()[0])
    panel = next(panel for panel in board["panels"] if panel["type"] == "stat")
    panel["options"]["colorMode"] = "rainbow"
    panel["gridPos"]["w"] = "wide"
    panel["targets"][0]["legend"] = panel["targets"][0].pop("legendFormat")
    (tmp_path / "broken.ts").write_text(typescript(board), encoding="utf-8")
    (tmp_path / "tsconfig.json").write_text(
        json.dumps({**TSCONFIG, "files": ["broken.ts"]}), encoding="utf-8"
    )
    done = subprocess.run(
        [node, str(TSC), "--project", "tsconfig.json", "--pretty", "false"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode != 0
    errors = [line for line in done.stdout.splitlines() if ": error TS" in line]
    assert len(errors) == 3, done.stdout
    assert "rainbow" in done.stdout
    assert '"legend"' in done.stdout


def test_dashboard_ids_uids_and_titles_are_unique() -> None:
    """Each dashboard has its own uid and title; in each, panel ids and titles are unique."""
    boards = [load(path) for path in dashboards()]
    assert len(boards) >= 2
    for key in ("uid", "title"):
        values = [board[key] for board in boards]
        assert len(values) == len(set(values)), values
    for board in boards:
        ids = [panel["id"] for panel in panels(board)]
        assert len(ids) == len(set(ids)), ids
        assert all(isinstance(panel_id, int) and panel_id > 0 for panel_id in ids)
        titles = [panel["title"] for panel in panels(board)]
        assert len(titles) == len(set(titles)), titles


def test_panels_fill_the_grid_without_overlapping(board: dict[str, Any]) -> None:
    """Every panel has a whole gridPos inside the 24 columns; no two panels share a cell."""
    taken: dict[tuple[int, int], str] = {}
    for panel in board["panels"]:
        grid = panel["gridPos"]
        assert set(grid) == {"h", "w", "x", "y"}, panel["title"]
        assert all(isinstance(grid[key], int) for key in grid), panel["title"]
        assert grid["w"] >= 1, panel["title"]
        assert grid["h"] >= 1, panel["title"]
        assert grid["x"] >= 0, panel["title"]
        assert grid["y"] >= 0, panel["title"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in taken, f"{panel['title']} overlaps {taken.get((x, y))}"
                taken[x, y] = panel["title"]


def test_every_query_is_on_the_data_source_variable(board: dict[str, Any]) -> None:
    """DS_PROMETHEUS picks the data source; every panel, query and query variable uses it."""
    named = variables(board)
    assert named["DS_PROMETHEUS"]["type"] == "datasource"
    assert named["DS_PROMETHEUS"]["query"] == "prometheus"
    every = targets(board)
    assert every
    for target in every:
        assert target.target["datasource"] == DATASOURCE, target.name
        assert target.panel["datasource"] == DATASOURCE, target.name
        assert target.expr.strip(), target.name
    for panel in panels(board):
        refs = [target["refId"] for target in panel.get("targets", [])]
        assert len(refs) == len(set(refs)), panel["title"]
    for variable in named.values():
        if variable["type"] == "query":
            assert variable["datasource"] == DATASOURCE, variable["name"]


def test_every_variable_named_is_defined(board: dict[str, Any]) -> None:
    """Queries, titles, links and variable queries name only variables defined before them."""
    named = variables(board)
    order = list(named)
    for position, variable in enumerate(named.values()):
        query = variable.get("query", "")
        for name, _, _ in references(query if isinstance(query, str) else ""):
            assert name in order[:position] or name.isdigit(), (variable["name"], name)
    for target in targets(board):
        for name, _, fmt in references(target.expr):
            # $1 in label_replace is PromQL's, and Grafana leaves what is no variable as is
            assert name in named or name in QUERY_MACROS or name.isdigit(), (target.name, name)
            assert fmt in FORMATS, (target.name, fmt)
    texts = [panel["title"] for panel in panels(board)] + [link["url"] for link in links(board)]
    for text in texts:
        for name, _, fmt in references(text):
            assert name in named or name in LINK_MACROS, (text, name)
            assert fmt in FORMATS, (text, fmt)


def test_query_variables_are_ones_grafana_reads(board: dict[str, Any]) -> None:
    """Each query variable is label_values(...) or query_result(...) on one line; its regex parses."""
    for variable in variables(board).values():
        if variable["type"] != "query":
            continue
        query = variable["query"]
        assert LABEL_VALUES.match(query) or QUERY_RESULT.match(query), variable["name"]
        if variable.get("regex"):
            assert javascript_regex(variable["regex"]).groups >= 1, variable["name"]


def test_queries_read_only_defined_recording_rules(board: dict[str, Any]) -> None:
    """Every level:metric:operations name a query reads is a record of the rules file."""
    rules = yaml.safe_load(RULES.read_text(encoding="utf-8"))
    defined = {r["record"] for group in rules["groups"] for r in group["rules"] if "record" in r}
    texts = [target.expr for target in targets(board)]
    texts += [v["query"] for v in variables(board).values() if isinstance(v.get("query"), str)]
    used = {
        name for text in texts for name in re.findall(r"[a-z_]+:grstats_[a-z_]+:[a-z0-9_]+", text)
    }
    assert used, "the dashboard reads no recording rule"
    assert used <= defined, used - defined


def links(board: dict[str, Any]) -> list[dict[str, Any]]:
    """The dashboard's links, and the data links of its panels (defaults and overrides)."""
    found = list(board.get("links", []))
    for panel in panels(board):
        config = panel.get("fieldConfig", {"defaults": {}, "overrides": []})
        found += config["defaults"].get("links", [])
        for override in config["overrides"]:
            for prop in override["properties"]:
                if prop["id"] == "links":
                    found += prop["value"]
    return found


def test_links_open_dashboards_of_deploy_grafana(board: dict[str, Any]) -> None:
    """Each link opens a dashboard of deploy/grafana by uid, with variables it defines."""
    boards = {other["uid"]: other for other in map(load, dashboards())}
    found = links(board)
    assert found, "no link to the other dashboard"
    for link in found:
        assert link["title"], link
        url = urllib.parse.urlsplit(link["url"])
        assert not url.scheme, link  # relative: Grafana prefixes its sub-path
        assert not url.netloc, link
        match = re.fullmatch(r"/d/([\w-]+)(?:/[\w-]+)?", url.path)
        assert match is not None, link
        assert match[1] in boards, link
        assert match[1] != board["uid"], link
        target = variables(boards[match[1]])
        for part in url.query.split("&") if url.query else []:
            name = part.partition("=")[0]
            if name.startswith("var-"):
                assert name.removeprefix("var-") in target, (link, name)
            else:  # a variable that expands to var-NAME=... or Grafana's time range
                refs = references(part)
                assert len(refs) == 1, (link, part)
                ref_name, _, fmt = refs[0]
                assert ref_name == "__url_time_range" or (
                    fmt == "queryparam" and ref_name in target
                )
        if link.get("type") == "link":
            assert link["includeVars"] or link["keepTime"], link


def test_requires_names_every_panel_type(board: dict[str, Any]) -> None:
    """__requires (what Grafana's import checks) lists Grafana 10, Prometheus and each panel type."""
    required = {(item["type"], item["id"]) for item in board["__requires"]}
    assert ("datasource", "prometheus") in required
    grafana = next(item for item in board["__requires"] if item["type"] == "grafana")
    assert int(grafana["version"].split(".")[0]) >= 10
    assert board["schemaVersion"] >= 38
    used = {panel["type"] for panel in panels(board) if panel["type"] != "row"}
    assert used <= {panel_id for kind, panel_id in required if kind == "panel"}
    assert used <= set(PANEL_TYPES)
