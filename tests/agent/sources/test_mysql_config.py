"""MySQLSourceConfig: validation naming the field and range, and reading the password late."""

# password_file and password_env name a file and a variable, never a password:
# ruff: noqa: S105, S106

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from grstats.agent.sources.mysql_config import MySQLSourceConfig, Secret, read_password, tls_context
from grstats.core.errors import ConfigError, SourceUnavailable


class TestValidation:
    def test_defaults(self) -> None:
        """Only the host is required; the rest defaults to MySQL's port and sensible limits."""
        config = MySQLSourceConfig(host="db1")
        assert (config.port, config.user, config.schema) == (3306, "grstats", "performance_schema")
        assert (config.connect_timeout_s, config.query_timeout_s) == (5.0, 5.0)
        assert (config.backoff_initial_s, config.backoff_max_s) == (1.0, 5.0)  # issue 43
        assert config.password_file is None
        assert config.password_env is None
        assert not config.uses_tls
        assert config.address == "db1:3306"

    def test_ipv6_address(self) -> None:
        """An IPv6 host is shown in brackets in messages."""
        assert MySQLSourceConfig(host="::1", port=3307).address == "[::1]:3307"

    def test_frozen(self) -> None:
        """The config cannot change after validation."""
        config = MySQLSourceConfig(host="db1")
        with pytest.raises(dataclasses.FrozenInstanceError):
            config.port = 1  # type: ignore[misc]

    @pytest.mark.parametrize(
        ("field", "value", "message"),
        [
            ("host", "", "host: '' is not 1 to 255 characters"),
            ("host", "a" * 256, "is not 1 to 255 characters"),
            ("port", 0, "port: 0 is not in 1..65535"),
            ("port", 65536, "port: 65536 is not in 1..65535"),
            ("port", True, "port: True is not in 1..65535"),
            ("port", "3306", "port: '3306' is not in 1..65535"),
            ("user", "", "user: '' is not 1 to 80 characters"),
            ("password_file", "", "password_file: '' is not a file path"),
            ("password_env", "1PASSWORD", "password_env: '1PASSWORD' is not an environment variable name"),
            ("schema", "performance_schema; DROP", "schema: 'performance_schema; DROP' is not 1 to 64 characters"),
            ("schema", "`ps`", "schema: '`ps`' is not"),
            ("schema", "s" * 65, "is not 1 to 64 characters"),
            ("connect_timeout_s", 0, "connect_timeout_s: 0 is not in (0, 300] seconds"),
            ("connect_timeout_s", 301, "connect_timeout_s: 301 is not in (0, 300] seconds"),
            ("query_timeout_s", float("nan"), "query_timeout_s: nan is not in (0, 300] seconds"),
            ("query_timeout_s", "5", "query_timeout_s: '5' is not in (0, 300] seconds"),
            ("backoff_initial_s", -1, "backoff_initial_s: -1 is not in [0, 3600] seconds"),
            ("backoff_max_s", 3601, "backoff_max_s: 3601 is not in [0, 3600] seconds"),
            ("ssl_verify_identity", "yes", "ssl_verify_identity: 'yes' is not True or False"),
        ],
    )  # fmt: skip
    def test_bad_value_names_field_and_range(self, field: str, value: Any, message: str) -> None:
        """A bad value raises ConfigError naming the field, the value and what is accepted."""
        with pytest.raises(ConfigError) as caught:
            MySQLSourceConfig(**{"host": "db1", field: value})
        assert str(caught.value).startswith(f"{field}: ")
        assert message in str(caught.value)

    def test_backoff_max_below_initial(self) -> None:
        """backoff_max_s below backoff_initial_s is refused, naming both."""
        with pytest.raises(
            ConfigError, match=r"^backoff_max_s: 2 is not in \[backoff_initial_s=5, 3600\]"
        ):
            MySQLSourceConfig(host="db1", backoff_initial_s=5, backoff_max_s=2)

    def test_zero_backoff(self) -> None:
        """A zero backoff (reconnect at every read) is allowed."""
        assert (
            MySQLSourceConfig(host="db1", backoff_initial_s=0, backoff_max_s=0).backoff_max_s == 0
        )

    def test_one_password_source(self) -> None:
        """password_file and password_env together are refused."""
        with pytest.raises(ConfigError, match=r"^password_file and password_env: give at most one"):
            MySQLSourceConfig(host="db1", password_file=Path("/run/secrets/pw"), password_env="PW")

    @pytest.mark.parametrize(
        ("settings", "message"),
        [
            ({"ssl_ca": "ca.pem", "ssl_cert": "client.pem"}, "ssl_cert and ssl_key: give both"),
            ({"ssl_ca": "ca.pem", "ssl_key": "client.key"}, "ssl_cert and ssl_key: give both"),
            ({"ssl_cert": "client.pem", "ssl_key": "client.key"}, "ssl_cert: needs ssl_ca"),
            ({"ssl_verify_identity": True}, "ssl_verify_identity: needs ssl_ca"),
        ],
    )
    def test_tls_settings_go_together(self, settings: dict[str, Any], message: str) -> None:
        """TLS settings that do not make sense together are refused, naming the field."""
        with pytest.raises(ConfigError, match=f"^{message}"):
            MySQLSourceConfig(host="db1", **settings)

    def test_paths_given_as_text(self) -> None:
        """Paths may be given as text; they are kept as Path."""
        config = MySQLSourceConfig(host="db1", password_file="pw", ssl_ca="ca.pem")  # type: ignore[arg-type]
        assert config.password_file == Path("pw")
        assert config.ssl_ca == Path("ca.pem")
        assert config.uses_tls


