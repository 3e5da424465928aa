"""``RegistrySync``: keeps the member registry and the gossip state in step.

At start the registry's records are loaded: they seed the gossip state, so the agent lists
those members at once, as not connected (WL#2860 keeps members that are gone listed); the
record whose agent address is the agent's own names its member before any read
(:meth:`RegistrySync.own_member`), and the others' agent addresses are peers to ask for the
group (:meth:`RegistrySync.agents`). Every ``flush_interval_s``, and at stop, every known
member is saved in one transaction and members unseen for ``retention_s`` are purged. A
member removed from the registry by ``grstats members forget`` while the agent runs is
dropped from its state too.

Storage faults never stop the agent: it serves from memory. A failing registry (a full,
read-only or vanished disk) is logged once when the fault begins (``registry_fault``) and once
when a flush succeeds again (``registry_recovered``); every flush tries again. A damaged one
(truncated, overwritten) is set aside and the agent goes on with an empty registry, relearning
the members from its peers (``registry_damaged``), at start or at any flush.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, TypeVar

from grstats.agent.gossip import REGISTRY, Counts, Events, Key
from grstats.agent.registry import MemberRecord, RegistryDamaged, RegistryError
from grstats.core.gtid import GtidSet
from grstats.core.model import GroupView
from grstats.core.rows import ApplierStatusRow, MemberRow

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from grstats.agent.config import AgentConfig
    from grstats.agent.gossip import GossipState
    from grstats.agent.gossip.updates import Value
    from grstats.agent.local import LocalMember
    from grstats.agent.registry import MemberRegistry
    from grstats.agent.served import Served
    from grstats.core.clock import Clock

_T = TypeVar("_T")

#: What a damaged registry costs, for its warning.
DAMAGED_EFFECT = (
    "started anew with an empty registry: the members it remembered are relearned from the peers"
)


class RegistrySync:
    """The registry of the agent's member (None: the agent remembers nothing across restarts).

    Attributes:
        remembered: the records loaded at start.
        forgotten: the members forgotten and not seen since, loaded at start.
    """

    def __init__(
        self,
        registry: MemberRegistry | None,
        member: LocalMember,
        config: AgentConfig,
        *,
        clock: Clock,
    ) -> None:
        self.config = config
        self.remembered: list[MemberRecord] = []
        self.forgotten: list[str] = []
        self._registry = registry
        self._member = member
        self._clock = clock
        self._saved: set[str] = set()  # members in the registry after the last save
        self._flushed_at = clock()
        self._fault: str | None = None  # the error of the failing registry, None if it works
        self._fault_since_us = 0
        self._failed_flushes = 0  # calls that failed since the fault began

    async def load(self) -> None:
        """Load the remembered members (at start); a registry that fails leaves them empty."""
        if self._registry is None:
            return
        registry = self._registry
        try:
            self.remembered = await self._call(registry.load)
            self.forgotten = await self._call(registry.forgotten)
        except RegistryError as exc:
            self.remembered, self.forgotten = [], []
            self._failed(exc)
        self._saved = {record.member_id for record in self.remembered}
        self._member.log.info(
            "registry_loaded", members=len(self.remembered), forgotten=len(self.forgotten)
        )

    def seed(self, state: GossipState) -> None:
        """Hold the remembered members' values in ``state`` (below any news of them).

        The forgotten members are forgotten there too.
        """
        state.forgotten.update(self.forgotten)
        for record in self.remembered:
            state.seed(record.member_id, remembered_values(record), record.last_seen_us, REGISTRY)

    def own_member(self, address: str) -> str:
        """The remembered member whose agent is at ``address`` (this agent's), ``''`` if none.

        If several are (a server given a new server_uuid), the one seen last.
        """
        own = [record for record in self.remembered if record.agent_address == address]
        return max(own, key=lambda record: record.last_seen_us).member_id if own else ""

    def agents(self, address: str) -> dict[str, str]:
        """Remembered member -> its agent's address, for every other agent than ``address``."""
        return {
            record.member_id: record.agent_address
            for record in self.remembered
            if record.agent_address and record.agent_address != address
        }

    def due(self) -> bool:
        """Whether ``flush_interval_s`` has passed since the last flush."""
        return self._clock() - self._flushed_at >= self.config.flush_interval_s * 1_000_000

    async def flush(
        self, tables: Callable[[], Served], agents: Mapping[str, str], address: str
    ) -> None:
        """Save every member the served ``tables()`` list in one transaction; purge the expired.

        ``agents`` maps members to their agents' addresses, ``address`` is this agent's. A
        member this agent saved last time that is no longer in the registry was removed by
        ``grstats members forget`` while the agent ran: it is dropped from the state too, so
        the save does not bring it back (it returns only if some member's view still lists
        it). A forget between this check and the save, a few ms, is undone by the save.
        """
        now = self._clock()
        self._flushed_at = now
        state = self._member.state
        if self._registry is None:
            return
        registry = self._registry
        try:
            held = {record.member_id for record in await self._call(registry.load)}
            for member_id in sorted(self._saved - held - {self._member.member_id}):
                if state.forget(member_id):
                    self._member.log.info("member_forgotten", member=member_id)
            retention = int(self.config.retention_s * 1_000_000)
            if retention:
                for member_id, origin in list(state.origins.items()):
                    seen = max(origin.fresh_at_us, origin.first_seen_us)
                    if member_id != self._member.member_id and now - seen > retention:
                        state.forget(member_id)
            records = member_records(state, tables(), agents, address)
            await self._call(lambda: registry.save(records))
            self._saved = {record.member_id for record in records}
            if retention:
                await self._call(lambda: registry.purge(now - retention))
        except RegistryError as exc:
            self._failed(exc)
            return
        self._recovered()

    async def aclose(self) -> None:
        """Close the registry; say what is not saved if the last flush failed."""
        if self._registry is None:
            return
        if self._fault is not None:
            self._member.log.warning(
                "registry_unsaved_at_stop",
                error=self._fault,
                failed_flushes=self._failed_flushes,
                effect="what the agent learned since its last save is not remembered",
            )
        await asyncio.to_thread(self._registry.close)

    async def _call(self, call: Callable[[], _T]) -> _T:
        """Make ``call`` in a worker thread; if the registry is damaged, set it aside, call again.

        Raises:
            RegistryError: the call failed (again, on the new registry), or the damaged one
                could not be set aside.
        """
        assert self._registry is not None
        try:
            return await asyncio.to_thread(call)
        except RegistryDamaged as exc:
            moved_to = await asyncio.to_thread(self._registry.set_aside, self._clock())
            self._member.log.warning(
                "registry_damaged", error=str(exc), moved_to=moved_to, effect=DAMAGED_EFFECT
            )
            self.remembered, self.forgotten, self._saved = [], [], set()
            return await asyncio.to_thread(call)

    def _failed(self, exc: RegistryError) -> None:
        """Note a failed registry call; log it when the fault begins or its error changes."""
        error = str(exc)
        self._failed_flushes += 1
        if error == self._fault:
            return
        replaced = {} if self._fault is None else {"replaces": self._fault}
        if self._fault is None:
            self._fault_since_us = self._clock()
            self._failed_flushes = 1
        self._fault = error
        self._member.log.warning(
            "registry_fault",
            error=error,
            effect="serving from memory; what was saved before is kept",
            retry_every_s=self.config.flush_interval_s,
            **replaced,
        )

    def _recovered(self) -> None:
        """Log the end of the registry's fault, if there is one, and clear it."""
        if self._fault is None:
            return
        self._member.log.info(
            "registry_recovered",
            error=self._fault,
            lasted_s=round((self._clock() - self._fault_since_us) / 1_000_000, 3),
            failed_flushes=self._failed_flushes,
        )
        self._fault = None


def remembered_values(record: MemberRecord) -> dict[Key, Value]:
    """The values a registry record gives back to the gossip state after a restart."""
    values: dict[Key, Value] = {
        Key.VIEW: GroupView(
            members=(
                MemberRow(
                    member_id=record.member_id,
                    member_host=record.member_host,
                    member_port=record.member_port,
                ),
            )
        )
    }
    if record.stats is not None:
        values[Key.COUNTS] = Counts(record.stats, gtids_present=True)
    if record.applier is not None:
        values[Key.APPLIER] = record.applier
    if record.gtid_executed:
        values[Key.GTID_EXECUTED] = GtidSet.parse(record.gtid_executed)
    if record.events:
        values[Key.EVENTS] = Events(record.events)
    return values


def member_records(
    state: GossipState, tables: Served, agents: Mapping[str, str], own_address: str
) -> list[MemberRecord]:
    """One registry record per member the served tables list."""
    columns, rows = tables["replication_group_members"]
    names = [column.name for column in columns]
    records = []
    for row in rows:
        member = dict(zip(names, row, strict=True))
        member_id = str(member["MEMBER_ID"])
        origin = state.origins.get(member_id)
        if not member_id or origin is None:
            continue
        counts = state.value(member_id, Key.COUNTS)
        applier = state.value(member_id, Key.APPLIER)
        executed = state.value(member_id, Key.GTID_EXECUTED)
        events = state.value(member_id, Key.EVENTS)
        port = member["MEMBER_PORT"]
        records.append(
            MemberRecord(
                member_id=member_id,
                member_host=str(member["MEMBER_HOST"]),
                member_port=port if isinstance(port, int) else None,
                agent_address=own_address
                if member_id == state.local_id
                else agents.get(member_id, ""),
                first_seen_us=max(0, origin.first_seen_us),
                last_seen_us=max(0, origin.fresh_at_us, origin.first_seen_us),
                last_state=str(member["MEMBER_STATE"]),
                stats=counts.update.value.row
                if counts and isinstance(counts.update.value, Counts)
                else None,
                applier=applier.update.value
                if applier and isinstance(applier.update.value, ApplierStatusRow)
                else None,
                gtid_executed=str(executed.update.value)
                if executed and isinstance(executed.update.value, GtidSet)
                else "",
                events=events.update.value.events
                if events and isinstance(events.update.value, Events)
                else (),
            )
        )
    return records
