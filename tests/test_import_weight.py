"""What the light parts load: no MySQL driver for the gossip core, the agent command, the records or Spark's stage; no SQL engine for the agent command.

A running agent loads only what its source, its logs and its endpoints need (issue 33: an
agent at most 60 MB, tests/agent/test_agent_memory.py): each command loads only its module,
Rich only with console logs, cryptography only to RSA-encrypt a MySQL password. ``grstats
--version`` answers before any parser or command loads, and ``grstats query --help`` without
gRPC, and ``grstats query members`` none of the agent's modules (issue 50: a command line
that answers in tens of milliseconds; an agent without ``/metrics`` loads no prometheus-client).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any

import pytest

from grstats import __version__
from grstats.cli import COMMAND_MODULES, COMMANDS, build_parser
from grstats.cli.demo import free_ports
from tests import waiting

if TYPE_CHECKING:
    from pathlib import Path


@pytest.mark.parametrize(
    "module",
    [
        "grstats.agent.gossip",
        "grstats.cli.agent",
        "grstats.collector.records",
        "grstats.spark.stage",
    ],
)
def test_no_mysql_driver_is_loaded(module: str) -> None:
    """Importing the module leaves aiomysql and PyMySQL unloaded (they load with MySQLSource)."""
    check = (
        f"import sys, {module}, grstats.agent.sources; "
        "assert not {'aiomysql', 'pymysql'} & set(sys.modules), sorted(sys.modules); "
        "grstats.agent.sources.MySQLSource; assert 'aiomysql' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", check], check=True, timeout=60, capture_output=True)


def test_the_agent_command_loads_no_sql_engine() -> None:
    """Importing the agent command leaves mysql-mimic and sqlglot unloaded (they load with sql_listen)."""
    check = (
        "import sys, grstats.cli.agent; "
        "assert not {'mysql_mimic', 'sqlglot'} & set(sys.modules), sorted(sys.modules); "
        "import grstats.agent.sql; assert {'mysql_mimic', 'sqlglot'} <= set(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", check], check=True, timeout=60, capture_output=True)


#: What ``grstats agent`` leaves unloaded with a simulated source, JSON logs and neither the
#: SQL endpoint nor ``/metrics``: the SQL endpoint's engine, prometheus-client (issue 50: the
#: agent counts nothing without ``/metrics``), the MySQL driver and cryptography, Rich (the
#: console's tracebacks and the screens), the TLS diagnosis (until a dial fails in a
#: handshake), the in-memory seams of the tests, and the other commands' code.
NOT_IN_A_SIMULATED_AGENT = (
    "sqlglot",
    "prometheus_client",
    "grstats.agent.metrics",
    "grstats.agent.metrics_http",
    "grstats.agent.metrics_series",
    "mysql_mimic",
    "aiomysql",
    "pymysql",
    "cryptography",
    "rich",
    "pygments",
    "grstats.agent.sql",
    "grstats.agent.doctor",
    "grstats.agent.tls_handshake",
    "grstats.agent.transports.faulty",
    "grstats.agent.transports.memory",
    "grstats.agent.registry.memory",
    "grstats.agent.sources.memory",
    "grstats.cli.demo",
    "grstats.cli.doctor",
    "grstats.cli.query",
    "grstats.cli.simulate",
    "grstats.collector",
    "grstats.spark",
)

#: Runs ``grstats agent ARGS`` in this process; once it has read its member and a few periods
#: passed, prints the modules loaded and stops the agent as SIGTERM does.
AGENT_MODULES = """
import json, os, signal, sys, threading, time
from grstats.cli import main

def look():
    while "grstats.agent.sources.simulated" not in sys.modules:
        time.sleep(0.05)
    time.sleep(1.5)
    print(json.dumps(sorted(sys.modules)))
    os.kill(os.getpid(), signal.SIGTERM)