class TestPassword:
    def test_from_file(self, tmp_path: Path) -> None:
        """The file's content is the password, less trailing newlines (spaces are kept)."""
        path = tmp_path / "pw"
        path.write_text(" s3cret pass \r\n\n", encoding="utf-8")
        assert read_password(MySQLSourceConfig(host="db1", password_file=path)) == " s3cret pass "

    def test_from_environment(self) -> None:
        """The variable's value is the password, even when empty."""
        config = MySQLSourceConfig(host="db1", password_env="GRG_MYSQL_PASSWORD")
        assert read_password(config, {"GRG_MYSQL_PASSWORD": "s3cret"}) == "s3cret"
        assert read_password(config, {"GRG_MYSQL_PASSWORD": ""}) == ""

    def test_neither_means_empty(self) -> None:
        """Without a file or a variable the password is empty."""
        assert read_password(MySQLSourceConfig(host="db1"), {}) == ""

    def test_unset_variable(self) -> None:
        """An unset variable raises SourceUnavailable naming it."""
        config = MySQLSourceConfig(host="db1", password_env="GRG_MYSQL_PASSWORD")
        with pytest.raises(
            SourceUnavailable, match=r"^password_env: \$GRG_MYSQL_PASSWORD is not set"
        ):
            read_password(config, {})

    def test_unreadable_file(self, tmp_path: Path) -> None:
        """A missing file raises SourceUnavailable naming the file and why, not its content."""
        config = MySQLSourceConfig(host="db1", password_file=tmp_path / "missing")
        with pytest.raises(
            SourceUnavailable, match=r"^password_file: cannot read '.*missing': No such file"
        ):
            read_password(config)

    def test_not_text_file(self, tmp_path: Path) -> None:
        """A file that is not UTF-8 raises SourceUnavailable without showing its bytes."""
        path = tmp_path / "pw"
        path.write_bytes(b"\xffsecret\xfe")
        with pytest.raises(SourceUnavailable, match="not UTF-8 text") as caught:
            read_password(MySQLSourceConfig(host="db1", password_file=path))
        assert "secret" not in str(caught.value)
        assert caught.value.__suppress_context__

    def test_secret_hides_in_repr(self) -> None:
        """The password read is a str that repr() does not show."""
        secret = read_password(MySQLSourceConfig(host="db1", password_env="PW"), {"PW": "s3cret"})
        assert isinstance(secret, Secret)
        assert secret == "s3cret"
        assert "s3cret" not in repr(secret)
        assert "s3cret" not in repr({"password": secret})


class TestTlsContext:
    def test_no_tls_without_ca(self) -> None:
        """Without ssl_ca there is no TLS context."""
        assert tls_context(MySQLSourceConfig(host="db1")) is None

    def test_unreadable_ca(self, tmp_path: Path) -> None:
        """A CA file that is not a certificate raises SourceUnavailable at connect time."""
        path = tmp_path / "ca.pem"
        path.write_text("not a certificate", encoding="ascii")
        with pytest.raises(SourceUnavailable, match=r"^TLS files: "):
            tls_context(MySQLSourceConfig(host="db1", ssl_ca=path))


class TestCachingSha2WithoutTls:
    def test_the_rsa_exchange_mysql_8_needs_without_tls_works(self) -> None:
        """PyMySQL can RSA-encrypt the password as caching_sha2_password's full login asks.

        MySQL 8's default authentication plugin, over a connection without TLS, sends the
        password encrypted with the server's RSA key; PyMySQL needs ``cryptography`` for
        that (the ``PyMySQL[rsa]`` dependency). MariaDB has no caching_sha2_password, so
        this checks the client's half: what it sends, the server's private key decrypts.
        """
        from cryptography.hazmat.primitives import hashes, serialization  # noqa: PLC0415
        from cryptography.hazmat.primitives.asymmetric import padding, rsa  # noqa: PLC0415
        from pymysql import _auth  # type: ignore[import-untyped]  # noqa: PLC0415

        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        public_pem = key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        salt = bytes(range(1, 21))
        sent = _auth.sha2_rsa_encrypt(b"s3cret", salt, public_pem)
        oaep = padding.OAEP(padding.MGF1(hashes.SHA1()), hashes.SHA1(), None)  # noqa: S303
        scrambled = key.decrypt(sent, oaep)
        password = bytes(b ^ salt[i % len(salt)] for i, b in enumerate(scrambled))
        assert password == b"s3cret\0"
