"""The MySQL driver (aiomysql over PyMySQL), without ``cryptography`` until a password needs it.

PyMySQL imports ``cryptography`` as it is imported (``pymysql._auth``) for one thing only:
sending the password RSA-encrypted (``sha2_rsa_encrypt``), which a MySQL 8 account of
``caching_sha2_password`` or ``sha256_password`` asks for over a connection without TLS when
the server has not cached the account yet. Loading it costs an agent some 6 MB of its 60 on
every other connection too. So PyMySQL is imported here with ``cryptography`` hidden from it,
and its ``sha2_rsa_encrypt`` is replaced by one that imports ``cryptography`` at its first call
and then hands over to PyMySQL's own: the same encryption, and without ``cryptography``
installed the same ``RuntimeError``. aiomysql and PyMySQL's connections call it through the
module (``_auth.sha2_rsa_encrypt``), as every PyMySQL from 1.0 does.

Every module of grstats takes the driver from here.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any


def _import_pymysql_without_cryptography() -> None:
    """Import PyMySQL with ``cryptography`` hidden, unless either is already imported."""
    if "pymysql" in sys.modules or "cryptography" in sys.modules:
        return
    sys.modules["cryptography"] = None  # type: ignore[assignment]  # its import raises ImportError
    try:
        auth: Any = importlib.import_module("pymysql._auth")  # untyped: its names are set below
    finally:
        del sys.modules["cryptography"]
    encrypt = auth.sha2_rsa_encrypt

    def sha2_rsa_encrypt(password: bytes, salt: bytes, public_key: bytes) -> Any:
        """PyMySQL's ``sha2_rsa_encrypt``, with ``cryptography`` imported first."""
        try:
            from cryptography.hazmat.backends import default_backend  # noqa: PLC0415
            from cryptography.hazmat.primitives import hashes, serialization  # noqa: PLC0415
            from cryptography.hazmat.primitives.asymmetric import padding  # noqa: PLC0415
        except ImportError:
            pass  # PyMySQL's own raises its RuntimeError
        else:
            auth.default_backend = default_backend
            auth.hashes = hashes
            auth.serialization = serialization
            auth.padding = padding
            auth._have_cryptography = True  # noqa: SLF001
            auth.sha2_rsa_encrypt = encrypt
        return encrypt(password, salt, public_key)

    auth.sha2_rsa_encrypt = sha2_rsa_encrypt


_import_pymysql_without_cryptography()

# isort: split
import aiomysql  # type: ignore[import-untyped]  # noqa: E402
from pymysql.constants import CLIENT, FIELD_TYPE  # type: ignore[import-untyped]  # noqa: E402
from pymysql.converters import decoders  # type: ignore[import-untyped]  # noqa: E402
from pymysql.err import MySQLError  # type: ignore[import-untyped]  # noqa: E402

__all__ = ["CLIENT", "FIELD_TYPE", "MySQLError", "aiomysql", "decoders"]
