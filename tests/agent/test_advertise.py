"""advertise_problem, and ``grstats agent`` refusing an address its peers cannot dial."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any

import pytest

from grstats.agent.advertise import AdvertiseProblem, advertise_problem, check_advertise
from grstats.agent.config import AgentConfig
from grstats.agent.sources import SimulatedSourceConfig
from grstats.cli.demo import free_ports

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

PYTHON = [sys.executable, "-m", "grstats"]
#: A name that never resolves (RFC 6761 reserves the .invalid top-level domain).
NOWHERE = "db1.grstats-test.invalid"
#: IPv4's unspecified address, which a name may resolve to.
ANY = "0.0.0.0"  # noqa: S104  (an address resolved to, not one bound)


def agent(**changes: Any) -> AgentConfig:
    """A valid simulated agent config with ``changes``."""
    section = SimulatedSourceConfig(member_index=0, group_start_s=0)
    return AgentConfig(**{"source": "simulated", "simulated": section, **changes})


def resolving(table: dict[str, Sequence[str]]) -> Any:
    """A resolver like socket.getaddrinfo that knows the names of ``table`` and no other."""

    def resolve(host: str, port: int | None, /) -> list[tuple[Any, Any, Any, Any, tuple[Any, ...]]]:
        del port
        if host not in table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, 0)) for address in table[host]
        ]

    return resolve


class TestAdvertiseProblem:
    def test_a_name_that_resolves_only_to_unspecified_addresses(self) -> None:
        """A name whose addresses are all 0.0.0.0 or :: is refused, naming advertise and them."""
        resolve = resolving({"any.example": [ANY, "::"]})
        problem = advertise_problem(agent(advertise="any.example:7400"), resolve)
        assert problem is not None
        assert problem.startswith("advertise: 'any.example:7400' names a host that resolves only")
        assert ANY in problem
        assert "set advertise to an address of this host" in problem

    def test_a_name_with_one_dialable_address_passes(self) -> None:
        """A name that also resolves to a real address is fine."""
        resolve = resolving({"db1.example": [ANY, "10.0.0.5"]})
        assert advertise_problem(agent(advertise="db1.example:7400"), resolve) is None

    def test_a_name_that_does_not_resolve(self) -> None:
        """A name the real resolver does not know is refused, with the resolver's reason."""
        problem = advertise_problem(agent(advertise=f"{NOWHERE}:7400"))
        assert problem is not None
        assert problem.startswith(
            f"advertise: '{NOWHERE}:7400' names a host that does not resolve ("
        )
        assert problem.endswith(
            "set advertise to an address of this host that the other agents can dial"
        )

    def test_a_name_service_that_does_not_answer_is_temporary(self) -> None:
        """EAI_AGAIN may pass (the agent exits 1, to be started again); an unknown name may not."""

        def failing(host: str, port: int | None, /) -> list[Any]:
            raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")

        config = agent(advertise="db1.example:7400")
        assert check_advertise(config, failing) == AdvertiseProblem(
            "advertise: 'db1.example:7400' names a host that could not be resolved now "
            "(Temporary failure in name resolution); check the name service, or set advertise "
            "to an address of this host that the other agents can dial",
            temporary=True,
        )
        unknown = check_advertise(config, resolving({}))
        assert unknown is not None
        assert not unknown.temporary
        assert unknown.message == advertise_problem(config, resolving({}))

    def test_listen_is_named_when_advertise_is_not_set(self) -> None:
        """Without advertise, the message says that peers dial listen, and its value."""
        problem = advertise_problem(agent(listen="127.0.0.1:7400", peers=("10.0.0.6:7400",)))
        assert problem is not None
        assert problem.startswith(
            "advertise: not set, so peers dial listen '127.0.0.1:7400', which"
        )

    @pytest.mark.parametrize(
        "address", ["127.0.0.1:7400", "127.0.0.2:7400", "localhost:7400", "[::1]:7400"]
    )
    def test_loopback_with_a_peer_on_another_host(self, address: str) -> None:
        """A loopback address while some peer is not loopback: that peer cannot dial it."""
        resolve = resolving({"db2.example": ["10.0.0.6"]})
        config = agent(advertise=address, peers=("127.0.0.1:7401", "db2.example:7400"))
        problem = advertise_problem(config, resolve)
        assert problem is not None
        assert problem.startswith(
            f"advertise: '{address}' is a loopback address: peers on other hosts"
        )
        assert "('db2.example:7400')" in problem
        assert "127.0.0.1:7401" not in problem

    def test_loopback_with_loopback_peers(self) -> None:
        """All peers on this host (addresses, localhost, names of loopback): loopback is fine."""
        resolve = resolving({"here.example": ["127.0.0.1", "::1"]})
        peers = ("127.0.0.1:7401", "localhost:7402", "[::1]:7403", "here.example:7404")
        assert advertise_problem(agent(peers=peers), resolve) is None
        assert advertise_problem(agent(), resolve) is None  # no peers: discovery only

    def test_a_peer_that_does_not_resolve_is_not_the_advertised_address_fault(self) -> None:
        """An unknown peer name does not make a loopback advertise wrong (the peer is)."""
        config = agent(peers=(f"{NOWHERE}:7401",))
        assert advertise_problem(config, resolving({})) is None

    def test_a_name_resolving_here_to_loopback_passes(self) -> None:
        """The peers resolve the name themselves (Debian maps the own name to 127.0.1.1)."""
        resolve = resolving({"db1": ["127.0.1.1"], "db2": ["10.0.0.6"]})
        assert advertise_problem(agent(advertise="db1:7400", peers=("db2:7400",)), resolve) is None

    def test_port_zero_of_listen_passes(self) -> None:
        """Tests listen on port 0 with no advertise: the port is the one bound, not a fault."""
        assert advertise_problem(agent(listen="127.0.0.1:0")) is None


