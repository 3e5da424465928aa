"""The TLS and token flags of ``grstats agent`` and of the clients, and their ``Security``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from grstats.cli.errors import CliError
from grstats.core.errors import ConfigError

if TYPE_CHECKING:
    import argparse

    from grstats.core.security import Security


def add_security_arguments(parser: argparse.ArgumentParser, *, agent: bool) -> None:
    """Add the TLS and token flags (``--tls-*``, ``--token-file``) to ``parser``.

    An agent serves with its certificate and may require clients' (``agent``); a client
    presents one only when the agent requires it.
    """
    group = parser.add_argument_group("TLS and token (see README: TLS and identities)")
    mine = "this member's certificate, PEM" if agent else "a client certificate, PEM (mTLS)"
    group.add_argument("--tls-cert", metavar="FILE", help=mine)
    group.add_argument("--tls-key", metavar="FILE", help="the certificate's private key, PEM")
    group.add_argument(
        "--tls-ca", metavar="FILE", help="the CA that signs the group's certificates, PEM"
    )
    if agent:
        group.add_argument(
            "--tls-require-client-cert",
            action="store_true",
            default=None,
            help="mutual TLS: clients must present a certificate the CA signed",
        )
    group.add_argument(
        "--token-file", metavar="FILE", help="file holding the group's shared-secret token"
    )


def client_security(args: argparse.Namespace) -> Security:
    """The ``Security`` of a client's ``--tls-*`` and ``--token-file`` flags.

    TLS is used when any ``--tls-*`` flag is given; ``--tls-ca`` alone checks the agent's
    certificate, with ``--tls-cert`` and ``--tls-key`` the client presents its own (mTLS).

    Raises:
        CliError: exit status 2, naming the flag, when a file is missing or does not parse.
    """
    from grstats.core.security import Security  # noqa: PLC0415  (gRPC: not for --help)
    from grstats.core.tls import TlsConfig  # noqa: PLC0415

    names = {
        "tls.cert_file": "--tls-cert",
        "tls.key_file": "--tls-key",
        "tls.ca_file": "--tls-ca",
        "token_file": "--token-file",
    }
    try:
        tls = None
        if args.tls_cert or args.tls_key or args.tls_ca:
            tls = TlsConfig(
                cert_file=_path(args.tls_cert),
                key_file=_path(args.tls_key),
                ca_file=_path(args.tls_ca),
            )
        return Security.from_files(tls, _path(args.token_file))
    except ConfigError as exc:
        message = str(exc)
        for key, flag in names.items():
            message = message.replace(key, flag)
        raise CliError(message, code=2) from exc


def _path(value: str | None) -> Path | None:
    return None if value is None else Path(value)
