"""Group labels, ``--group LABEL=HOST:PORT,...`` and the ``[[groups]]`` collector config file."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from grstats.collector.groups import (
    GroupSpec,
    check_label,
    check_unique,
    groups_from_file,
    parse_group,
)
from grstats.core.errors import ConfigError
from grstats.core.model import is_group_label

if TYPE_CHECKING:
    from pathlib import Path


class TestLabel:
    @pytest.mark.parametrize("label", ["a", "orders-eu.1_b", "prod east", "é", "x" * 63])
    def test_accepted(self, label: str) -> None:
        """What an agent accepts as its group_label (agent.model.is_group_label) is a label here too."""
        assert is_group_label(label)
        assert check_label("label", label) == label

    @pytest.mark.parametrize("label", ["", "x" * 64, " a", "a ", "a\nb", "a\tb", None, 7])
    def test_refused(self, label: object) -> None:
        """What an agent refuses is refused here, naming the field, the value and the rule."""
        assert not (isinstance(label, str) and is_group_label(label))
        with pytest.raises(ConfigError) as caught:
            check_label("groups[0].label", label)
        rule = "1 to 63 printable characters, no spaces at either end"
        assert str(caught.value) == f"groups[0].label: {label!r} is not a group label ({rule})"


class TestParseGroup:
    def test_label_and_nodes(self) -> None:
        """LABEL=HOST:PORT,HOST:PORT gives the label and the nodes in order."""
        assert parse_group("orders=db1:7400, db2:7400") == GroupSpec(
            "orders", ("db1:7400", "db2:7400")
        )

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("db1:7400", "--group: 'db1:7400' is not LABEL=HOST:PORT[,HOST:PORT...]"),
            ("=db1:7400", "--group: '=db1:7400': label: '' is not a group label"),
            ("a\tb=db1:7400", "--group: 'a\\tb=db1:7400': label: 'a\\tb' is not a group label"),
            ("a=", "--group: 'a=': nodes[0]: '' is not host:port"),
            ("a=db1:7400,db2", "--group: 'a=db1:7400,db2': nodes[1]: 'db2' is not host:port"),
        ],
    )
    def test_bad_value_names_the_flag(self, text: str, message: str) -> None:
        """A bad --group value is refused, naming the flag, the value and what is wrong."""
        with pytest.raises(ConfigError) as caught:
            parse_group(text)
        assert str(caught.value).startswith(message)

    def test_labels_are_unique(self) -> None:
        """Two groups with one label are refused, naming the label."""
        with pytest.raises(ConfigError, match=r"^label: 'a' names two groups"):
            check_unique([parse_group("a=h:1"), parse_group("b=h:2"), parse_group("a=h:3")])


class TestConfigFile:
    def test_groups_in_file_order(self, tmp_path: Path) -> None:
        """Each [[groups]] table is one group, in file order."""
        path = tmp_path / "collector.toml"
        path.write_text(
            '[[groups]]\nlabel = "orders"\nnodes = ["db1:7400", "db2:7400"]\n\n'
            '[[groups]]\nlabel = "billing"\nnodes = ["db7:7400"]\n'
        )
        assert groups_from_file(path) == (
            GroupSpec("orders", ("db1:7400", "db2:7400")),
            GroupSpec("billing", ("db7:7400",)),
        )

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("interval = 1\n", "interval: is not a key of a collector config file"),
            ("groups = []\n", "groups: [] is not one or more [[groups]] tables"),
            ('[[groups]]\nlabel = "a"\n', "groups[0].nodes: None is not a list of host:port"),
            (
                '[[groups]]\nlabel = "a"\nnodes = ["h:1"]\n[[groups]]\nlabel = " c"\nnodes = []',
                "groups[1].label: ' c' is not a group label (1 to 63",
            ),
            (
                '[[groups]]\nlabel = "a"\nnodes = ["h:1", "h"]\n',
                "groups[0].nodes[1]: 'h' is not host:port",
            ),
            ('[[groups]]\nlabel = "a"\nnodes = []\n', "groups[0].nodes: () is empty"),
            (
                '[[groups]]\nlabel = "a"\nnodes = ["h:1"]\ntimeout = 2\n',
                "groups[0].timeout: is not a key of a group (label, nodes)",
            ),
            ("[[groups]\n", "not TOML"),
        ],
    )
    def test_bad_file_names_the_file_and_the_field(
        self, tmp_path: Path, text: str, message: str
    ) -> None:
        """A bad file is refused with its path, the field and the value."""
        path = tmp_path / "collector.toml"
        path.write_text(text)
        with pytest.raises(ConfigError) as caught:
            groups_from_file(path)
        assert str(caught.value).startswith(f"{path}: {message}")

    def test_missing_file_names_the_flag(self, tmp_path: Path) -> None:
        """A file that cannot be read is refused, naming --config and the path."""
        path = tmp_path / "absent.toml"
        with pytest.raises(ConfigError, match=r"^--config: cannot read '.*absent\.toml'"):
            groups_from_file(path)
