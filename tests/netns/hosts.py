"""Test hosts on a private network: one network namespace each, joined by a bridge.

:func:`network` makes N hosts for one test and removes them afterwards, failure or not::

    with network(3, workdir, require_tools()) as net:
        agents = [net.start_agent(host, group, config="period_s = 1\n") for host in net.hosts]
        with net.partition(net.hosts[2]):
            rows = net.table(net.hosts[0], "members")  # as host 0's agent serves them

Layout: namespace ``<prefix>-br`` holds a bridge ``br0``; host i is namespace
``<prefix>-h<i>`` with a veth ``eth0`` (address ``10.213.0.<i+1>/24``) whose peer ``h<i>``
is a port of the bridge, and its own loopback up. Every link is created inside the namespaces
(``ip -n``): the root namespace gets no interface, address or route. The prefix is
``grstest-<pid>-<n>``, unique per test run and per network; :func:`sweep_leftovers` deletes the
namespaces of runs whose pytest process is gone (a killed run cannot clean up after itself).

Faults are iptables rules inside the hosts' namespaces, each a context manager that removes
its rules on exit: :meth:`Network.partition` (a host hears and reaches nobody),
:meth:`Network.one_way` (packets from one host to another are dropped, the reverse passes) and
:meth:`Network.cut` (the link between two hosts is gone both ways; a third host can still
relay). There is no latency or loss: this kernel has no ``sch_netem``.

Agents run as ``python -m grstats agent`` under ``ip netns exec``; a skewed clock is
libfaketime (Debian's ``libfaketime``) preloaded with ``FAKETIME`` set to the offset, the
monotonic clock left true (a stepped wall clock does not move it). Tables are read with
``grstats query`` by a probe process (:mod:`tests.netns.probe`) inside a host's namespace.
Teardown stops every process of the network (the ones started here, then anything still in
the namespaces, by ``ip netns pids``) and deletes every namespace.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from tests.mariadb import missing
from tests.programs import require

if TYPE_CHECKING:
    from collections.abc import Iterator

#: The checkout: probes import ``tests.netns.probe`` from here.
REPO = Path(__file__).resolve().parents[2]
#: Every namespace of these tests starts with this, then the pytest pid.
FAMILY = "grstest-"
#: The gossip port of every agent (each host has its own address).
AGENT_PORT = 7400
#: The SQL endpoint's port, on each host's loopback.
SQL_PORT = 7406
#: Where Debian's libfaketime lives (multiarch directory), the thread-safe build.
FAKETIME_GLOB = "/usr/lib/*/faketime/libfaketimeMT.so.1"
STOP_TIMEOUT_S = 5.0
#: How long teardown lets the agents stop cleanly before it kills them.
TEARDOWN_GRACE_S = 1.0
#: iproute2's command; ``require_tools`` checks it is there.
IP = "ip"

_networks = itertools.count()


def require_tools() -> str:
    """Fail under CI, else skip, unless root with ip and iptables; return libfaketime's path."""
    if os.geteuid() != 0:
        missing("network namespace tests need root (ip netns, iptables); CI runs as root")
    require("ip", "iproute2")
    require("iptables", "iptables")
    found = sorted(Path("/").glob(FAKETIME_GLOB.lstrip("/")))
    if not found:
        missing("libfaketime is not installed: install the Debian package libfaketime")
    return str(found[0])