threading.Thread(target=look, daemon=True).start()
sys.exit(main(sys.argv[1:]))
"""


def test_a_simulated_agent_loads_no_sql_engine_driver_rich_or_other_commands(
    tmp_path: Path,
) -> None:
    """A running `grstats agent` (simulated, JSON logs, no SQL endpoint) loads none of those."""
    port = free_ports(1)[0]
    done = subprocess.run(
        [
            *(sys.executable, "-c", AGENT_MODULES, "agent", "--source", "simulated"),
            *("--member-index", "0", "--group-start", str(int(time.time()) - 5)),
            *("--listen", f"127.0.0.1:{port}", "--peers", f"127.0.0.1:{port}"),
            *("--state-dir", str(tmp_path), "--log-format", "json"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = json.loads(done.stdout)
    assert "grstats.agent.sim.group" in loaded
    unwanted = [
        name
        for name in loaded
        if any(name == top or name.startswith(f"{top}.") for top in NOT_IN_A_SIMULATED_AGENT)
    ]
    assert not unwanted, unwanted


#: What neither ``grstats --version`` nor ``grstats query --help`` loads (issue 50: a command
#: line that answers at once): gRPC, protobuf and asyncio (the query's call to an agent),
#: structlog and Rich, the SQL engine, Arrow and Spark, msgpack.
NOT_FOR_A_QUICK_ANSWER = (
    "grpc",
    "google.protobuf",
    "structlog",
    "rich",
    "pyarrow",
    "pyspark",
    "sqlglot",
    "mysql_mimic",
    "msgpack",
    "asyncio",
)

#: Runs ``grstats --version`` and then ``grstats query --help`` in this process, as the
#: ``grstats`` script does, and prints what each printed and the modules loaded after it.
QUICK_COMMANDS = """
import contextlib, io, json, sys
from grstats.cli import main

seen = {}
for words in (["--version"], ["query", "--help"]):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        main(words)
    seen[" ".join(words)] = {"out": out.getvalue(), "modules": sorted(sys.modules)}
print(json.dumps(seen))
"""


def test_version_and_query_help_load_no_grpc_structlog_or_any_commands_code() -> None:
    """`grstats --version` loads no parser nor command; neither it nor `query --help` loads those."""
    done = subprocess.run(
        [sys.executable, "-c", QUICK_COMMANDS],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    seen = json.loads(done.stdout)
    version, query_help = seen["--version"], seen["query --help"]
    assert version["out"] == f"grstats {__version__}\n"
    assert "usage: grstats query" in query_help["out"]
    assert "members" in query_help["out"]
    for words, loaded in (("--version", version), ("query --help", query_help)):
        unwanted = [
            name
            for name in loaded["modules"]
            if any(name == top or name.startswith(f"{top}.") for top in NOT_FOR_A_QUICK_ANSWER)
        ]
        assert not unwanted, (words, unwanted)
    assert not {"argparse", *COMMAND_MODULES} & set(version["modules"])
    assert not (set(COMMAND_MODULES) - {COMMANDS["query"]}) & set(query_help["modules"])


#: What ``grstats query members`` leaves unloaded (issue 50): the agent's own modules (the
#: table's wire form and the source report are core/query_wire.py's), the election's rules
#: (``query status``'s next primary), prometheus-client, the
#: SQL engine, Rich and the MySQL drivers.
NOT_FOR_A_TABLE_QUERY = (
    "grstats.agent",
    "grstats.core.election",
    "prometheus_client",
    "mysql_mimic",
    "sqlglot",
    "rich",
    "pymysql",
    "aiomysql",
)

#: Runs ``grstats query members --format json --node ADDRESS`` in this process, as the
#: ``grstats`` script does, and prints its exit status, what it printed and the modules loaded.
QUERY_MEMBERS = """
import contextlib, io, json, sys
from grstats.cli import main

