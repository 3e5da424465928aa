"""``examine``: every check of one agent's set-up, in the checklist's order.

The config's own check comes first (:func:`~grstats.agent.doctor.local.check_config`, done
by the caller, which needs the config to call this). Then, concurrently where independent,
each within ``timeout_s``: the state directory and the secret files, the advertised address,
the ports, the member's MySQL server, and the peers; the peers wait for the MySQL read only
when the config discovers them from the member's view. The agent's own certificate is
checked last, against the member the read found.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from grstats.agent.doctor.certificate import check_certificate
from grstats.agent.doctor.checklist import Check
from grstats.agent.doctor.local import (
    check_advertise,
    check_secret_file,
    check_state_dir,
    secret_files,
)
from grstats.agent.doctor.peers import DEFAULT_MAX_OFFSET_S, check_peers
from grstats.agent.doctor.ports import check_ports
from grstats.agent.doctor.source import check_source
from grstats.core.checks import check_seconds
from grstats.core.security import Security

if TYPE_CHECKING:
    from grstats.agent.config import AgentConfig

#: How long each check may take by default, seconds.
DEFAULT_TIMEOUT_S = 3.0
MAX_TIMEOUT_S = 60.0
MAX_CLOCK_OFFSET_S = 60.0


@dataclass(frozen=True, slots=True)
class DoctorOptions:
    """How the doctor checks; validated on construction (ConfigError names the field).

    Attributes:
        timeout_s: how long each check may take (a connect, a read, a call), (0, 60] s.
        max_clock_offset_s: the largest clock offset to a peer that passes, (0, 60] s.
    """

    timeout_s: float = DEFAULT_TIMEOUT_S
    max_clock_offset_s: float = DEFAULT_MAX_OFFSET_S

    def __post_init__(self) -> None:
        check_seconds("timeout_s", self.timeout_s, 0, MAX_TIMEOUT_S, open_low=True)
        check_seconds(
            "max_clock_offset_s", self.max_clock_offset_s, 0, MAX_CLOCK_OFFSET_S, open_low=True
        )


async def examine(config: AgentConfig, options: DoctorOptions | None = None) -> list[Check]:
    """Check the set-up ``config`` describes; return the lines after the config's own."""
    options = options or DoctorOptions()
    timeout_s = options.timeout_s
    security = Security.from_files(config.tls, config.token_file)
    checks = [check_state_dir(config.state_path)]
    checks += [check_secret_file(key, path) for key, path in secret_files(config)]
    advertise = asyncio.create_task(asyncio.to_thread(check_advertise, config))
    ports = asyncio.create_task(check_ports(config, security, timeout_s))
    source = asyncio.create_task(check_source(config, timeout_s))
    peers = [peer for peer in config.peers if peer != config.advertised]
    if config.discovery_enabled and config.mysql is not None:
        read = await source  # the member's view names the other members' hosts
        found = [p for p in read.discovered if p not in peers and p != config.advertised]
        known = asyncio.create_task(_peers(config, security, [*peers, *found], options))
    else:
        known = asyncio.create_task(_peers(config, security, peers, options))
        read = await source
    checks += [await advertise, *await ports, *read.checks]
    checks.append(check_certificate(config, read.member_id))
    peer_checks = await known
    if not peers and config.mysql is not None and not read.member_id:
        peer_checks = [
            Check.skipped(
                "peers",
                "peers: not checked, peers is empty and the member's view, which names them, "
                "could not be read",
            )
        ]
    return checks + peer_checks


async def _peers(
    config: AgentConfig, security: Security, peers: list[str], options: DoctorOptions
) -> list[Check]:
    return await check_peers(
        config,
        security,
        peers,
        timeout_s=options.timeout_s,
        max_offset_s=options.max_clock_offset_s,
    )
