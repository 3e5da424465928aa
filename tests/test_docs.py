"""docs/configuration.md and docs/cli.md agree with the config loader and the command parser."""

from __future__ import annotations

import argparse
import re
import shlex
import tomllib
from dataclasses import MISSING, Field, fields
from pathlib import Path

import pytest

from grstats.agent.config import SOURCES, AgentConfig, load_config
from grstats.agent.limits import LimitsConfig
from grstats.agent.member_probe import HealthConfig
from grstats.agent.metrics_scope import MetricsConfig
from grstats.agent.sources import MySQLSourceConfig, SimulatedSourceConfig
from grstats.cli import build_parser
from grstats.cli.agent import OVERRIDES
from grstats.core.errors import ConfigError
from grstats.core.tls import TlsConfig
from grstats.spark.session import DEFAULT_MASTER

DOCS = Path(__file__).parent.parent / "docs"
CONFIGURATION = DOCS / "configuration.md"
CLI = DOCS / "cli.md"

#: The file's sections, by the name the file spells them with ("" for the top level).
SECTION_CLASSES: dict[str, type] = {
    "": AgentConfig,
    "tls": TlsConfig,
    "limits": LimitsConfig,
    "metrics": MetricsConfig,
    "health": HealthConfig,
    "simulated": SimulatedSourceConfig,
    "mysql": MySQLSourceConfig,
}
#: AgentConfig fields that are sections, not keys.
SECTION_FIELDS = {*SOURCES, "limits", "tls", "metrics", "health"}
NO_FLAG = "—"
LONG_FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)*(?![\w*-])")
Rows = dict[str, list[str]]


def _headed(text: str) -> dict[str, str]:
    """The text under each ``## `` heading, by heading."""
    parts: dict[str, str] = {}
    heading = ""
    for line in text.splitlines():
        if line.startswith("## "):
            heading = line[3:].strip()
            parts[heading] = ""
        elif heading:
            parts[heading] += line + "\n"
    return parts


def _rows(text: str) -> Rows:
    """The rows of the tables in ``text`` by their first cell (backticks removed), header skipped."""
    rows: Rows = {}
    for line in text.splitlines():
        if not line.startswith("|") or set(line) <= set("|-: "):
            continue
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if cells[0] in {"key", "flag", "status", "command"}:
            continue
        rows[cells[0].strip("`")] = cells[1:]
    return rows


def config_sections(text: str) -> dict[str, Rows]:
    """The documented keys of each config file section: ``{section: {key: cells}}``."""
    sections: dict[str, Rows] = {}
    for heading, body in _headed(text).items():
        if heading == "Top-level keys":
            sections[""] = _rows(body)
        elif match := re.fullmatch(r"`\[(\w+)\]` section", heading):
            sections[match.group(1)] = _rows(body)
    return sections


def loader_keys() -> dict[str, set[str]]:
    """The keys each section of the config file takes, from the config dataclasses."""
    keys = {name: {f.name for f in fields(cls)} for name, cls in SECTION_CLASSES.items()}
    keys[""] -= SECTION_FIELDS
    return keys


def key_differences(text: str) -> list[str]:
    """What ``text`` documents that the loader lacks, and the reverse, one line each."""
    documented = {section: set(rows) for section, rows in config_sections(text).items()}
    problems = []
    for section, keys in loader_keys().items():
        shown = documented.get(section, set())
        problems += [f"[{section}] {key}: not documented" for key in sorted(keys - shown)]
        problems += [f"[{section}] {key}: not a loader key" for key in sorted(shown - keys)]
    return problems


def _dotted(section: str, key: str) -> str:
    return f"{section}.{key}" if section else key


def _default_of(field: Field[object]) -> object:
    """The field's default; MISSING when the key is required."""
    if field.default is not MISSING:
        return field.default
    factory = field.default_factory
    return MISSING if factory is MISSING else factory()


def _as_toml(value: object) -> object:
    """``value`` as the config file spells it (a path is a string, a tuple a list)."""
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return list(value)
    return value


