"""deploy/grafana's dashboards read as Grafana reads them: panels, queries, variables, links.

Grafana's own rules, restated for the tests (Grafana itself is not installed): its template
variable syntax (``VARIABLE_REGEX`` of @grafana/scenes: ``$name``, ``[[name]]``,
``${name.path:format}``); the Prometheus data source's variable queries ``label_values(...)``
and ``query_result(...)`` (``metric_find_query.ts``: ``query_result`` prints each series as
``{label="value",...} VALUE TIMESTAMP_MS``, labels in Prometheus' order, which is sorted); and a
query variable's regex (``metricNamesToVariableValues``: a ``/pattern/flags`` JavaScript
regex whose named groups ``text`` and ``value`` pick the option's text and value, each falling
back to the other, options deduplicated by value and sorted as the variable's ``sort`` says).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from tests.deploy.files import DEPLOY

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping
    from pathlib import Path

GRAFANA = DEPLOY / "grafana"
#: Grafana's template variable syntax: ``$name``, ``[[name:format]]``, ``${name.path:format}``.
VARIABLE = re.compile(
    r"\$(\w+)|\[\[(\w+?)(?::(\w+))?\]\]|\$\{(\w+)(?:\.([^:^\}]+))?(?::([^\}]+))?\}"
)
#: The Prometheus data source's variable queries (metric_find_query.ts; one line each).
LABEL_VALUES = re.compile(r"^label_values\((?:(.+),\s*)?([a-zA-Z_][a-zA-Z0-9_]*)\)\s*$")
QUERY_RESULT = re.compile(r"^query_result\((.+)\)\s*$")
#: Grafana's variable sort orders the tests' variables use: 0 none, 1 and 5 alphabetical.
SORTS = {0, 1, 5}


class Answers(Protocol):
    """Prometheus' HTTP API (tests.deploy.test_prometheus_live.Stack)."""

    def api(self, path: str, **params: str) -> Any:
        """GET ``path``; the answer's ``data``."""
        ...


class Option(NamedTuple):
    """One option of a variable: what the selector shows, and what ``$name`` becomes."""

    text: str
    value: str


@dataclass(frozen=True)
class Target:
    """One query of a panel."""

    panel: dict[str, Any]
    target: dict[str, Any]

    @property
    def name(self) -> str:
        """``Panel title [refId]``, for messages."""
        return f"{self.panel['title']} [{self.target['refId']}]"

    @property
    def expr(self) -> str:
        """The PromQL, variables not substituted."""
        expr: str = self.target["expr"]
        return expr

    @property
    def instant(self) -> bool:
        """Whether Grafana runs it as an instant query (else a range query)."""
        return bool(self.target.get("instant")) and not self.target.get("range")


def dashboards() -> list[Path]:
    """Every dashboard file of deploy/grafana."""
    return sorted(GRAFANA.glob("*.json"))


def load(path: Path) -> dict[str, Any]:
    """The dashboard in ``path``."""
    board: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return board


def panels(board: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel, the rows and the panels inside collapsed rows included."""
    for panel in board.get("panels", []):
        yield panel
        yield from panel.get("panels", [])


def targets(board: dict[str, Any]) -> list[Target]:
    """Every query of every panel."""
    return [Target(panel, target) for panel in panels(board) for target in panel.get("targets", [])]


def variables(board: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The dashboard's template variables by name."""
    return {variable["name"]: variable for variable in board["templating"]["list"]}


def references(text: str) -> list[tuple[str, str, str]]:
    """Every variable ``text`` names, as (name, field path, format); '' for what it lacks."""
    found = []
    for match in VARIABLE.finditer(text):
        simple, bracket, bracket_format, braced, path, braced_format = match.groups()
        name = simple or bracket or braced
        found.append((name, path or "", bracket_format or braced_format or ""))
    return found


def expand(text: str, values: Mapping[str, str]) -> str:
    """``text`` with each variable of ``values`` replaced as Grafana does; others kept."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2) or match.group(4)
        return values.get(name, match.group(0))

    return VARIABLE.sub(value, text)


def javascript_regex(text: str) -> re.Pattern[str]:
    """Grafana's stringToJsRegex: ``/pattern/flags``, else the text anchored at both ends."""
    if not text.startswith("/"):
        return re.compile(f"^{text}$")
    match = re.fullmatch(r"/(.*?)/([gimsy]*)", text, re.DOTALL)
    assert match is not None, f"not a /regex/: {text}"
    flags = re.IGNORECASE if "i" in match[2] else 0
    flags |= re.MULTILINE if "m" in match[2] else 0
    flags |= re.DOTALL if "s" in match[2] else 0
    return re.compile(re.sub(r"\(\?<(?=\w)", "(?P<", match[1]), flags)  # (?<name>: (?P<name>


def found_values(prometheus: Answers, query: str) -> list[str]:
    """What the Prometheus data source finds for a variable's query, before the regex."""
    if match := LABEL_VALUES.match(query):
        params = {"match[]": match[1]} if match[1] else {}
        values: list[str] = prometheus.api(f"/api/v1/label/{match[2]}/values", **params)
        return values
    match = QUERY_RESULT.match(query)
    assert match is not None, (
        f"neither label_values(...) nor query_result(...) on one line: {query}"
    )
    data = prometheus.api("/api/v1/query", query=match[1])
    assert data["resultType"] == "vector", data
    found = []
    for series in data["result"]:
        metric = dict(series["metric"])
        text = metric.pop("__name__", "")
        text += "{" + ",".join(f'{key}="{value}"' for key, value in metric.items()) + "}"
        timestamp, value = series["value"]
        found.append(f"{text} {value} {round(timestamp * 1000)}")
    return found


def variable_options(
    prometheus: Answers, variable: dict[str, Any], values: Mapping[str, str] | None = None
) -> list[Option]:
    """The options a Prometheus query variable offers, ``values`` substituted in its query."""
    query = expand(variable["query"], values or {})
    found = found_values(prometheus, query)
    options: list[Option] = []
    regex = javascript_regex(variable["regex"]) if variable.get("regex") else None
    for item in found:
        text = value = item
        if regex is not None:
            every = variable["regex"].startswith("/") and "g" in variable["regex"].rsplit("/", 1)[1]
            first = regex.search(item)
            matches = list(regex.finditer(item)) if every else [first] if first else []
            if not matches:
                continue
            groups = [match.groupdict() for match in matches]
            picked_value = next((group["value"] for group in groups if group.get("value")), None)
            picked_text = next((group["text"] for group in groups if group.get("text")), None)
            if picked_value is not None or picked_text is not None:
                value = picked_value if picked_value is not None else str(picked_text)
                text = picked_text if picked_text is not None else str(picked_value)
            elif matches[0].groups():
                text = value = matches[0].group(1)
        if value not in {option.value for option in options}:
            options.append(Option(text, value))
    sort = variable.get("sort", 0)
    assert sort in SORTS, f"{variable['name']}: sort {sort} is not one the tests know"
    if sort == 1:
        options.sort(key=lambda option: option.text)
    elif sort == 5:
        options.sort(key=lambda option: option.text.lower())
    return options
