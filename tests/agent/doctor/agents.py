"""Real agents for the doctor's tests: a simulated group on 127.0.0.1, on the real clock.

Each agent serves gRPC on a free port with the TLS and token it is given, has read its member
once, and runs no loop (the doctor only asks it questions). Certificates are made by
deploy/tls/make-certs.sh for the simulated members' server_uuids.
"""

from __future__ import annotations

import socket
import time
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING

from grstats.agent.config import AgentConfig
from grstats.agent.runtime import Agent
from grstats.agent.sim.group import member_uuid
from grstats.agent.sim.scenario import load_scenario
from grstats.agent.sources import SimulatedSourceConfig
from grstats.agent.sources.simulated import SimulatedSource
from grstats.core.clock import now_us
from grstats.core.tls import TlsConfig
from tests.agent.test_runtime import settings
from tests.certs import make_certs

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator, Sequence
    from pathlib import Path

    from grstats.core.clock import Clock
    from grstats.core.security import Security

SEED = 1
#: The simulated members' server_uuids (steady, seed 1), which the certificates name.
UUIDS = [member_uuid("steady", SEED, index) for index in range(3)]
TOKEN = "d0ctor-token-of-the-group-0123456789"  # noqa: S105  (a test's token)


def certificates(directory: Path) -> Path:
    """A CA and certificates m0, m1, m2 (each for its member, at 127.0.0.1) in ``directory``."""
    return make_certs(directory, *(f"m{i}={uuid}@127.0.0.1" for i, uuid in enumerate(UUIDS)))


def tls(certs: Path, name: str, *, ca: Path | None = None, require: bool = True) -> TlsConfig:
    """The [tls] of certificate ``name`` in ``certs`` (``ca``: another CA file)."""
    return TlsConfig(
        cert_file=certs / f"{name}.pem",
        key_file=certs / f"{name}.key",
        ca_file=ca or certs / "ca.pem",
        require_client_cert=require,
    )


def doctor_config(
    peers: Sequence[str],
    *,
    tls_config: TlsConfig | None = None,
    token_file: Path | None = None,
    member_index: int = 0,
) -> AgentConfig:
    """The config of the agent the doctor checks: member ``member_index``, on any port."""
    return AgentConfig(
        source="simulated",
        simulated=SimulatedSourceConfig(member_index=member_index, group_start_s=0, seed=SEED),
        listen="127.0.0.1:0",
        peers=tuple(peers),
        tls=tls_config,
        token_file=token_file,
    )


@asynccontextmanager
async def running_agents(
    securities: Sequence[Security], clocks: Sequence[Clock] = (), *, first: int = 1
) -> AsyncIterator[list[Agent]]:
    """Start agents with ``securities[i]`` (and ``clocks[i]``), then stop them.

    Agent ``i`` reads member ``first + i`` of the 3 (counted round), so that by default the
    agents are the peers of the doctor's member 0.
    """
    size = load_scenario("steady").with_members(len(UUIDS))
    agents = []
    try:
        for index, security in enumerate(securities):
            clock = clocks[index] if index < len(clocks) else now_us
            member = (first + index) % len(UUIDS)
            source = SimulatedSource(size, member, seed=SEED, group_start_s=time.time() - 3)
            agent = Agent(settings(), source, clock=clock, security=security)
            agents.append(agent)
            await agent.start()
            assert agent._task is not None
            agent._task.cancel()  # no loop: one read, below, makes its member known
            await agent.member.read()
        yield agents
    finally:
        for agent in agents:
            await agent.stop(grace_s=0)


@contextmanager
def silent_listener() -> Iterator[str]:
    """Yield the address of a socket that accepts connections and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield f"127.0.0.1:{sock.getsockname()[1]}"
