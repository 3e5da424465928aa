"""The groups one collector polls: labels, ``--group LABEL=HOST:PORT,...`` and ``[[groups]]`` files.

A group is a label the operator chooses and the agents to ask, in failover order. The label
names the group in every spool record (``group_label``, whatever label its agents answer) and
in the collector's ``/metrics``. A label follows the one rule agents, collectors and reports
share (:func:`grstats.core.model.is_group_label`: 1 to 63 printable characters, no spaces at
either end, as an InnoDB Cluster's name in MySQL Shell's metadata, VARCHAR(63)), and is unique
among the groups of one collector; in ``--group LABEL=...`` it holds no ``=``.

A collector config file (``grstats collect --config FILE``, TOML) holds the groups only; the
other settings stay flags::

    [[groups]]
    label = "orders"
    nodes = ["db1:7400", "db2:7400", "db3:7400"]

    [[groups]]
    label = "billing"
    nodes = ["db7:7400"]

Errors are :class:`~grstats.core.errors.ConfigError` naming the field and the value
(``groups[1].label: ' a' is not a group label ...``), and the file when there is one.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grstats.core.address import split_address
from grstats.core.errors import ConfigError
from grstats.core.model import LABEL_RULE, is_group_label

if TYPE_CHECKING:
    from collections.abc import Iterable

#: The keys of one ``[[groups]]`` table.
GROUP_KEYS = ("label", "nodes")


def check_label(name: str, value: object) -> str:
    """Return ``value`` if it is a group label; raise ConfigError naming ``name`` otherwise."""
    if isinstance(value, str) and is_group_label(value):
        return value
    raise ConfigError(f"{name}: {value!r} is not a group label ({LABEL_RULE})")


@dataclass(frozen=True, slots=True)
class GroupSpec:
    """One group as the operator names it: its label and its agents, in failover order.

    Attributes:
        label: the operator's name of the group (see :func:`check_label`).
        nodes: the agents' ``host:port``, at least one.
    """

    label: str
    nodes: tuple[str, ...]

    def __post_init__(self) -> None:
        check_label("label", self.label)
        if not self.nodes:
            raise ConfigError("nodes: () is empty; give at least one agent's host:port")
        for index, node in enumerate(self.nodes):
            split_address(node, f"nodes[{index}]")


def parse_group(text: str) -> GroupSpec:
    """Return the group of ``LABEL=HOST:PORT[,HOST:PORT...]`` (the value of ``--group``).

    Raises:
        ConfigError: naming ``--group`` and the value, when it is not of that form.
    """
    label, equals, nodes = text.partition("=")
    if not equals:
        raise ConfigError(f"--group: {text!r} is not LABEL=HOST:PORT[,HOST:PORT...]")
    try:
        return GroupSpec(label.strip(), tuple(node.strip() for node in nodes.split(",")))
    except ConfigError as exc:
        raise ConfigError(f"--group: {text!r}: {exc}") from exc


def groups_from_file(path: Path | str) -> tuple[GroupSpec, ...]:
    """Return the ``[[groups]]`` of the collector config file ``path``, in file order.

    Raises:
        ConfigError: the file cannot be read, is not TOML, has a key other than ``groups``,
            or a group is invalid; the message names the file and the field.
    """
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--config: cannot read {str(path)!r}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not TOML: {exc}") from exc
    try:
        return _groups_of(data)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from exc


def _groups_of(data: dict[str, Any]) -> tuple[GroupSpec, ...]:
    unknown = sorted(set(data) - {"groups"})
    if unknown:
        raise ConfigError(f"{unknown[0]}: is not a key of a collector config file (only groups)")
    tables = data.get("groups")
    if not isinstance(tables, list) or not tables:
        raise ConfigError(f"groups: {tables!r} is not one or more [[groups]] tables")
    found = []
    for index, table in enumerate(tables):
        where = f"groups[{index}]"
        if not isinstance(table, dict):
            raise ConfigError(f"{where}: {table!r} is not a table")
        extra = sorted(set(table) - set(GROUP_KEYS))
        if extra:
            raise ConfigError(f"{where}.{extra[0]}: is not a key of a group (label, nodes)")
        label = check_label(f"{where}.label", table.get("label"))
        nodes = table.get("nodes")
        if not isinstance(nodes, list) or not all(isinstance(node, str) for node in nodes):
            raise ConfigError(f"{where}.nodes: {nodes!r} is not a list of host:port strings")
        try:
            found.append(GroupSpec(label, tuple(nodes)))
        except ConfigError as exc:
            raise ConfigError(f"{where}.{exc}") from exc
    return tuple(found)


def check_unique(groups: Iterable[GroupSpec]) -> None:
    """Raise ConfigError naming the label that two of ``groups`` share."""
    seen: set[str] = set()
    for group in groups:
        if group.label in seen:
            raise ConfigError(f"label: {group.label!r} names two groups; labels are unique")
        seen.add(group.label)
