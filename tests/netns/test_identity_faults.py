"""Faults of identity and of clients between test hosts: a stolen certificate, TLS mistakes, SQL.

The agents run on the hosts of :mod:`tests.netns.hosts` (period 1 s) with certificates made by
``deploy/tls/make-certs.sh`` naming each host's address, so each agent dials its peers across
the bridge as it would in production; what an agent serves is read by a probe inside a host.
The same faults over 127.0.0.1 in one process are tests/agent/test_stolen_certificate.py,
tests/agent/test_tls_mismatch.py and tests/agent/sql/test_timeouts.py.
"""

from __future__ import annotations

import contextlib
import json
import select
import subprocess
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from grstats.agent.sim.group import member_uuid
from tests.certs import expired_copy, make_certs
from tests.netns.hosts import IP, REPO, SQL_PORT, Group, Host, Network, network
from tests.netns.test_faults import CONFIG, HEAL_S
from tests.waiting import wait_until

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path

#: The members of the simulated group (``steady``, seed 1), as the agents read them.
UUIDS = [member_uuid("steady", 1, index) for index in range(4)]
#: A COUNT_TRANSACTIONS_CHECKED no simulated member reaches: the forged value.
CHECKED = 987_654_321
#: Every agent exchanges with all its peers each period, so each dials the forger each period.
FANOUT_CONFIG = CONFIG + "pull_fanout = 3\n"
#: When the expired certificate expired (a whole second, as X.509 times are).


# -- certificates ---------------------------------------------------------------------------


def group_certs(directory: Path, net: Network, names: Mapping[int, tuple[int, ...]]) -> Path:
    """make-certs.sh for members ``names`` (index -> the hosts whose addresses its SANs list)."""
    members = [
        f"m{index}={UUIDS[index]}@" + ",".join(net.hosts[h].address for h in hosts)
        for index, hosts in names.items()
    ]
    return make_certs(directory, *members)


def tls_section(certs: Path, name: str, cert: Path | None = None) -> str:
    """The agent's ``[tls]`` with member ``name``'s key and certificate (or ``cert``): mutual TLS."""
    return (
        "[tls]\n"
        f'cert_file = "{cert or certs / f"{name}.pem"}"\n'
        f'key_file = "{certs / f"{name}.key"}"\n'
        f'ca_file = "{certs / "ca.pem"}"\n'
        "require_client_cert = true\n"
    )


def stats(net: Network, viewer: Host, certs: Path) -> dict[str, dict[str, Any]]:
    """replication_group_member_stats --extended as ``viewer``'s agent serves it, over TLS."""
    answer = net.grstats(
        viewer,
        *("query", "stats", "--node", viewer.agent, "--format", "json", "--extended"),
        *("--timeout", "1", "--tls-ca", str(certs / "ca.pem")),
        *("--tls-cert", str(certs / "client.pem"), "--tls-key", str(certs / "client.key")),
    )
    if answer["rc"] != 0:
        return {}
    return {row["MEMBER_ID"]: row for row in json.loads(answer["out"])["rows"]}


# -- the forger -----------------------------------------------------------------------------


