"""Certificates for tests, made by the project's own deploy/tls/make-certs.sh."""

from __future__ import annotations

import datetime as dt
import shutil
import subprocess
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization

MAKE_CERTS = Path(__file__).parents[1] / "deploy" / "tls" / "make-certs.sh"
#: When the certificates of :func:`expired_copy` expired: a whole second, as X.509 times are.
EXPIRED_AT = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)


def make_certs(directory: Path, *members: str) -> Path:
    """Run make-certs.sh into ``directory`` for ``members`` (NAME=UUID@HOSTS); return it."""
    bash = shutil.which("bash")
    assert bash is not None
    done = subprocess.run(
        [bash, str(MAKE_CERTS), str(directory), *members],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return directory


def expired_copy(certs: Path, name: str) -> Path:
    """``name``'s certificate (same key, names, extensions) re-signed by the CA to expire at EXPIRED_AT.

    Written beside it as ``<name>x.pem``; its path is returned.
    """
    ca = x509.load_pem_x509_certificate((certs / "ca.pem").read_bytes())
    ca_key: Any = serialization.load_pem_private_key((certs / "ca.key").read_bytes(), None)
    own = x509.load_pem_x509_certificate((certs / f"{name}.pem").read_bytes())
    builder = (
        x509.CertificateBuilder()
        .subject_name(own.subject)
        .issuer_name(ca.subject)
        .public_key(own.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(EXPIRED_AT - dt.timedelta(days=30))
        .not_valid_after(EXPIRED_AT)
    )
    for extension in own.extensions:
        builder = builder.add_extension(extension.value, critical=extension.critical)
    path = certs / f"{name}x.pem"
    path.write_bytes(builder.sign(ca_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM))
    return path
