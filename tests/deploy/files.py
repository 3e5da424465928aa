"""Helpers of the deploy tests: the deploy files, read as systemd, a shell and Kubernetes do."""

from __future__ import annotations

import re
import shlex
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from grstats.cli import build_parser

if TYPE_CHECKING:
    import argparse

DEPLOY = Path(__file__).parents[2] / "deploy"
KUBERNETES = DEPLOY / "kubernetes"
#: The absolute paths the deploy files name on a host or in a pod, moved under a test's root.
ABSOLUTE_PREFIXES = ("/etc/grstats", "/var/lib/grstats", "/var/run/mysql-ca")
#: The entry point the units and the image install, and the one the tests run.
INSTALLED_GRSTATS = "/opt/grstats/bin/grstats"
TOKEN = "token-of-the-deploy-tests-0123456789"  # noqa: S105  (a test's token)


@dataclass(frozen=True)
class Unit:
    """A systemd unit file: its settings in order, as (section, key, value)."""

    path: Path
    settings: tuple[tuple[str, str, str], ...]

    @classmethod
    def read(cls, path: Path) -> Unit:
        """Parse ``path`` (comments and blank lines skipped; keys may repeat)."""
        section = ""
        settings: list[tuple[str, str, str]] = []
        for line in path.read_text(encoding="utf-8").splitlines():
            text = line.strip()
            if not text or text.startswith(("#", ";")):
                continue
            if text.startswith("[") and text.endswith("]"):
                section = text[1:-1]
                continue
            key, equals, value = text.partition("=")
            assert equals, f"{path.name}: {line!r} is not KEY=VALUE"
            settings.append((section, key.strip(), value.strip()))
        return cls(path, tuple(settings))

    def values(self, key: str, section: str = "Service") -> list[str]:
        """Every value of ``key`` in ``section``, in order."""
        return [v for s, k, v in self.settings if s == section and k == key]

    def value(self, key: str, section: str = "Service") -> str:
        """The last value of ``key`` (systemd's rule for single-valued settings)."""
        found = self.values(key, section)
        assert found, f"{self.path.name}: no {key}= in [{section}]"
        return found[-1]

    def seconds(self, key: str, section: str = "Service") -> float:
        """A time span such as ``15s``, ``5min`` or ``300``, in seconds."""
        text = self.value(key, section)
        match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(ms|s|min|)", text)
        assert match is not None, f"{self.path.name}: {key}={text} is not a time span"
        scale = {"ms": 0.001, "s": 1.0, "": 1.0, "min": 60.0}[match.group(2)]
        return float(match.group(1)) * scale


def read_env_file(path: Path) -> dict[str, str]:
    """Read a systemd EnvironmentFile: ``KEY=VALUE`` lines, quotes removed, comments skipped."""
    environment: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        text = line.strip()
        if not text or text.startswith(("#", ";")):
            continue
        key, equals, value = text.partition("=")
        assert equals, f"{path.name}: {line!r} is not KEY=VALUE"
        words = shlex.split(value)
        assert len(words) == 1, f"{path.name}: the value of {key} is not one quoted string"
        environment[key] = words[0]
    return environment


def exec_start(unit: Unit, environment: dict[str, str] | None = None) -> list[str]:
    """The unit's ExecStart as systemd runs it: words, with ``$VAR`` split into words."""
    environment = environment or {}
    words: list[str] = []
    for word in shlex.split(unit.value("ExecStart")):
        name = re.fullmatch(r"\$([A-Za-z_][A-Za-z0-9_]*)", word)
        if name is None:
            assert "$" not in word, f"{unit.path.name}: {word!r} expands in a way not checked"
            words.append(word)
        else:
            assert name.group(1) in environment, f"{unit.path.name}: ${name.group(1)} is not set"
            words.extend(environment[name.group(1)].split())
    return words


def parse_grstats(argv: list[str]) -> argparse.Namespace:
    """Parse ``argv`` (without the program) with grstats's own parser; fail on a bad flag."""
    parser = build_parser()
    try:
        return parser.parse_args(argv)
    except SystemExit as exc:
        pytest.fail(f"grstats {shlex.join(argv)} does not parse (exit {exc.code})")


def under(root: Path, text: str) -> str:
    """``text`` with the absolute paths of :data:`ABSOLUTE_PREFIXES` moved under ``root``."""
    for prefix in ABSOLUTE_PREFIXES:
        text = text.replace(prefix, f"{root}{prefix}")
    return text


def yaml_documents(path: Path) -> list[dict[str, Any]]:
    """The documents of a YAML file (empty ones, such as a leading comment, left out)."""
    with path.open(encoding="utf-8") as file:
        documents = [document for document in yaml.safe_load_all(file) if document is not None]
    for document in documents:
        assert isinstance(document, dict), f"{path.name}: a document is not a mapping"
    return documents


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def manifest(kind: str, name: str) -> dict[str, Any]:
    """The one Kubernetes object of ``kind`` and ``name`` in deploy/kubernetes."""
    found = [
        document
        for path in sorted(KUBERNETES.glob("*.yaml"))
        for document in yaml_documents(path)
        if document["kind"] == kind and document["metadata"]["name"] == name
    ]
    assert len(found) == 1, f"{len(found)} {kind} {name} in deploy/kubernetes"
    return found[0]


def configmap_toml() -> str:
    """The agent's TOML in the ConfigMap grstats-agent."""
    text = manifest("ConfigMap", "grstats-agent")["data"]["agent.toml"]
    assert isinstance(text, str)
    return text