def start(tmp_path: Path, *flags: str) -> subprocess.Popen[str]:
    """A ``grstats agent`` process of a one-member simulated group with ``flags``.

    Its standard error goes to ``tmp_path``/agent.log (a pipe nobody reads could fill up).
    """
    with (tmp_path / "agent.log").open("w", encoding="utf-8") as log:  # the child has its copy
        return subprocess.Popen(
            [*PYTHON, "agent", "--source", "simulated", "--members", "1", "--member-index", "0",
             "--group-start", str(int(time.time())), "--state-dir", str(tmp_path / "state"),
             "--log-format", "json", *flags],
            stdout=subprocess.DEVNULL,
            stderr=log,
            text=True,
        )  # fmt: skip


class TestAgentStart:
    @pytest.mark.parametrize(
        ("flags", "message"),
        [
            pytest.param(("--listen", "0.0.0.0:7400"), "advertise: not set, so peers dial listen '0.0.0.0:7400', which is an unspecified address", id="unspecified"),
            pytest.param(("--advertise", f"{NOWHERE}:7400"), f"advertise: '{NOWHERE}:7400' names a host that does not resolve", id="unresolvable"),
            pytest.param(("--listen", "127.0.0.1:7400", "--peers", "10.0.0.6:7400"), "advertise: not set, so peers dial listen '127.0.0.1:7400', which is a loopback address: peers on other hosts ('10.0.0.6:7400') cannot dial 127.0.0.1", id="loopback"),
        ],
    )  # fmt: skip
    def test_refused_with_exit_2(
        self, tmp_path: Path, flags: tuple[str, ...], message: str
    ) -> None:
        """The agent does not start: one line naming advertise, its value and the fix; exit 2."""
        process = start(tmp_path, *flags)
        assert process.wait(timeout=60) == 2
        err = (tmp_path / "agent.log").read_text(encoding="utf-8")
        assert err.startswith(f"grstats: error: {message}")
        assert "set advertise to an address of this host" in err
        assert not (tmp_path / "state").exists()  # refused before anything is written

    def test_a_good_setting_starts(self, tmp_path: Path) -> None:
        """An agent advertising localhost to peers on this host starts and answers."""
        port, peer = free_ports(2)
        process = start(
            tmp_path,
            *("--listen", f"127.0.0.1:{port}", "--advertise", f"localhost:{port}"),
            *("--peers", f"127.0.0.1:{peer}"),
        )
        try:
            deadline = time.monotonic() + 30
            answered = False
            while not answered and time.monotonic() < deadline and process.poll() is None:
                query = [
                    *PYTHON,
                    "query",
                    "members",
                    "--node",
                    f"127.0.0.1:{port}",
                    "--timeout",
                    "2",
                ]
                done = subprocess.run(
                    query, capture_output=True, text=True, timeout=60, check=False
                )
                answered = done.returncode == 0
                time.sleep(0.2)
            assert answered, (tmp_path / "agent.log").read_text(encoding="utf-8")
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)
        assert process.returncode == 0