class ForgerProcess:
    """:mod:`tests.netns.forger` on a host, serving on the host's agent address."""

    def __init__(self, net: Network, host: Host, certs: Path, victim: Host) -> None:
        """Start it with member 0's stolen certificate, forging the counts of ``victim``'s member."""
        self.log = net.workdir / f"forger-{host.index}.log"
        argv = [
            *(IP, "netns", "exec", host.namespace, sys.executable, "-m", "tests.netns.forger"),
            *("--listen", host.agent, "--certs", str(certs), "--name", "m0"),
            *("--member", UUIDS[0], "--victim", UUIDS[victim.index]),
            *("--learn-from", victim.agent, "--checked", str(CHECKED)),
        ]
        with self.log.open("ab") as sink:
            self.process = subprocess.Popen(
                argv,
                cwd=REPO,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=sink,
                text=True,
            )
        ready = self._line(20)
        assert "ready" in ready, ready

    def _line(self, timeout_s: float) -> dict[str, Any]:
        """Its next line of output (fails with its log when it has none within ``timeout_s``)."""
        stdout = self.process.stdout
        assert stdout is not None
        readable, _, _ = select.select([stdout], [], [], timeout_s)
        line = stdout.readline() if readable else ""
        if not line:
            raise AssertionError(f"the forger said nothing: {self.log.read_text()[-2000:]}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def command(self, command: dict[str, Any]) -> int:
        """Send one command; how many Exchanges it has answered with a forgery."""
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(json.dumps(command) + "\n")
        stdin.flush()
        forgeries: int = self._line(5)["forgeries"]
        return forgeries

    def close(self) -> None:
        """Close its stdin (it stops serving) and wait for it."""
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


Sample = tuple[int, object, object]  # (viewer's index, COUNT_TRANSACTIONS_CHECKED, SOURCE)


def victim_rows(net: Network, viewers: tuple[Host, ...], certs: Path, victim: str) -> list[Sample]:
    """The victim's counts and SOURCE at each viewer (None, None: not served, or no answer)."""
    samples: list[Sample] = []
    for viewer in viewers:
        row = stats(net, viewer, certs).get(victim, {})
        samples.append((viewer.index, row.get("COUNT_TRANSACTIONS_CHECKED"), row.get("SOURCE")))
    return samples


def watch(
    sample: Callable[[], list[Sample]], seconds: float, ok: Callable[[Sample], bool], what: str
) -> list[Sample]:
    """Sample for ``seconds`` (every 0.2 s); fail naming ``what`` at the first sample not ``ok``.

    A viewer that did not answer within the query's timeout (a busy machine) gives no sample;
    most must answer.
    """
    taken: list[Sample] = []
    asked = 0
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        now = sample()
        asked += len(now)
        answered = [one for one in now if one[2] is not None]
        taken += answered
        bad = [one for one in answered if not ok(one)]
        assert not bad, f"{what}: {bad} (all samples: {taken[-12:]})"
        time.sleep(0.2)  # the pace of the samples: what holds for ``seconds`` is under test
    assert len(taken) * 2 >= asked, f"{what}: {asked - len(taken)} of {asked} samples unanswered"
    return taken


def when(
    sample: Callable[[], list[Sample]], ok: Callable[[Sample], bool]
) -> Callable[[], Sample | None]:
    """A condition for wait_until: the one viewer's sample when it is ``ok``, else None."""

    def condition() -> Sample | None:
        (one,) = sample()
        return one if ok(one) else None

    return condition


def test_a_stolen_certificate_across_hosts(faketime: str, tmp_path: Path) -> None:
    """A forger on a 4th host with member 0's certificate never gets member 2's forged counts served while member 2's agent is heard; cut off from it, relays are bounded and its own agent wins when back."""
    # grstats' own rule (agent/gossip/relays.py, RelayRule): MySQL has no relays, GR's members
    # hear each other's stats directly (Pipeline_stats_member_message, pipeline_stats.cc).
    with network(4, tmp_path, faketime) as net:
        h0, h1, h2, h3 = net.hosts
        # Member 0's certificate also names host 3's address: where its thief answers.
        certs = group_certs(tmp_path / "tls", net, {0: (0, 3), 1: (1,), 2: (2,)})
        group = Group(3, int(time.time()) - 5)
        for host in (h0, h1, h2):
            config = FANOUT_CONFIG + tls_section(certs, f"m{host.index}")
            net.start_agent(host, group, config=config)
        victim = UUIDS[2]

        def rows(*viewers: Host) -> Callable[[], list[Sample]]:
            return lambda: victim_rows(net, viewers, certs, victim)

        def direct(sample: Sample) -> bool:
            return sample[1] not in {None, CHECKED} and sample[2] == h2.agent

        wait_until(
            lambda: all(direct(s) for s in rows(h0, h1)()), 15, "agents 0 and 1 hear member 2"
        )
        forger = ForgerProcess(net, h3, certs, h2)
        try:
            # 1. Member 2 heard directly: its forged counts, stamped just above its latest
            # version and rising, are refused.
            forger.command({"step": 1})
            watch(rows(h0, h1), 4, direct, "member 2 heard directly: its own counts served")
            answered = forger.command({"step": 1000})
            # At least a few (about one a period; 5 on a loaded CI machine): what was refused.
            assert answered >= 3, f"the forger answered {answered} Exchanges with forgeries in 4 s"

            # 2. Cut off from member 2, agent 1 takes its counts as relays, within the bound:
            # agent 0's real ones, not the forger's that run away by 1000 versions an answer.
            with net.cut(h1, h2):
                relayed = wait_until(
                    when(rows(h1), lambda s: s[2] == h0.agent),
                    2 * 1 + 4,  # 2 periods of silence, then a relay
                    "agent 1 serves member 2's counts relayed by agent 0",
                )
                assert relayed is not None
                assert relayed[1] != CHECKED, relayed
                watch(
                    rows(h0, h1),
                    2,
                    lambda s: s[1] != CHECKED and s[2] in {h0.agent, h2.agent},
                    "runaway stamps refused: agent 1 serves agent 0's relay, agent 0 its own",
                )
                # Just above member 2's latest, within the bound: taken. What a stolen
                # certificate can still do for a member its own agent cannot reach (README).
                forger.command({"step": 1})
                wait_until(
                    when(rows(h1), lambda s: s[1:] == (CHECKED, h3.agent)),
                    5,
                    "agent 1 takes the forger's counts within the bound",
                )
                assert rows(h0)()[0][1] != CHECKED
            # 3. Member 2 heard again: its own counts replace the forged ones, and stay.
            wait_until(
                lambda: all(direct(s) for s in rows(h1)()),
                HEAL_S,
                "agent 1 hears member 2 again",
            )
            watch(rows(h0, h1), 2, direct, "member 2 heard again: the forger keeps raising")
            assert forger.command({"answers": None}) > answered
        finally:
            forger.close()


# -- TLS mistakes ---------------------------------------------------------------------------

#: The four agents of the TLS mistakes: what each is, by host.
RIGHT, PLAIN, OTHER_CA, EXPIRED = range(4)
NOT_OUR_CA = (
    "peer's certificate is not signed by our CA "
    "(certificate verify failed: unable to get local issuer certificate)"
)
EXPIRY = "2026-01-02 03:04:05 UTC"


def expected_reason(viewer: int, peer: int) -> str:
    """What ``viewer``'s agent says of ``peer``'s, as ``mismatch_reason`` words it.

    agent/tls_handshake.py's classification, as ``grstats doctor`` finds it.
    """
    if viewer == PLAIN:
        return "peer speaks TLS and this agent has no [tls] section"
    if peer == PLAIN:
        return "peer speaks plaintext"
    if OTHER_CA in {viewer, peer}:
        return NOT_OUR_CA
    if peer == EXPIRED:
        return f"peer's certificate expired at {EXPIRY}"
    return f"peer refused our certificate, which expired at {EXPIRY}"


def said(net: Network) -> dict[tuple[int, int], list[str]]:
    """Each (viewer, peer)'s warned reasons, from every agent's log."""
    by_address = {host.agent: host.index for host in net.hosts}
    reasons: dict[tuple[int, int], list[str]] = {}
    for agent in net.agents:
        for entry in agent.events("tls_mismatch"):
            assert entry["level"] == "warning", entry
            key = (agent.host.index, by_address[entry["peer"]])
            reasons.setdefault(key, []).append(entry["reason"])
    return reasons


def test_tls_mistakes_across_hosts(faketime: str, tmp_path: Path) -> None:
    """A plaintext agent, one of another CA and one with an expired certificate: each pair's two agents each warn once, naming the mistake from their side."""
    # agent/tls_watch.py's TlsWatch (once per peer and reason) over tls_handshake.py's
    # diagnose and mismatch_reason: OpenSSL's verify errors (X509_V_ERR_UNABLE_TO_GET_ISSUER_
    # CERT_LOCALLY, X509_V_ERR_CERT_HAS_EXPIRED), the alert "certificate expired" of the peer.
    with network(4, tmp_path, faketime) as net:
        everyone = {index: (index,) for index in range(4)}
        ours = group_certs(tmp_path / "ca-a", net, everyone)
        theirs = group_certs(tmp_path / "ca-b", net, everyone)
        sections = {
            RIGHT: tls_section(ours, "m0"),
            PLAIN: "",
            OTHER_CA: tls_section(theirs, "m2"),
            EXPIRED: tls_section(ours, "m3", expired_copy(ours, "m3")),
        }
        group = Group(4, int(time.time()) - 5)
        for host in net.hosts:
            net.start_agent(host, group, config=CONFIG + sections[host.index])
        pairs = {(a, b) for a in range(4) for b in range(4) if a != b}
        wait_until(lambda: set(said(net)) >= pairs, 20, "every agent warns of every peer")
        time.sleep(3)  # 3 more periods of failed dials, under test: none warns again
        assert said(net) == {(a, b): [expected_reason(a, b)] for a, b in pairs}


# -- the SQL endpoint from other hosts ------------------------------------------------------

ER_NET_READ_INTERRUPTED = 1159  # include/mysqld_error.h
ER_ACCESS_DENIED_ERROR = 1045


def login(net: Network, client: Host, server: Host, user: str, password: str) -> tuple[int, float]:
    """One login and statement from ``client`` to ``server``'s SQL endpoint: (error code or 0, s)."""
    request = {
        "host": server.address,
        "port": SQL_PORT,
        "user": user,
        "password": password,
        "statement": "SELECT COUNT(*) FROM performance_schema.replication_group_members",
    }
    answer = net.probe(client).ask({"sql": request})
    code = int(answer["error"][0]) if "error" in answer else 0
    return code, float(answer["seconds"])


def test_the_sql_endpoint_from_other_hosts(faketime: str, tmp_path: Path) -> None:
    """Silent clients on another host are closed after connect_timeout while a client of a third is served; failed logins delay their account only."""
    # MySQL: login_connection (sql/sql_connect.cc) reads the login with connect_timeout, and
    # net_read_raw_loop (sql-common/net_serv.cc) makes the timeout error 1159; connection_
    # control keys failures by 'user'@'host', the client's host or IP for a refused login
    # (plugin/connection_control/connection_delay.cc, make_hash_key), and waits
    # (count + 1 - threshold) s past the threshold (get_wait_time).
    with network(3, tmp_path, faketime) as net:
        server, near, far = net.hosts
        users = tmp_path / "sql-users"
        users.write_text("alice:secret\nbob:hunter2\n", encoding="utf-8")
        users.chmod(0o600)
        config = (
            CONFIG
            + f'sql_listen = "{server.address}:{SQL_PORT}"\nsql_password_file = "{users}"\n'
            + "[limits]\nsql_connect_timeout_s = 0.5\nsql_failed_connections_threshold = 2\n"
        )
        net.start_agent(server, Group(3, int(time.time()) - 5), config=config)
        wait_until(
            lambda: login(net, far, server, "alice", "secret")[0] == 0,
            15,
            "the SQL endpoint answers a client on another host",
        )

        silent: list[dict[str, Any]] = []
        request = {"host": server.address, "port": SQL_PORT, "count": 10}
        client = threading.Thread(
            target=lambda: silent.append(net.probe(near).ask({"silent": request})), daemon=True
        )
        client.start()
        served = [login(net, far, server, "alice", "secret") for _ in range(3)]
        client.join(timeout=15)
        assert silent, "the silent clients' probe did not answer"
        farewells = silent[0].get("farewells")
        assert farewells, silent[0]
        assert {(seq, code, text, closed) for seq, code, text, _, closed in farewells} == {
            (1, ER_NET_READ_INTERRUPTED, "Got timeout reading communication packets", True)
        }, farewells
        assert all(0.3 <= after < 2.0 for *_, after, _ in farewells), farewells
        assert all(code == 0 and seconds < 0.9 for code, seconds in served), served

        bob = [login(net, near, server, "bob", "wrong") for _ in range(3)]
        others = {
            "alice from bob's host": login(net, near, server, "alice", "secret"),
            "alice from another host": login(net, far, server, "alice", "secret"),
            "bob from another host": login(net, far, server, "bob", "hunter2"),
        }
        assert [code for code, _ in bob] == [ER_ACCESS_DENIED_ERROR] * 3, bob
        assert [seconds < 0.9 for _, seconds in bob] == [True, True, False], bob
        assert 1.0 <= bob[2][1] < 2.5, bob  # past 2 failures: 1 s
        assert all(code == 0 and s < 0.9 for code, s in others.values()), others