def _run(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run one command (ip, iptables) and fail with its stderr."""
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {done.returncode}: {done.stderr.strip()}")
    return done


def _namespaces() -> list[str]:
    """The names of every network namespace."""
    listing = _run("ip", "netns", "list").stdout
    return [line.split()[0] for line in listing.splitlines() if line.strip()]


def _kill_namespace(name: str) -> None:
    """SIGKILL whatever still runs in namespace ``name``, then delete it."""
    pids = _run("ip", "netns", "pids", name, check=False).stdout.split()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGKILL)
    _run("ip", "netns", "delete", name, check=False)


def sweep_leftovers(prefix: str = FAMILY) -> list[str]:
    """Delete the namespaces of earlier runs whose pytest process is gone; return their names."""
    swept = []
    for name in _namespaces():
        match = re.fullmatch(re.escape(prefix) + r"(\d+)-.*", name)
        if match is None:
            continue
        pid = int(match.group(1))
        if pid == os.getpid() or _alive(pid):
            continue
        _kill_namespace(name)
        swept.append(name)
    return swept


def sweep_own(prefix: str) -> list[str]:
    """Delete every namespace whose name starts with ``prefix`` (this run's)."""
    names = [name for name in _namespaces() if name.startswith(prefix)]
    for name in names:
        _kill_namespace(name)
    return names


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass(frozen=True)
class Host:
    """One test host: a namespace with one address on the bridge."""

    index: int
    namespace: str
    address: str

    @property
    def agent(self) -> str:
        """The address of this host's agent, ``ip:port``."""
        return f"{self.address}:{AGENT_PORT}"


@dataclass
class Group:
    """A simulated group: what every member's agent must be started with."""

    size: int
    start_s: int
    scenario: Path | str = "steady"
    seed: int = 1


@dataclass
class Agent:
    """One agent process on one host."""

    host: Host
    member: int
    process: subprocess.Popen[bytes]
    log: Path

    def pause(self) -> None:
        """SIGSTOP: the agent stalls, its sockets stay open."""
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT."""
        self.process.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        """SIGTERM (SIGCONT first, should it be stopped), then SIGKILL if it lingers."""
        if self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGCONT)
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def events(self, event: str) -> list[dict[str, Any]]:
        """The lines of the agent's JSON log whose event is ``event`` (others, gRPC's, skipped)."""
        found = []
        for line in self.log.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                entry = json.loads(line)
                if isinstance(entry, dict) and entry.get("event") == event:
                    found.append(entry)
        return found

    def log_tail(self, lines: int = 15) -> str:
        """The last lines of the agent's log, for a failure message."""
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


class Probe:
    """The probe process of one host: asks its host's view of the network."""

    def __init__(self, host: Host) -> None:
        """Start ``python -m tests.netns.probe`` inside the host's namespace."""
        self.host = host
        self._lock = threading.Lock()
        self.process = subprocess.Popen(
            [IP, "netns", "exec", host.namespace, sys.executable, "-m", "tests.netns.probe"],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        """Send one request and wait for its answer."""
        with self._lock:
            stdin, stdout = self.process.stdin, self.process.stdout
            assert stdin is not None
            assert stdout is not None
            stdin.write(json.dumps(request) + "\n")
            stdin.flush()
            line = stdout.readline()
        if not line:
            raise RuntimeError(f"the probe on {self.host.namespace} exited")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        """Close its stdin and wait for it to end."""
        stream: IO[str] | None = self.process.stdin
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
        try:
            self.process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


@dataclass
class Network:
    """N hosts on one bridge, with the agents and probes started on them."""

    prefix: str
    workdir: Path
    faketime: str
    hosts: list[Host] = field(default_factory=list)
    agents: list[Agent] = field(default_factory=list)
    probes: dict[int, Probe] = field(default_factory=dict)
    subnet: str = "10.213.0"

    # -- building and tearing down -------------------------------------------------------

    @property
    def bridge(self) -> str:
        """The namespace that holds the bridge."""
        return f"{self.prefix}-br"

    def build(self, size: int) -> None:
        """Create the bridge namespace and ``size`` hosts."""
        _run("ip", "netns", "add", self.bridge)
        _run("ip", "-n", self.bridge, "link", "add", "br0", "type", "bridge")
        _run("ip", "-n", self.bridge, "link", "set", "br0", "up")
        for index in range(size):
            host = Host(index, f"{self.prefix}-h{index}", f"{self.subnet}.{index + 1}")
            _run("ip", "netns", "add", host.namespace)
            self.hosts.append(host)
            port = f"h{index}"
            _run(
                *("ip", "-n", host.namespace, "link", "add", "eth0", "type", "veth"),
                *("peer", "name", port, "netns", self.bridge),
            )
            _run("ip", "-n", self.bridge, "link", "set", port, "master", "br0", "up")
            _run("ip", "-n", host.namespace, "addr", "add", f"{host.address}/24", "dev", "eth0")
            _run("ip", "-n", host.namespace, "link", "set", "eth0", "up")
            _run("ip", "-n", host.namespace, "link", "set", "lo", "up")

    def teardown(self) -> None:
        """Stop every agent and probe, kill anything left in the namespaces, delete them."""
        # All at once: one by one, each agent's clean stop would add its own second or two.
        running = [agent.process for agent in self.agents if agent.process.poll() is None]
        for process in running:
            with contextlib.suppress(OSError):
                process.send_signal(signal.SIGCONT)
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + TEARDOWN_GRACE_S
        for process in running:
            try:
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for probe in self.probes.values():
            with contextlib.suppress(OSError):
                probe.close()
        sweep_own(self.prefix + "-")

    # -- faults -----------------------------------------------------------------------------

    def _iptables(self, host: Host, action: str, rule: tuple[str, ...]) -> None:
        """Add (``-A``) or delete (``-D``) one rule in the host's namespace."""
        _run("ip", "netns", "exec", host.namespace, "iptables", "-w", action, *rule)

    @contextlib.contextmanager
    def _rules(self, rules: list[tuple[Host, tuple[str, ...]]]) -> Iterator[None]:
        """Add the rules, yield, then delete them (also when the block fails)."""
        added: list[tuple[Host, tuple[str, ...]]] = []
        try:
            for host, rule in rules:
                self._iptables(host, "-A", rule)
                added.append((host, rule))
            yield
        finally:
            for host, rule in reversed(added):
                self._iptables(host, "-D", rule)

    def partition(self, host: Host) -> contextlib.AbstractContextManager[None]:
        """Cut ``host`` off: nothing in or out of its eth0 (its loopback still works)."""
        return self._rules(
            [
                (host, ("INPUT", "-i", "eth0", "-j", "DROP")),
                (host, ("OUTPUT", "-o", "eth0", "-j", "DROP")),
            ]
        )

    def one_way(self, source: Host, target: Host) -> contextlib.AbstractContextManager[None]:
        """Drop the packets ``source`` sends to ``target``; ``target``'s reach ``source``."""
        return self._rules([(target, ("INPUT", "-s", source.address, "-j", "DROP"))])

    def cut(self, a: Host, b: Host) -> contextlib.AbstractContextManager[None]:
        """Break the link between ``a`` and ``b`` both ways; other hosts still reach both."""
        return self._rules(
            [
                (a, ("INPUT", "-s", b.address, "-j", "DROP")),
                (b, ("INPUT", "-s", a.address, "-j", "DROP")),
            ]
        )

    # -- agents and queries -----------------------------------------------------------------

    def write_config(self, name: str, text: str) -> Path:
        """Write a file in the network's work directory and return its path."""
        path = self.workdir / name
        path.write_text(text)
        return path

    def start_agent(
        self,
        host: Host,
        group: Group,
        *,
        member: int | None = None,
        clock_offset_s: float = 0.0,
        config: str = "",
        extra: tuple[str, ...] = (),
        source: str = "simulated",
    ) -> Agent:
        """Start member ``member``'s (default: the host's index) agent on ``host``.

        ``config`` is TOML added to the agent's config file (period_s, silence_periods, ...);
        ``clock_offset_s`` runs the agent under libfaketime with its wall clock that far ahead
        (positive) or behind (negative). ``source`` other than ``simulated`` (``mysql``, whose
        section ``config`` then holds) drops the group's simulated flags.
        """
        member = host.index if member is None else member
        peers = ",".join(other.agent for other in self.hosts if other != host)
        path = self.write_config(
            f"agent-{host.index}-{len(self.agents)}.toml", f'source = "{source}"\n' + config
        )
        log = self.workdir / f"agent-{host.index}-{len(self.agents)}.log"
        env = dict(os.environ)
        if clock_offset_s:
            env |= {
                "LD_PRELOAD": self.faketime,
                "FAKETIME": f"{clock_offset_s:+g}s",
                "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            }
        simulated = (
            *("--scenario", str(group.scenario), "--members", str(group.size)),
            *("--member-index", str(member), "--seed", str(group.seed)),
            *("--group-start", str(group.start_s)),
        )
        argv = [
            *("ip", "netns", "exec", host.namespace, sys.executable, "-m", "grstats", "agent"),
            *("--config", str(path), "--listen", host.agent, "--peers", peers),
            *("--state-dir", str(self.workdir / f"state-{host.index}")),
            *(simulated if source == "simulated" else ()),
            *("--log-format", "json"),
            *extra,
        ]
        with log.open("ab") as sink:
            process = subprocess.Popen(
                argv, cwd=self.workdir, env=env, stdout=sink, stderr=subprocess.STDOUT
            )
        agent = Agent(host, member, process, log)
        self.agents.append(agent)
        return agent

    def probe(self, host: Host) -> Probe:
        """The probe process inside ``host``'s namespace (started on first use)."""
        if host.index not in self.probes:
            self.probes[host.index] = Probe(host)
        return self.probes[host.index]

    def grstats(self, host: Host, *argv: str) -> dict[str, Any]:
        """Run ``grstats ARGV`` on ``host``: ``{"rc", "out", "err"}``."""
        return self.probe(host).ask({"grstats": list(argv)})

    def table(
        self, host: Host, what: str, *, node: Host | None = None
    ) -> dict[str, dict[str, Any]]:
        """``grstats query WHAT --extended`` of ``node``'s agent (default: ``host``'s), by MEMBER_ID.

        Empty when the agent does not answer.
        """
        node = host if node is None else node
        answer = self.grstats(
            host,
            "query",
            what,
            "--node",
            node.agent,
            "--format",
            "json",
            "--extended",
            "--timeout",
            "1",
        )
        if answer["rc"] != 0:
            return {}
        rows = json.loads(answer["out"])["rows"]
        return {row["MEMBER_ID"]: row for row in rows}

    def status(self, host: Host) -> dict[str, Any]:
        """``grstats query status --format json`` of ``host``'s agent ({} when it does not answer)."""
        answer = self.grstats(
            host, "query", "status", "--node", host.agent, "--format", "json", "--timeout", "1"
        )
        if answer["rc"] != 0:
            return {}
        document: dict[str, Any] = json.loads(answer["out"])
        return document

    def sql(
        self, host: Host, statement: str, *, user: str = "root", password: str = ""
    ) -> dict[str, Any]:
        """Run one statement against ``host``'s SQL endpoint (127.0.0.1 inside the host)."""
        request = {
            "host": "127.0.0.1",
            "port": SQL_PORT,
            "user": user,
            "password": password,
            "statement": statement,
        }
        return self.probe(host).ask({"sql": request})


@contextlib.contextmanager
def network(size: int, workdir: Path, faketime: str) -> Iterator[Network]:
    """``size`` hosts on a fresh bridge; every process and namespace is gone afterwards."""
    prefix = f"{FAMILY}{os.getpid()}-{next(_networks)}"
    net = Network(prefix, workdir, faketime)
    try:
        net.build(size)
        yield net
    finally:
        net.teardown()
