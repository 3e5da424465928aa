"""``SimulatedSourceConfig``: which member of which simulated group a ``SimulatedSource`` reads.

The ``[simulated]`` section of the agent's config. The simulator itself
(:mod:`grstats.agent.sim`, :mod:`grstats.agent.sources.simulated`) is loaded only when the
scenario is loaded or the source is built, so that an agent reading a real server, which
imports this module with the others of :mod:`grstats.agent.sources`, does not load it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from grstats.agent.limits import GROUP_MAX_MEMBERS
from grstats.core.checks import check_int, check_number
from grstats.core.errors import ConfigError
from grstats.core.model import LABEL_RULE, is_group_label

if TYPE_CHECKING:
    from collections.abc import Callable

    from grstats.agent.sim.scenario import Scenario
    from grstats.agent.sources.simulated import SimulatedSource

#: The latest group start accepted (9999-12-31T23:59:59Z), in UNIX seconds.
MAX_UNIX_S = 253_402_300_799
MAX_SEED = 2**63 - 1


@dataclass(frozen=True, slots=True, kw_only=True)
class SimulatedSourceConfig:
    """The ``[simulated]`` section: which member of which simulated group this agent reads.

    Validated on construction; errors name the key as ``simulated.<field>``.

    Attributes:
        scenario: a built-in scenario's name (``steady``, ``slow-secondary``, ...) or the path of
            a scenario file.
        member_index: this agent's member, in ``0..members-1``.
        members: the group's size, 1..9 (default: the scenario's own).
        seed: the random seed, 0..2^63-1.
        group_start_s: when the group starts, in UNIX seconds. It has no default: agents of one
            group must agree on it, and a start long ago makes the first read replay the group
            from then on.
        group_name: the group's name (``orders``), a group label
            (:data:`~grstats.core.model.LABEL_RULE`); None (the default): none. The group's
            UUID and its members' follow from the scenario's name, the seed and this name, so
            two groups of one fleet that differ in any of them never share a UUID; the name is
            also the group's label, as an InnoDB Cluster's name is (it wins over
            ``group_label``).
    """

    scenario: str = "steady"
    member_index: int
    members: int | None = None
    seed: int = 1
    group_start_s: float
    group_name: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.scenario, str) or not self.scenario.strip():
            raise ConfigError(
                f"simulated.scenario: {self.scenario!r} is not a scenario name or file path"
            )
        if self.members is not None:
            check_int("simulated.members", self.members, 1, GROUP_MAX_MEMBERS)
        top = GROUP_MAX_MEMBERS - 1 if self.members is None else self.members - 1
        size = "" if self.members is None else f" for {self.members} members"
        check_int(
            "simulated.member_index", self.member_index, 0, top, accepted=f"in 0..{top}{size}"
        )
        check_int("simulated.seed", self.seed, 0, MAX_SEED)
        check_number(
            "simulated.group_start_s",
            self.group_start_s,
            0,
            MAX_UNIX_S,
            accepted=f"a UNIX time in [0, {MAX_UNIX_S}] seconds",
        )
        name = self.group_name
        if name is not None and not (isinstance(name, str) and is_group_label(name)):
            raise ConfigError(f"simulated.group_name: {name!r} is not a group name ({LABEL_RULE})")

    def sized_scenario(self) -> Scenario:
        """Load the scenario and size it to ``members``; ConfigError names the key at fault.

        Also checks ``member_index`` against the size (the scenario's own when ``members`` is
        None). Reads the scenario file, so :func:`~grstats.agent.config.load_config` calls it to
        fail early.
        """
        from grstats.agent.sim.scenario import load_scenario  # noqa: PLC0415 (the simulator on demand)

        try:
            scenario = load_scenario(self.scenario)
        except ConfigError as exc:
            reason = str(exc).removeprefix("scenario: ")
            raise ConfigError(f"simulated.scenario: {reason}") from exc
        if self.members is not None and self.members != scenario.members:
            try:
                scenario = scenario.with_members(self.members)
            except ConfigError as exc:
                raise ConfigError(
                    f"simulated.members: {self.members} does not fit scenario "
                    f"{scenario.name!r}: {exc}"
                ) from exc
        if self.member_index >= scenario.members:
            raise ConfigError(
                f"simulated.member_index: {self.member_index} is not in "
                f"0..{scenario.members - 1} for scenario {scenario.name!r} of "
                f"{scenario.members} members"
            )
        return scenario

    def build(self, clock: Callable[[], float] = time.time) -> SimulatedSource:
        """Return the source of member ``member_index`` of this simulated group.

        Args:
            clock: the time in UNIX seconds (tests pass a clock they move by hand).

        Raises:
            ConfigError: the scenario cannot be loaded or sized, or ``member_index`` is not a
                member of it.
        """
        from grstats.agent.sources.simulated import SimulatedSource  # noqa: PLC0415 (as above)

        return SimulatedSource(
            self.sized_scenario(),
            self.member_index,
            self.seed,
            self.group_start_s,
            clock=clock,
            step_ahead=True,
            group_name=self.group_name or "",
        )

    def member_uuid(self) -> str:
        """Return the server_uuid of member ``member_index`` (loads the scenario, for its name).

        Raises:
            ConfigError: as :meth:`sized_scenario`.
        """
        from grstats.agent.sim.group import member_uuid  # noqa: PLC0415 (the simulator on demand)

        scenario = self.sized_scenario()
        return member_uuid(scenario.name, self.seed, self.member_index, self.group_name or "")
