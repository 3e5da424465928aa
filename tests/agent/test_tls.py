"""TLS, mutual TLS with member identities, and the token, on real agents over real gRPC.

The certificates are made by ``deploy/tls/make-certs.sh`` (openssl) in a temporary directory,
for the members of the simulated group the agents read.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import shutil
import signal
import subprocess
import time
from typing import TYPE_CHECKING

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from structlog.testing import capture_logs

from grstats.agent.config import load_config
from grstats.agent.convert import update_to_wire, uuid_to_bytes
from grstats.agent.gossip import Counts, Key, Stamp
from grstats.agent.identity import certified_members, member_uri, refusal
from grstats.agent.runtime import Agent
from grstats.agent.sim.group import member_uuid
from grstats.agent.sim.scenario import load_scenario
from grstats.agent.sources.simulated import SimulatedSource
from grstats.agent.transports import FaultyTransport, GrpcTransport
from grstats.cli import build_parser, main
from grstats.cli.agent import config_from
from grstats.cli.demo import free_ports
from grstats.core.errors import ConfigError
from grstats.core.security import Security
from grstats.core.tls import CertificateFiles, TlsConfig
from grstats.proto import grstats_pb2 as pb
from grstats.proto import grstats_pb2_grpc as pb_grpc
from tests.agent.test_runtime import START_S, Clock, Group, settings, stats
from tests.certs import make_certs
from tests.cli.test_agent_processes import PYTHON, grstats
from tests.waiting import wait_until, wait_until_async

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from grstats.agent.gossip import Update

UUIDS = [member_uuid("steady", 1, index) for index in range(3)]
TOKEN = "s3cret-token-of-the-group-0123456789"  # noqa: S105  (a test's token)
CHECKED = 987_654_321  # a COUNT_TRANSACTIONS_CHECKED no simulated member reaches


@pytest.fixture(name="certs", scope="module")
def _certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    members = [f"m{index}={uuid}@127.0.0.1,localhost" for index, uuid in enumerate(UUIDS)]
    return make_certs(tmp_path_factory.mktemp("tls"), *members)


def tls(certs: Path, name: str | None, *, require: bool = True) -> TlsConfig:
    """The TLS files of certificate ``name`` (None: none, CA only) from ``certs``."""
    return TlsConfig(
        cert_file=certs / f"{name}.pem" if name else None,
        key_file=certs / f"{name}.key" if name else None,
        ca_file=certs / "ca.pem",
        require_client_cert=require,
    )


async def start_secure_group(securities: list[Security]) -> Group:
    """Start one agent per ``securities`` (the loop disabled: tests drive it with rounds)."""
    clock = Clock()
    size = load_scenario("steady").with_members(len(securities))
    agents, transports = [], []
    for index, security in enumerate(securities):
        transport = FaultyTransport(GrpcTransport(security=security))
        source = SimulatedSource(size, index, seed=1, group_start_s=START_S, clock=clock.s)
        agent = Agent(settings(), source, transport=transport, clock=clock.us, security=security)
        await agent.start()
        assert agent._task is not None
        agent._task.cancel()
        agents.append(agent)
        transports.append(transport)
    addresses = tuple(agent.address for agent in agents)
    for agent in agents:
        agent.config = dataclasses.replace(agent.config, peers=addresses)
    return Group(agents, list(transports), clock)


async def stop_all(group: Group) -> None:
    """Stop every agent of ``group``."""
    for agent in group.agents:
        await agent.stop(grace_s=0)


@pytest.fixture(name="mtls_group")
async def _mtls_group(certs: Path) -> AsyncIterator[Group]:
    group = await start_secure_group([Security(tls(certs, f"m{i}")) for i in range(3)])
    await group.rounds(2)
    yield group
    await stop_all(group)


@pytest.fixture(name="token_group")
async def _token_group() -> AsyncIterator[Group]:
    group = await start_secure_group([Security(token=TOKEN) for _ in range(3)])
    await group.rounds(2)
    yield group
    await stop_all(group)


async def read_tables(address: str, security: Security, token: str | None = None) -> int:
    """Ask ``address`` for its stats over ``security`` (``token`` overrides its token).

    Returns how many stats rows it answered; gRPC's error is raised as it comes.
    """
    metadata = security.metadata if token is None else (("authorization", f"Bearer {token}"),)
    async with security.channel(address) as channel:
        response = await pb_grpc.QueryStub(channel).Read(
            pb.QueryRequest(tables=["replication_group_member_stats"]),
            timeout=5,
            metadata=metadata,
        )
    return len(response.tables[0].rows)


def forged_counts(group: Group, member: int) -> Update:
    """``member``'s latest counts, newer and with COUNT_TRANSACTIONS_CHECKED = CHECKED."""
    agent = group.agents[member]
    assert agent.state is not None
    held = agent.state.value(agent.member_id, Key.COUNTS)
    assert held is not None
    update = held.update
    assert isinstance(update.value, Counts)
    row = dataclasses.replace(update.value.row, count_transactions_checked=CHECKED)
    stamp = Stamp(update.stamp.incarnation, update.stamp.version + 1000)
    return dataclasses.replace(update, stamp=stamp, value=Counts(row, gtids_present=False))


