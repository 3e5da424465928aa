"""The doctor's checks of this host: the config, the state directory, secrets, the advertise.

Each function returns :class:`~grstats.agent.doctor.checklist.Check` lines and raises nothing
for what it finds. They run as the user who runs ``grstats doctor``: run it as the agent's
user, or a file the agent may read can be found unreadable (and the reverse as root).
"""

from __future__ import annotations

import os
import pwd
import stat
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from grstats.agent.advertise import advertise_problem
from grstats.agent.config import load_config
from grstats.agent.doctor.checklist import Check
from grstats.core.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from grstats.agent.config import AgentConfig

#: The checks that need a valid config, named when the config is not valid.
NEEDS_CONFIG = ("state_dir", "ports", "mysql", "tls", "peers")


def current_user() -> str:
    """The name of the user this process runs as (its uid when it has no name)."""
    uid = os.geteuid()
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def check_config(
    path: Path, overrides: Mapping[str, object] | None = None
) -> tuple[Check, AgentConfig | None]:
    """Load the config at ``path`` (``overrides`` beat it, by dotted key, as the agent's flags).

    Returns the ``config`` line, and the config when it is valid.
    """
    try:
        config = load_config(path, overrides)
    except ConfigError as exc:
        key = str(exc).partition(":")[0]
        if key == "config":
            fix = f"make {str(path)!r} a readable TOML file (deploy/examples has one per source)"
        else:
            fix = f"correct {key} in {str(path)!r} (docs/configuration.md describes every key)"
        return Check.failed("config", f"config {str(path)!r} is not valid: {exc}", fix), None
    peers = f"{len(config.peers)} peer(s)" if config.peers else "peers discovered"
    if config.peers and config.discovery_enabled:
        peers += " plus those discovered"
    message = (
        f"config {str(path)!r} is valid: source {config.source}, listen {config.listen}, "
        f"advertise {config.advertised}, {peers}, "
        f"{'TLS' if config.tls is not None else 'plain gRPC'}"
        f"{', token' if config.token_file is not None else ''}"
    )
    return Check.ok("config", message), config


def not_checked(reason: str) -> list[Check]:
    """The lines of the checks that need a valid config, skipped for ``reason``."""
    return [Check.skipped(name, f"{name}: not checked, {reason}") for name in NEEDS_CONFIG]


def check_state_dir(path: Path) -> Check:
    """Whether the agent can keep its registry in ``path`` (or create it there)."""
    user = current_user()
    shown = repr(str(path)) if path.is_absolute() else f"{str(path)!r} ({path.absolute()})"
    if path.exists() and not path.is_dir():
        return Check.failed(
            "state_dir",
            f"state directory {shown} is not a directory",
            "set state_dir to a directory the agent's user may write",
        )
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    try:
        if existing == path:
            with tempfile.TemporaryFile(dir=path):
                pass
        else:
            Path(tempfile.mkdtemp(dir=existing, prefix=".grstats-doctor-")).rmdir()
    except OSError as exc:
        if existing == path:
            message = f"state directory {shown} is not writable by user {user}: {exc.strerror}"
            fix = f"make it writable by the agent's user (chown {user} {str(path)!r})"
        else:
            message = (
                f"state directory {shown} does not exist, and user {user} may not create it "
                f"in {str(existing)!r}: {exc.strerror}"
            )
            fix = f"create it for the agent's user: install -d -o {user} {str(path)!r}"
        return Check.failed("state_dir", message, f"{fix}, or set state_dir to one it may write")
    if existing == path:
        return Check.ok("state_dir", f"state directory {shown} is writable by user {user}")
    return Check.ok(
        "state_dir",
        f"state directory {shown} does not exist yet; user {user} may create it "
        f"(in {str(existing)!r}), as the agent does at its start",
    )


def secret_files(config: AgentConfig) -> list[tuple[str, Path]]:
    """The files of ``config`` that hold a secret, by key: passwords, the token, the TLS key."""
    files: list[tuple[str, Path | None]] = [
        ("mysql.password_file", config.mysql.password_file if config.mysql else None),
        ("token_file", config.token_file),
        ("sql_password_file", config.sql_password_file),
        ("tls.key_file", config.tls.key_file if config.tls else None),
    ]
    return [(key, path) for key, path in files if path is not None]


def check_secret_file(key: str, path: Path) -> Check:
    """Whether the secret file ``path`` (of setting ``key``) is readable and not open to all.

    Like ssh with a private key, but the group may read it: the deployment files install
    secrets ``root:grstats`` with mode 0640. Other users' access fails the check; a group
    that may write it is a warning.
    """
    name = f"file:{key}"
    shown = f"{key} {str(path)!r}"
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
        with path.open("rb"):
            pass
    except OSError as exc:
        return Check.failed(
            name,
            f"{shown} cannot be read by user {current_user()}: {exc.strerror}",
            f"make it readable by the agent's user (chown root:grstats {str(path)!r}; "
            f"chmod 640 {str(path)!r}), or correct {key}",
        )
    others = [verb for bit, verb in ((0o004, "read"), (0o002, "write")) if mode & bit]
    if others:
        return Check.failed(
            name,
            f"{shown} has mode {mode:04o}: every user of this host may {' and '.join(others)} it",
            f"chmod 600 {str(path)!r} (or 640 with the agent's group: chown root:grstats)",
        )
    if mode & 0o020:
        return Check.warning(
            name,
            f"{shown} has mode {mode:04o}: its group may write it",
            f"chmod 640 {str(path)!r}",
        )
    return Check.ok(name, f"{shown} is readable, mode {mode:04o}")


def check_advertise(config: AgentConfig) -> Check:
    """The ``advertise`` line: whether the peers can dial the advertised address.

    It resolves names (blocking: call it from a thread while a loop runs).
    """
    problem = advertise_problem(config)
    if problem is None:
        return Check.ok("advertise", f"advertise {config.advertised}: peers can dial it")
    message, _, fix = problem.rpartition("; ")
    return Check.failed("advertise", message or problem, fix)