def _parsers(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> dict[tuple[str, ...], argparse.ArgumentParser]:
    """Every parser of the ``grstats`` tree, by its command path (``()`` for grstats itself)."""
    found = {path: parser}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found |= _parsers(sub, (*path, name))
    return found


def _long_flags(parser: argparse.ArgumentParser) -> set[str]:
    return {
        option
        for action in parser._actions
        for option in action.option_strings
        if option.startswith("--") and option != "--help"
    }


def _is_leaf(parser: argparse.ArgumentParser) -> bool:
    return not any(isinstance(a, argparse._SubParsersAction) for a in parser._actions)


def _examples(text: str) -> list[str]:
    """Every ``grstats`` command in the ``sh`` blocks of ``text``, continuation lines joined."""
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", text, flags=re.DOTALL):
        joined = re.sub(r"\\\n\s*", " ", block)
        commands += [line.strip() for line in joined.splitlines() if line.startswith("grstats ")]
    return commands


@pytest.fixture(name="parser", scope="module")
def _parser() -> argparse.ArgumentParser:
    return build_parser()


@pytest.fixture(name="config_doc", scope="module")
def _config_doc() -> str:
    return CONFIGURATION.read_text(encoding="utf-8")


@pytest.fixture(name="cli_doc", scope="module")
def _cli_doc() -> str:
    return CLI.read_text(encoding="utf-8")


class TestConfigurationKeys:
    def test_every_loader_key_is_documented_and_no_other(self, config_doc: str) -> None:
        """Each section of configuration.md lists exactly the keys its dataclass takes."""
        assert config_sections(config_doc).keys() == SECTION_CLASSES.keys()
        assert key_differences(config_doc) == []

    @pytest.mark.parametrize("section", list(SECTION_CLASSES))
    def test_documented_keys_pass_the_loader(self, config_doc: str, section: str) -> None:
        """load_config knows every documented key: its error is about something else."""
        for key in config_sections(config_doc)[section]:
            with pytest.raises(ConfigError) as caught:
                load_config(None, {_dotted(section, key): object()})
            assert "unknown setting" not in str(caught.value), key

    def test_the_loader_refuses_a_key_it_does_not_know(self) -> None:
        """The probe above can fail: a key the loader lacks gets "unknown setting"."""
        with pytest.raises(ConfigError, match="unknown setting"):
            load_config(None, {"limits.period_s": 1})

    def test_a_renamed_key_is_caught(self, config_doc: str) -> None:
        """A documented key that the code renamed shows up as both missing and unknown."""
        renamed = config_doc.replace("| `period_s` |", "| `period_secs` |")
        assert key_differences(renamed) == [
            "[] period_s: not documented",
            "[] period_secs: not a loader key",
        ]

    @pytest.mark.parametrize("section", list(SECTION_CLASSES))
    def test_documented_defaults_match_the_dataclasses(self, config_doc: str, section: str) -> None:
        """The default column is the dataclass default: a TOML value, "none" or "required"."""
        rows = config_sections(config_doc)[section]
        defaults = {f.name: _default_of(f) for f in fields(SECTION_CLASSES[section])}
        for key, cells in rows.items():
            cell, expected = cells[1], defaults[key]
            if expected is MISSING:
                assert cell == "required", key
            elif expected is None:
                assert cell.startswith("none"), key
            else:
                literal = re.fullmatch(r"`([^`]+)`", cell)
                assert literal, f"{key}: default {cell!r} is not a `TOML value`"
                written = tomllib.loads(f"v = {literal.group(1)}")["v"]
                wanted = _as_toml(expected)
                assert (written, type(written)) == (wanted, type(wanted)), key

    @pytest.mark.parametrize("section", list(SECTION_CLASSES))
    def test_flag_column_names_the_overriding_flag(
        self, config_doc: str, section: str, parser: argparse.ArgumentParser
    ) -> None:
        """The flag column is the grstats agent flag that sets the key, or a dash."""
        flag_of = {key: "--" + dest.replace("_", "-") for dest, key in OVERRIDES.items()}
        agent_flags = _long_flags(_parsers(parser)[("agent",)])
        assert set(flag_of.values()) <= agent_flags
        for key, cells in config_sections(config_doc)[section].items():
            written = cells[3].strip("`")
            assert written == flag_of.get(_dotted(section, key), NO_FLAG), key

    def test_example_file_uses_only_known_keys(self, config_doc: str) -> None:
        """The example config in configuration.md is TOML whose keys the loader takes."""
        (block,) = re.findall(r"```toml\n(.*?)```", config_doc, flags=re.DOTALL)
        example = tomllib.loads(block)
        keys = loader_keys()
        for name, value in example.items():
            if isinstance(value, dict):
                assert set(value) <= keys[name], name
            else:
                assert name in keys[""], name
        assert example["source"] in example


class TestConfigurationFlags:
    def test_collector_table_matches_its_parser(
        self, config_doc: str, parser: argparse.ArgumentParser
    ) -> None:
        """The collector table lists every collect flag with its parser default."""
        rows = _rows(_headed(config_doc)["The collector's settings"])
        collect = _parsers(parser)[("collect",)]
        assert set(rows) == _long_flags(collect)
        for action in collect._actions:
            if action.option_strings[0] in rows:
                _check_flag_default(action, rows[action.option_strings[0]][0])

    def test_spark_table_matches_the_job_parsers(
        self, config_doc: str, parser: argparse.ArgumentParser
    ) -> None:
        """The Spark table's flags exist on the jobs it names, with their defaults."""
        rows = _rows(_headed(config_doc)["The Spark jobs' settings"])
        parsers = _parsers(parser)
        assert rows
        for flag, (job, default, *_) in rows.items():
            jobs = ("ingest", "report") if job == "both" else (job,)
            for name in jobs:
                actions = {
                    a.option_strings[0]: a
                    for a in parsers[("spark", name)]._actions
                    if a.option_strings
                }
                action = actions[flag]
                if flag == "--master":
                    assert action.default is None
                    assert default == f"`{DEFAULT_MASTER}`"
                else:
                    _check_flag_default(action, default)


def _check_flag_default(action: argparse.Action, cell: str) -> None:
    flag = action.option_strings[0]
    if action.required:
        assert cell == "required", flag
    elif action.default is None:
        assert cell.startswith("none"), flag
    else:
        assert cell == f"`{action.default}`", flag


class TestCli:
    def test_every_command_has_a_section(
        self, cli_doc: str, parser: argparse.ArgumentParser
    ) -> None:
        """cli.md has one "## grstats ..." section per command and subcommand, and no other."""
        documented = {h for h in _headed(cli_doc) if h.startswith("grstats")}
        assert documented == {" ".join(("grstats", *path)) for path in _parsers(parser)}

    def test_flag_tables_match_the_parsers(
        self, cli_doc: str, parser: argparse.ArgumentParser
    ) -> None:
        """Each command's table lists exactly its parser's long flags."""
        sections = _headed(cli_doc)
        for path, sub in _parsers(parser).items():
            rows = _rows(sections[" ".join(("grstats", *path))])
            listed = {flag for cell in rows for flag in LONG_FLAG.findall(cell)}
            assert listed == _long_flags(sub), path

    def test_no_unknown_flag_is_mentioned(
        self, cli_doc: str, parser: argparse.ArgumentParser
    ) -> None:
        """Every --flag written anywhere in cli.md is a flag of some grstats command."""
        known = {"--help"}.union(*(_long_flags(sub) for sub in _parsers(parser).values()))
        assert set(LONG_FLAG.findall(cli_doc)) - known == set()

    def test_examples_parse(self, cli_doc: str, parser: argparse.ArgumentParser) -> None:
        """Every example command parses with the real parser and reaches a handler."""
        examples = _examples(cli_doc)
        assert len(examples) >= 10
        for command in examples:
            argv = shlex.split(command, comments=True)[1:]
            try:
                args = parser.parse_args(argv)
            except SystemExit as exc:
                pytest.fail(f"{command!r} does not parse (exit {exc.code})")
            assert callable(getattr(args, "handler", None)), command

    def test_every_command_has_an_example(
        self, cli_doc: str, parser: argparse.ArgumentParser
    ) -> None:
        """Each command that does work has an example in its own section."""
        sections = _headed(cli_doc)
        for path, sub in _parsers(parser).items():
            if path and _is_leaf(sub):
                name = " ".join(("grstats", *path))
                examples = _examples(sections[name])
                assert any(e == name or e.startswith(name + " ") for e in examples), name

    def test_a_bad_example_is_caught(self, parser: argparse.ArgumentParser) -> None:
        """The example check can fail: a misspelled flag does not parse."""
        (command,) = _examples("```sh\ngrstats query stats --nodes 127.0.0.1:7400\n```")
        with pytest.raises(SystemExit):
            parser.parse_args(shlex.split(command)[1:])