async def send(
    address: str, security: Security, sender_member: str, updates: list[Update], rpc: str
) -> None:
    """Send ``updates`` as ``sender_member`` to ``address`` on ``rpc`` (exchange or push)."""
    request = pb.ExchangeRequest(
        sender="127.0.0.1:1",
        sender_member=uuid_to_bytes(sender_member),
        updates=[update_to_wire(update) for update in updates],
    )
    async with security.channel(address) as channel:
        if rpc == "exchange":
            await pb_grpc.GossipStub(channel).Exchange(request, timeout=5)
        else:
            await pb_grpc.GossipStub(channel).Push(iter([request]), timeout=5)


class TestMutualTls:
    async def test_group_exchanges_normally(self, mtls_group: Group) -> None:
        """Three agents with mutual TLS exchange: every agent serves every member's row."""
        await mtls_group.rounds(2)
        for agent in mtls_group.agents:
            assert sorted(stats(agent)) == sorted(UUIDS)
            assert not agent.unreachable
            assert agent.state is not None
            for sender in mtls_group.agents:  # each holds every member's latest counts
                assert sender.state is not None
                latest = sender.state.value(sender.member_id, Key.COUNTS)
                held = agent.state.value(sender.member_id, Key.COUNTS)
                assert held is not None
                assert latest is not None
                assert held.update.stamp == latest.update.stamp
                assert isinstance(held.update.value, Counts)
                assert isinstance(latest.update.value, Counts)
                checked = held.update.value.row.count_transactions_checked
                assert checked == latest.update.value.row.count_transactions_checked

    @pytest.mark.parametrize("rpc", ["exchange", "push"])
    async def test_peer_speaking_for_another_member_is_denied(
        self, mtls_group: Group, certs: Path, rpc: str
    ) -> None:
        """A's certificate reporting for B gets PERMISSION_DENIED, logged; B's rows stay."""
        receiver = mtls_group.agents[2]
        before = stats(receiver)[UUIDS[1]]
        forged = forged_counts(mtls_group, 1)
        with capture_logs() as logs, pytest.raises(grpc.aio.AioRpcError) as raised:
            await send(receiver.address, Security(tls(certs, "m0")), UUIDS[1], [forged], rpc)
        assert raised.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert stats(receiver)[UUIDS[1]] == before
        refused = [log for log in logs if log["event"] == "peer_identity_refused"]
        assert refused, logs
        assert refused[0]["certified"] == [UUIDS[0]]
        assert refused[0]["sender_member"] == UUIDS[1]
        # The same message with B's own certificate is taken: the refusal was the identity.
        await send(receiver.address, Security(tls(certs, "m1")), UUIDS[1], [forged], rpc)
        assert stats(receiver)[UUIDS[1]]["COUNT_TRANSACTIONS_CHECKED"] == CHECKED

    async def test_own_sender_relaying_another_members_values_is_denied(
        self, mtls_group: Group, certs: Path
    ) -> None:
        """A peer naming itself as sender may still not push a third member's values."""
        receiver = mtls_group.agents[2]
        before = stats(receiver)[UUIDS[1]]
        forged = forged_counts(mtls_group, 1)
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await send(receiver.address, Security(tls(certs, "m0")), UUIDS[0], [forged], "push")
        assert raised.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert "of member " + UUIDS[1] in str(raised.value.details())
        assert stats(receiver)[UUIDS[1]] == before

    async def test_client_certificate_may_query_but_not_gossip(
        self, mtls_group: Group, certs: Path
    ) -> None:
        """The client certificate (no member in it) reads every row but cannot gossip."""
        client = Security(tls(certs, "client"))
        assert await read_tables(mtls_group.agents[0].address, client) == 3
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await send(mtls_group.agents[0].address, client, UUIDS[1], [], "exchange")
        assert raised.value.code() == grpc.StatusCode.PERMISSION_DENIED

    async def test_client_without_certificate_cannot_query(
        self, mtls_group: Group, certs: Path
    ) -> None:
        """With mutual TLS required, a client with only the CA, or plain gRPC, gets nothing."""
        address = mtls_group.agents[0].address
        for security in (Security(tls(certs, None, require=False)), Security()):
            with pytest.raises(grpc.aio.AioRpcError) as raised:
                await read_tables(address, security)
            assert raised.value.code() == grpc.StatusCode.UNAVAILABLE

    async def test_grstats_query_with_and_without_a_certificate(
        self, mtls_group: Group, certs: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The query command shows the rows with the client certificate and fails without it."""
        address = mtls_group.agents[1].address
        ca = ["--tls-ca", str(certs / "ca.pem")]
        mine = ["--tls-cert", str(certs / "client.pem"), "--tls-key", str(certs / "client.key")]
        query = ["query", "stats", "--node", address, "--format", "json", "--timeout", "3"]
        assert await _run_cli([*query, *ca, *mine]) == 0
        out = capsys.readouterr().out
        assert all(uuid in out for uuid in UUIDS)
        assert await _run_cli([*query, *ca]) == 1
        assert address in capsys.readouterr().err


async def _run_cli(argv: list[str]) -> int:
    """Run ``grstats argv`` in a thread (it runs its own event loop), as the shell would."""
    return await asyncio.to_thread(main, argv)


class TestServerTlsOnly:
    async def test_ca_only_client_queries_when_client_certs_are_not_required(
        self, certs: Path
    ) -> None:
        """Without require_client_cert, a client that checks the server's certificate reads."""
        group = await start_secure_group(
            [Security(tls(certs, f"m{i}", require=False)) for i in range(3)]
        )
        try:
            await group.rounds(2)
            client = Security(tls(certs, None, require=False))
            assert await read_tables(group.agents[0].address, client) == 3
            for agent in group.agents:
                assert sorted(stats(agent)) == sorted(UUIDS)
        finally:
            await stop_all(group)

    async def test_certificates_are_reloaded_without_a_restart(
        self, certs: Path, tmp_path: Path
    ) -> None:
        """New files under the agent's paths serve the next connection; no restart."""
        live = tmp_path / "live"
        live.mkdir()
        for name in ("m0.pem", "m0.key", "ca.pem"):
            shutil.copy(certs / name, live / name)
        renewed = make_certs(tmp_path / "renewed", f"m0={UUIDS[0]}@127.0.0.1")
        served = TlsConfig(
            cert_file=live / "m0.pem", key_file=live / "m0.key", ca_file=live / "ca.pem"
        )
        group = await start_secure_group([Security(served)])
        try:
            address = group.agents[0].address
            trusting_renewed = Security(tls(renewed, None, require=False))
            with pytest.raises(grpc.aio.AioRpcError):
                await read_tables(address, trusting_renewed)
            for name in ("m0.pem", "m0.key", "ca.pem"):
                shutil.copy(renewed / name, live / name)
            await group.rounds(1)
            # That round's read is the agent's first: it steps the simulated group through its
            # first 10 s, which on a loaded host can outlast the round's wait for it
            # (runtime.READ_WAIT_PERIODS) and end after the round. The member's row is what the
            # read below counts: wait for the read, not for more rounds.
            member = group.agents[0].member
            await wait_until_async(lambda: member.snapshot is not None, 10, "agent 0's first read")
            assert await read_tables(address, trusting_renewed) == 1
            with pytest.raises(grpc.aio.AioRpcError):
                await read_tables(address, Security(tls(certs, None, require=False)))
        finally:
            await stop_all(group)

    async def test_agent_dials_its_peers_with_renewed_files(
        self, certs: Path, tmp_path: Path
    ) -> None:
        """New files under a running agent's paths are what it presents to its peers next."""
        for name in ("m1.pem", "m1.key", "ca.pem"):
            shutil.copy(certs / name, tmp_path / name)
        group = await start_secure_group(
            [Security(tls(certs, "m0")), Security(tls(tmp_path, "m1"))]
        )
        first, second = group.agents
        try:
            await group.rounds(2)
            assert not second.unreachable
            # m2's certificate under m1's paths: m1's agent now speaks with m2's identity.
            shutil.copy(certs / "m2.pem", tmp_path / "m1.pem")
            shutil.copy(certs / "m2.key", tmp_path / "m1.key")
            with capture_logs() as logs:
                # The next period dials with them; the refusal of a push on the new stream
                # may reach the sender after its period ended (seen once under load): 3 at most.
                for _ in range(3):
                    group.clock.seconds += 1
                    for agent in group.agents:
                        await agent.run_period()
                    if first.address in second.unreachable:
                        break
            assert first.address in second.unreachable
            refused = [log for log in logs if log["event"] == "peer_identity_refused"]
            assert refused
            assert refused[0]["certified"] == [UUIDS[2]]
            # Its own certificate back: it is heard again, without a restart.
            shutil.copy(certs / "m1.pem", tmp_path / "m1.pem")
            shutil.copy(certs / "m1.key", tmp_path / "m1.key")
            await group.rounds(2)
            assert not second.unreachable
            assert first.state is not None
            assert second.state is not None
            held = first.state.value(second.member_id, Key.COUNTS)
            latest = second.state.value(second.member_id, Key.COUNTS)
            assert held is not None
            assert latest is not None
            assert held.update.stamp == latest.update.stamp
        finally:
            await stop_all(group)

    def test_fetch_returns_a_configuration_only_after_a_change(
        self, certs: Path, tmp_path: Path
    ) -> None:
        """The reload callback keeps the configuration until a file changes, then reads it."""
        for name in ("m1.pem", "m1.key", "ca.pem"):
            shutil.copy(certs / name, tmp_path / name)
        files = CertificateFiles(tls(tmp_path, "m1"))
        assert files.fetch() is None
        (tmp_path / "m1.pem").write_text("half-written", encoding="ascii")
        assert files.fetch() is None  # a broken file keeps the current configuration
        assert files.reloads == 0
        shutil.copy(certs / "m2.pem", tmp_path / "m1.pem")
        shutil.copy(certs / "m2.key", tmp_path / "m1.key")
        assert files.fetch() is not None
        assert files.reloads == 1
        assert files.fetch() is None


class TestToken:
    async def test_group_with_a_token_exchanges_normally(self, token_group: Group) -> None:
        """Agents given the same token exchange: every agent serves every member's row."""
        await token_group.rounds(1)
        for agent in token_group.agents:
            assert sorted(stats(agent)) == sorted(UUIDS)
            assert not agent.unreachable

    async def test_wrong_or_missing_token_is_unauthenticated(self, token_group: Group) -> None:
        """A wrong or missing token gets UNAUTHENTICATED, logged without the token."""
        address = token_group.agents[0].address
        wrong = "wrong-token-of-another-group-000"
        with capture_logs() as logs:
            for security, token in ((Security(token=TOKEN), wrong), (Security(), None)):
                with pytest.raises(grpc.aio.AioRpcError) as raised:
                    await read_tables(address, security, token)
                assert raised.value.code() == grpc.StatusCode.UNAUTHENTICATED
        refused = [log for log in logs if log["event"] == "rpc_unauthenticated"]
        assert [log["reason"] for log in refused] == ["wrong token", "no token"]
        assert TOKEN not in repr(logs)
        assert wrong not in repr(logs)
        assert await read_tables(address, Security(token=TOKEN)) == 3

    async def test_a_flood_of_refusals_is_logged_once(self, token_group: Group) -> None:
        """Twenty calls with a wrong token are all refused and logged once per reason."""
        address = token_group.agents[2].address
        with capture_logs() as logs:
            for _ in range(20):
                with pytest.raises(grpc.aio.AioRpcError) as raised:
                    await read_tables(address, Security(), "wrong-token-of-another-group-000")
                assert raised.value.code() == grpc.StatusCode.UNAUTHENTICATED
        refused = [log for log in logs if log["event"] == "rpc_unauthenticated"]
        assert len(refused) == 1
        assert refused[0]["unlogged"] == 0

    async def test_gossip_needs_the_token_and_health_does_not(self, token_group: Group) -> None:
        """Gossip without the token is UNAUTHENTICATED; the health check stays open."""
        address = token_group.agents[1].address
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await send(address, Security(), UUIDS[0], [], "push")
        assert raised.value.code() == grpc.StatusCode.UNAUTHENTICATED
        async with grpc.aio.insecure_channel(address) as channel:
            answer = await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=5
            )
        assert answer.status == health_pb2.HealthCheckResponse.SERVING

    def test_security_repr_hides_the_token(self) -> None:
        """A Security shown in a log or a traceback does not show its token."""
        assert TOKEN not in repr(Security(token=TOKEN))


