"""``grstats version``: the grstats version and the versions of the libraries it runs on."""

from __future__ import annotations

import json
import platform
from importlib import metadata
from typing import TYPE_CHECKING

from grstats import __version__

if TYPE_CHECKING:
    import argparse

    from grstats.cli.types import Subparsers

#: Distributions whose versions matter when reporting a problem.
LIBRARIES = ("grpcio", "protobuf", "msgpack", "structlog", "aiomysql", "rich", "pyspark")


def register(subparsers: Subparsers) -> None:
    """Add the ``version`` subcommand."""
    parser = subparsers.add_parser(
        "version",
        help="print the grstats version (and, with --verbose, its libraries)",
        description="Print the grstats version. With --verbose, also Python's and the "
        "versions of the libraries grstats runs on, for bug reports.",
    )
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text for people (default) or json for scripts",
    )
    parser.add_argument("--verbose", action="store_true", help="also list library versions")
    parser.set_defaults(handler=run)


def versions(verbose: bool) -> dict[str, str]:
    """Return ``{"grstats": ...}`` and, when ``verbose``, Python's and the libraries' versions."""
    found = {"grstats": __version__}
    if verbose:
        found["python"] = platform.python_version()
        for name in LIBRARIES:
            try:
                found[name] = metadata.version(name)
            except metadata.PackageNotFoundError:
                found[name] = "not installed"
    return found


def run(args: argparse.Namespace) -> int:
    """Print the versions in the requested format."""
    found = versions(args.verbose)
    if args.format == "json":
        print(json.dumps(found, sort_keys=False))
    elif args.verbose:
        width = max(map(len, found))
        for name, version in found.items():
            print(f"{name:<{width}}  {version}")
    else:
        print(f"grstats {found['grstats']}")
    return 0
