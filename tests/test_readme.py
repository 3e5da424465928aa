"""The README's examples run as written."""

from __future__ import annotations

import doctest
import importlib.util
import re
import tomllib
from pathlib import Path

from grstats.agent.limits import DEFAULT_LIMITS

README = Path(__file__).parent.parent / "README.md"


def test_readme_examples_run() -> None:
    """Every >>> example in README.md gives the output the README shows."""
    failures, attempted = doctest.testfile(str(README), module_relative=False, verbose=False)
    assert attempted > 0
    assert failures == 0


def test_readme_shows_the_two_commands() -> None:
    """The README gives the newcomer's two commands: make demo and make test."""
    text = README.read_text(encoding="utf-8")
    assert "make demo" in text
    assert "make test" in text


ROOT = README.parent


def readme_text() -> str:
    """The README as one line of text (claims may wrap)."""
    return " ".join(README.read_text(encoding="utf-8").split())


def test_readme_names_every_package_make_test_installs() -> None:
    """The README names each Debian package `make system-deps` installs, and does not say nothing is installed system-wide."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    packages = re.findall(r'missing="\$\$missing ([a-z0-9.+-]+)"', makefile)
    assert len(packages) >= 5, packages
    text = readme_text()
    for package in packages:
        assert f"`{package}`" in text, package
    assert "nothing is installed system-wide" not in text


def test_readme_limits_are_the_defaults() -> None:
    """The limits the README quotes are LimitsConfig's defaults."""
    limits = DEFAULT_LIMITS
    mib = 1024 * 1024
    claim = (
        f"messages of {limits.max_message_bytes // mib} MiB, GTID texts of "
        f"{limits.max_gtid_text // 1024} KiB, {limits.max_updates} updates a message, "
        f"{limits.max_members} members held, and per sending host {limits.gossip_rate:,.0f} "
        f"gossip messages and {limits.query_rate:,.0f} queries a second (bursts of "
        f"{limits.gossip_burst:,} and {limits.query_burst:,}) and "
        f"{limits.gossip_bytes_in_flight // mib} MiB of gossip in flight"
    )
    assert claim in readme_text()


def test_caching_sha2_claims_agree_with_the_install() -> None:
    """README and configuration docs both say caching_sha2_password works without TLS, as the RSA extra makes true."""
    docs = " ".join((ROOT / "docs" / "configuration.md").read_text(encoding="utf-8").split())
    assert "`caching_sha2_password` works with or without TLS" in readme_text()
    assert "`caching_sha2_password` works with or without it" in docs
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert any(d.startswith("PyMySQL[rsa]") for d in dependencies["project"]["dependencies"])
    assert importlib.util.find_spec("cryptography") is not None


def test_readme_credits_shell_with_lag() -> None:
    """The README does not claim that nothing shows per-member lag: MySQL Shell's extended status does."""
    text = readme_text()
    assert "Nobody shows" not in text
    assert "replicationLag" in text