class TestIdentity:
    def test_member_uri_is_read_from_the_auth_context(self) -> None:
        """The member is the URI SAN's UUID; no certificate is None; other URIs are ignored."""
        context = {
            "x509_subject": [b"CN=grstats member m0"],
            "peer_uri": [member_uri(UUIDS[0].upper()).encode(), b"spiffe://example/x"],
        }
        assert certified_members(context) == frozenset({UUIDS[0]})
        assert certified_members({"transport_security_type": [b"insecure"]}) is None
        assert certified_members({"x509_subject": [b"CN=client"]}) == frozenset()

    def test_refusal_reasons(self) -> None:
        """Only exactly one certified member, sending as itself, its own updates, passes."""
        assert refusal(frozenset({UUIDS[0]}), UUIDS[0], []) == ""
        assert "not exactly one" in refusal(frozenset(UUIDS[:2]), UUIDS[0], [])
        assert "sender_member" in refusal(frozenset({UUIDS[0]}), UUIDS[1], [])


def write(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` and return it."""
    path.write_text(text, encoding="ascii")
    return path


class TestConfig:
    def overrides(self, certs: Path, **keys: object) -> dict[str, object]:
        """A simulated agent's overrides with a complete [tls], changed by ``keys``."""
        base: dict[str, object] = {
            "source": "simulated",
            "simulated.member_index": 0,
            "simulated.group_start_s": START_S,
            "tls.cert_file": str(certs / "m0.pem"),
            "tls.key_file": str(certs / "m0.key"),
            "tls.ca_file": str(certs / "ca.pem"),
            "tls.require_client_cert": True,
        }
        for key, value in keys.items():
            base[key.replace("__", ".")] = value
        return {key: value for key, value in base.items() if value is not None}

    def test_a_complete_tls_section_loads(self, certs: Path, tmp_path: Path) -> None:
        """A [tls] table and a token file load into TlsConfig and a Path."""
        config_file = write(
            tmp_path / "agent.toml",
            f'source = "simulated"\ntoken_file = "{tmp_path / "token"}"\n'
            f"[simulated]\nmember_index = 0\ngroup_start_s = {START_S}\n[tls]\n"
            f'cert_file = "{certs / "m0.pem"}"\nkey_file = "{certs / "m0.key"}"\n'
            f'ca_file = "{certs / "ca.pem"}"\nrequire_client_cert = true\n',
        )
        write(tmp_path / "token", TOKEN + "\n")
        config = load_config(config_file)
        assert config.tls == tls(certs, "m0")
        assert config.token_file == tmp_path / "token"
        assert TOKEN not in repr(config)

    @pytest.mark.parametrize(
        ("keys", "message"),
        [
            ({"tls__cert_file": "missing.pem"}, "tls.cert_file: 'missing.pem' is not a readable"),
            ({"tls__ca_file": None}, "tls.ca_file: missing"),
            ({"tls__key_file": None}, "tls.key_file: missing; tls.cert_file needs it"),
            ({"tls__require_client_cert": "yes"}, "tls.require_client_cert: 'yes' is not true"),
            ({"tls__cert": "x"}, "tls.cert: unknown setting (did you mean tls.cert_file?)"),
        ],
    )
    def test_errors_name_the_key(self, certs: Path, keys: dict[str, object], message: str) -> None:
        """Each invalid [tls] setting is reported under its own key."""
        with pytest.raises(ConfigError) as raised:
            load_config(None, self.overrides(certs, **keys))
        assert str(raised.value).startswith(message), raised.value

    def test_files_that_do_not_parse_name_their_key(self, certs: Path, tmp_path: Path) -> None:
        """A garbage CA or certificate, another certificate's key, an encrypted key: named."""
        garbage = write(tmp_path / "garbage.pem", "not a certificate\n")
        encrypted = tmp_path / "encrypted.key"
        openssl = shutil.which("openssl")
        assert openssl is not None
        subprocess.run(
            [openssl, "ec", "-in", str(certs / "m0.key"), "-aes256", "-passout", "pass:secret",
             "-out", str(encrypted)],
            check=True, capture_output=True, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        cases = {
            "tls.ca_file": {"tls__ca_file": str(garbage)},
            "tls.cert_file": {"tls__cert_file": str(garbage)},
            "tls.key_file": {"tls__key_file": str(certs / "m1.key")},
        }
        for key, keys in [*cases.items(), ("tls.key_file", {"tls__key_file": str(encrypted)})]:
            with pytest.raises(ConfigError) as raised:
                load_config(None, self.overrides(certs, **keys))
            assert str(raised.value).startswith(f"{key}: "), raised.value

    def test_require_client_cert_needs_a_ca(self, certs: Path) -> None:
        """Requiring client certificates without the CA that signs them is an error."""
        with pytest.raises(ConfigError, match=r"^tls\.ca_file: missing; tls\.require_client"):
            TlsConfig(
                cert_file=certs / "m0.pem", key_file=certs / "m0.key", require_client_cert=True
            )

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("short\n", "has 5 characters, not 16..4096"),
            ("with a space in the token text\n", "is not printable ASCII without spaces"),
        ],
    )
    def test_token_file_errors_name_the_key(self, tmp_path: Path, text: str, message: str) -> None:
        """A token too short or with spaces is refused under token_file, token not shown."""
        path = write(tmp_path / "token", text)
        with pytest.raises(ConfigError) as raised:
            load_config(
                None,
                {
                    "source": "simulated",
                    "simulated.member_index": 0,
                    "simulated.group_start_s": START_S,
                    "token_file": str(path),
                },
            )
        assert str(raised.value).startswith("token_file: ")
        assert message in str(raised.value)
        assert text.strip() not in str(raised.value)

    def test_agent_flags_set_the_tls_keys(self, certs: Path, tmp_path: Path) -> None:
        """--tls-cert, --tls-key, --tls-ca, --tls-require-client-cert and --token-file apply."""
        token = write(tmp_path / "token", TOKEN)
        args = build_parser().parse_args(
            [
                "agent",
                "--source",
                "simulated",
                "--member-index",
                "0",
                "--group-start",
                "1",
                "--tls-cert",
                str(certs / "m0.pem"),
                "--tls-key",
                str(certs / "m0.key"),
                "--tls-ca",
                str(certs / "ca.pem"),
                "--tls-require-client-cert",
                "--token-file",
                str(token),
            ]
        )
        config = config_from(args)
        assert config.tls == tls(certs, "m0")
        assert config.token_file == token


def start_secure_agent(
    index: int, ports: list[int], start: int, state: Path, *flags: str
) -> subprocess.Popen[bytes]:
    """One grstats agent process of a simulated 3-member group, with ``flags`` added."""
    return subprocess.Popen(
        [*PYTHON, "agent", "--source", "simulated", "--members", "3",
         "--member-index", str(index), "--group-start", str(start),
         "--listen", f"127.0.0.1:{ports[index]}",
         "--peers", ",".join(f"127.0.0.1:{port}" for port in ports),
         "--state-dir", str(state), "--log-format", "json", *flags],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip


class TestAgentProcesses:
    def test_agents_started_with_tls_and_token_flags(self, certs: Path, tmp_path: Path) -> None:
        """Agent processes given --tls-* and --token-file; query and collect need the same."""
        token = write(tmp_path / "token", TOKEN)
        ports = free_ports(3)
        start = int(time.time())
        processes = [
            start_secure_agent(
                index,
                ports,
                start,
                tmp_path / str(index),
                *("--tls-cert", str(certs / f"m{index}.pem")),
                *("--tls-key", str(certs / f"m{index}.key")),
                *("--tls-ca", str(certs / "ca.pem")),
                "--tls-require-client-cert",
                *("--token-file", str(token)),
            )
            for index in range(3)
        ]
        client = [
            *("--tls-ca", str(certs / "ca.pem")),
            *("--tls-cert", str(certs / "client.pem")),
            *("--tls-key", str(certs / "client.key")),
        ]

        def query(port: int, *flags: str) -> subprocess.CompletedProcess[str]:
            return grstats(
                "query", "members", "--node", f"127.0.0.1:{port}", "--format", "json",
                "--extended", "--timeout", "2", *flags,
            )  # fmt: skip

        def all_connected() -> bool:
            done = query(ports[2], *client, "--token-file", str(token))
            rows = json.loads(done.stdout)["rows"] if done.returncode == 0 else []
            return sorted(row["MEMBER_ID"] for row in rows if row["CONNECTED"] == "YES") == sorted(
                UUIDS
            )

        try:
            wait_until(all_connected, 30, "every agent connected to every other over mTLS")
            without_token = query(ports[0], *client)
            assert without_token.returncode == 1
            assert "UNAUTHENTICATED" in without_token.stderr
            assert TOKEN not in without_token.stderr
            without_certificate = query(ports[0], "--token-file", str(token))
            assert without_certificate.returncode == 1
            missing = query(ports[0], "--tls-ca", str(tmp_path / "nope.pem"))
            assert missing.returncode == 2
            assert missing.stderr.startswith("grstats: error: --tls-ca: ")
            node = ("--node", f"127.0.0.1:{ports[1]}", "--format", "json", "--interval", "1")
            collected = grstats(
                "collect", *node, "--spool", str(tmp_path / "spool"), "--count", "2",
                *client, "--token-file", str(token),
            )  # fmt: skip
            assert collected.returncode == 0, collected.stderr
            assert json.loads(collected.stdout)["snapshots"] == 2
            refused = grstats(
                "collect", *node, "--spool", str(tmp_path / "refused"), "--duration", "2",
                *client,
            )  # fmt: skip
            assert refused.returncode == 0, refused.stderr
            assert json.loads(refused.stdout)["snapshots"] == 0
            assert "UNAUTHENTICATED" in refused.stderr
        finally:
            for process in processes:
                process.send_signal(signal.SIGTERM)
            for process in processes:
                assert process.wait(timeout=30) == 0