out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main(["query", "members", "--format", "json", "--node", sys.argv[1]])
print(json.dumps({"code": code, "out": out.getvalue(), "modules": sorted(sys.modules)}))
"""


def test_query_members_loads_none_of_the_agents_modules(tmp_path: Path) -> None:
    """`grstats query members` against a running agent loads no grstats.agent, Rich nor driver."""
    port = free_ports(1)[0]
    address = f"127.0.0.1:{port}"
    agent = subprocess.Popen(
        [
            *(sys.executable, "-m", "grstats", "agent", "--source", "simulated"),
            *("--member-index", "0", "--group-start", str(int(time.time()) - 5)),
            *("--listen", address, "--peers", address),
            *("--state-dir", str(tmp_path), "--log-format", "json"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def answered() -> dict[str, Any] | None:
        done = subprocess.run(
            [sys.executable, "-c", QUERY_MEMBERS, address],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        seen: dict[str, Any] = json.loads(done.stdout) if done.returncode == 0 else {}
        if seen.get("code") != 0:
            return None  # the agent does not listen yet
        return seen if len(json.loads(seen["out"])["rows"]) == 3 else None

    try:
        seen = waiting.wait_until(answered, 30, "the agent answers with its 3 members")
    finally:
        agent.terminate()
        agent.wait(15)
    assert seen is not None
    assert "grpc" in seen["modules"]  # it did ask the agent
    unwanted = [
        name
        for name in seen["modules"]
        if any(name == top or name.startswith(f"{top}.") for top in NOT_FOR_A_TABLE_QUERY)
    ]
    assert not unwanted, unwanted


def test_each_command_loads_only_its_own_module() -> None:
    """COMMANDS names every command the modules add, each with the module that adds it."""
    assert set(COMMANDS.values()) == set(COMMAND_MODULES)
    assert set(_commands(build_parser())) == set(COMMANDS)
    for command, module in COMMANDS.items():
        assert command in _commands(build_parser(command))
        assert set(_commands(build_parser(command))) == {
            name for name, owner in COMMANDS.items() if owner == module
        }


def _commands(parser: argparse.ArgumentParser) -> list[str]:
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return list(actions[0].choices)


def test_json_logs_load_no_rich_and_the_console_still_renders_its_tracebacks() -> None:
    """Rich loads with a console's logs, whose exceptions it renders as before (a boxed traceback)."""
    check = """
import io, sys
from grstats.core.log import configure_logging, get_logger
configure_logging("json", stream=io.StringIO())
assert "rich" not in sys.modules, "json"
out = io.StringIO()
configure_logging("console", stream=out)
try:
    raise RuntimeError("boom")
except RuntimeError:
    get_logger().exception("failed")
assert "rich" in sys.modules
text = out.getvalue()
assert "Traceback (most recent call last)" in text and "\\u256d" in text, text
"""
    subprocess.run([sys.executable, "-c", check], check=True, timeout=60, capture_output=True)


#: Given a public key (PEM) on stdin: loads the MySQL source, checks cryptography is not
#: loaded, encrypts a password as PyMySQL does for caching_sha2_password without TLS, prints it.
ENCRYPT = """
import sys
import grstats.agent.sources.mysql
assert "cryptography" not in sys.modules
from pymysql import _auth
data = _auth.sha2_rsa_encrypt(b"secret", b"0123456789abcdefghij", sys.stdin.buffer.read())
assert "cryptography" in sys.modules
print(data.hex())
"""


def test_the_mysql_driver_loads_cryptography_only_to_encrypt_a_password() -> None:
    """PyMySQL's RSA encryption of a password still works: cryptography loads at its first use."""
    from cryptography.hazmat.primitives import hashes, serialization  # noqa: PLC0415
    from cryptography.hazmat.primitives.asymmetric import padding, rsa  # noqa: PLC0415

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    done = subprocess.run(
        [sys.executable, "-c", ENCRYPT], input=public, capture_output=True, timeout=60, check=True
    )
    oaep = padding.OAEP(mgf=padding.MGF1(hashes.SHA1()), algorithm=hashes.SHA1(), label=None)  # noqa: S303
    plain = key.decrypt(bytes.fromhex(done.stdout.decode()), oaep)
    salt = b"0123456789abcdefghij"
    assert plain == bytes(c ^ salt[i % len(salt)] for i, c in enumerate(b"secret\0"))


def test_without_cryptography_the_driver_raises_pymysqls_error() -> None:
    """Without cryptography, encrypting a password raises PyMySQL's own RuntimeError."""
    check = """
import sys
import grstats.agent.sources.mysql
sys.modules["cryptography"] = None
from pymysql import _auth
try:
    _auth.sha2_rsa_encrypt(b"secret", b"0123456789abcdefghij", b"")
except RuntimeError as exc:
    assert "'cryptography' package is required" in str(exc), exc
else:
    raise AssertionError("no error")
"""
    subprocess.run([sys.executable, "-c", check], check=True, timeout=60, capture_output=True)
