"""Scenarios of the simulated group: TOML files with a workload and timed events.

A scenario file looks like this (every key but ``name`` and ``description`` is optional)::

    name = "slow-secondary"
    description = "One line that `grstats simulate --list` shows."
    mode = "single-primary"          # or "multi-primary"
    members = 3                      # default size; `--members` overrides (1-9)
    version = "8.0.36"
    view_change_uuid = "AUTOMATIC"   # group_replication_view_change_uuid (8.0.26 and later)

    [workload]
    rate_tps = 800                   # per writer: the primary, or each multi-primary writer
    writers = "all"                  # multi-primary: "all" or a list of member indexes
    key_space = 100000               # rows that transactions write
    keys_per_transaction = 4         # write-set size
    skew = 0.0                       # Zipf exponent of key popularity; 0 is uniform
    transaction_ms = 10              # from a transaction's snapshot (its start) to its commit
    clients = 16                     # client sessions of each writer, sharing its rate_tps

    [appliers]
    capacity_tps = 4000              # each member's applier capacity
    capacity_overrides = { 2 = 500 } # member index -> capacity

    [group]
    suspicion_s = 5                  # GR suspects a silent member after 5 s
    expel_timeout_s = 5              # group_replication_member_expel_timeout
    autorejoin_delay_s = 5           # an expelled member that can talk again rejoins after this
    gc_period_s = 60                 # stable set and certification garbage collection
    block_size = 1000000             # group_replication_gtid_assignment_block_size

    [flow_control]                   # group_replication_flow_control_* overrides
    applier_threshold = 25000

    [member.1]                       # one member's server, by 0-based index
    member_weight = 70               # group_replication_member_weight, 0..100 (default 50)
    version = "8.0.35"               # its MySQL version (default: the scenario's ``version``)

    [[events]]
    at = 60                          # seconds after the group starts
    action = "crash"                 # crash, start, stop, partition, heal, rate, capacity,
                                     # force-members, errant-write, block, unblock
    member = 1                       # 0-based member index
    value = 0                        # rate_tps or capacity_tps for rate and capacity;
                                     # errant-write: transactions (default 1)
    members = [0, 1]                 # force-members: the new membership; block and unblock:
                                     # the members that stop (start again) hearing ``member``

A writer's commits go through flow control as MySQL's do (``Flow_control_module::do_wait``):
each commit over the writer's quota for the period waits, blocking its client session, until
the next flow-control step or for 1 s, whichever comes first, then commits; the overshoot is
taken off the writer's next quota (``extra_quota``). Sessions that are not blocked issue the
writer's ``rate_tps`` between them, so a throttled writer commits about its quota plus
``clients`` per second. A held commit's original commit time is stamped before its wait, as
``group_replication_trans_before_commit`` (observer_trans.cc) stamps it before ``do_wait``:
on the other members its TRANSPORT_SECONDS includes the wait.

A view in which a member joins (the bootstrap and each join, also the first members' at
the start) is logged as a transaction with a GTID on every member, while ``version`` is below
8.3.0 (``MEMBER_VERSION_REMOVING_VCLE``; ``prepare_view_change_packet``): the next free GNO of
the group name, or of ``view_change_uuid`` when it is set, and the writers' GNO blocks are
handed out again after it (``Certifier::generate_view_change_group_gtid``). So a new group of
3 on 8.0 has executed ``group_name:1-3`` before any write and its primary writes from GNO 4;
on 8.3.0 and later no view change is logged. A view where members only leave logs nothing.

A member's ``version`` is its MEMBER_VERSION and ``@@version``, and ``member_weight`` its
``@@group_replication_member_weight``. They decide a single-primary election as MySQL's does
(:mod:`grstats.agent.sim.election`): the lowest version first, then the highest weight, then
the lowest server_uuid. The group logs its views while any member is below 8.3.0.
The versions are fixed for the whole scenario: a member is never upgraded, and the simulator
does not refuse a join by version as GR's compatibility check would.

Member indexes count from 0, like ``--member-index``. A group changes its view only while a
majority of the view can talk: a member that is cut off or crashed stays UNREACHABLE, and
writes block, while the members that can talk are not a majority. ``force-members`` is
``SET GLOBAL group_replication_force_members`` run on ``member``: the view becomes the listed
members (they must include ``member``), whatever the quorum; the others leave it as if
expelled. It does nothing unless ``member`` is ONLINE in the view and reachable.

``errant-write`` is a write on ``member`` while it is out of the group (stopped, or in ERROR
after an expulsion) and someone turned its ``super_read_only`` off: ``value`` transactions
(1 by default) with the member's own server_uuid, GNOs from 1 on, that no other member gets.
It does nothing while the member is in the view (GR certifies a write there, under the
group's name) or its server is down. When such a member starts (or rejoins on its own), the
group refuses it as MySQL does: its executed set is not a subset of the group's
(``Plugin_gcs_events_handler::compare_member_transaction_sets``, plugin/group_replication/
src/gcs_event_handlers.cc: "This member has more executed transactions than those present in
the group"), so it goes to ERROR, lists only itself, and is not in the others' view. The
simulator leaves out the short view in which it joins and leaves.

``block`` cuts one direction of a link: from then on ``member``'s messages stop reaching the
listed ``members``, while theirs still reach it (a one-way firewall rule, as in MySQL bug
#118704). Each receiver's failure detector suspects ``member`` after ``suspicion_s``: its own
``replication_group_members`` shows it UNREACHABLE and its MEMBER_FAILURE_SUSPICIONS_COUNT of
it rises by one, while ``member`` and every other member still show it ONLINE. No majority
suspects it, so no view expels it (a member is expelled only when the majority agrees,
``Gcs_xcom_control::build_expel_members``), and the group's data still flows: XCom's consensus
reaches the receivers through the others, so the simulator's transactions are not held up.
``unblock`` ends the block for the listed ``members``, or for all of them when none is listed.
Built-in scenarios live beside this module and are found by name; any other path is read as a
file.
"""

from __future__ import annotations

import tomllib
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from grstats.agent.limits import GROUP_MAX_MEMBERS
from grstats.core.errors import ConfigError
from grstats.core.model import DEFAULT_MEMBER_WEIGHT, FlowControlSettings
from grstats.core.rows import encode_version

#: Where the built-in scenarios are.
BUILTIN_DIR = Path(__file__).parent / "scenarios"
#: Event actions and whether they need a value.
ACTIONS = {
    "crash": False,
    "start": False,
    "stop": False,
    "partition": False,
    "heal": False,
    "rate": True,
    "capacity": True,
    "force-members": False,
    "errant-write": False,
    "block": False,
    "unblock": False,
}
#: Actions whose ``members`` are the receivers of a one-way block of ``member``'s messages.
BLOCK_ACTIONS = ("block", "unblock")
MODES = ("single-primary", "multi-primary")
#: The first version with group_replication_view_change_uuid (WL#14539).
VIEW_CHANGE_UUID_SINCE = 0x080026
#: A UUID's text: 32 hex digits and 4 dashes.
UUID_TEXT_LENGTH = 36
#: group_replication_member_weight's range (plugin.cc, ``MAX_MEMBER_WEIGHT``).
MEMBER_WEIGHT_RANGE = (0, 100)
#: The keys of a ``[member.N]`` table.
MEMBER_SETTINGS = ("member_weight", "version")


@dataclass(frozen=True, slots=True)
class Event:
    """Something that happens to one member at ``at`` seconds after the group starts."""

    at: float
    action: str
    member: int
    value: float = 0.0
    members: tuple[int, ...] = ()  #: force-members: the new membership


@dataclass(frozen=True, slots=True)
class Workload:
    """Where transactions come from and what they write."""

    rate_tps: float = 500.0
    writers: tuple[int, ...] | None = None  #: None: every member (multi-primary)
    key_space: int = 100_000
    keys_per_transaction: int = 4
    skew: float = 0.0
    transaction_ms: float = 10.0
    clients: int = 16  #: client sessions of each writer; a commit waiting in do_wait blocks one


@dataclass(frozen=True, slots=True)
class GroupTiming:
    """Timeouts and periods of the group (GR's defaults)."""

    suspicion_s: float = 5.0
    expel_timeout_s: float = 5.0
    autorejoin_delay_s: float = 5.0
    gc_period_s: int = 60
    block_size: int = 1_000_000


@dataclass(frozen=True, slots=True)
class Scenario:
    """A whole simulated group: its mode, size, workload, members and timed events."""

    name: str
    description: str
    mode: str = "single-primary"
    members: int = 3
    version: str = "8.0.36"
    view_change_uuid: str | None = None  #: None: AUTOMATIC, the group name
    workload: Workload = field(default_factory=Workload)
    capacity_tps: float = 4000.0
    capacity_overrides: dict[int, float] = field(default_factory=dict)
    timing: GroupTiming = field(default_factory=GroupTiming)
    flow_control: FlowControlSettings = field(default_factory=FlowControlSettings)
    events: tuple[Event, ...] = ()
    member_weights: dict[int, int] = field(default_factory=dict)  #: index -> member_weight
    member_versions: dict[int, str] = field(default_factory=dict)  #: index -> version

    @property
    def single_primary(self) -> bool:
        """Whether the group runs in single-primary mode."""
        return self.mode == "single-primary"

    def with_members(self, members: int) -> Scenario:
        """Return this scenario for ``members`` members (checked against its events)."""
        return _checked(replace(self, members=members))

    def capacity_of(self, index: int) -> float:
        """Return member ``index``'s applier capacity at the start."""
        return self.capacity_overrides.get(index, self.capacity_tps)

    def weight_of(self, index: int) -> int:
        """Return member ``index``'s group_replication_member_weight (50 unless set)."""
        return self.member_weights.get(index, DEFAULT_MEMBER_WEIGHT)

    def version_of(self, index: int) -> str:
        """Return member ``index``'s MySQL version (the scenario's ``version`` unless set)."""
        return self.member_versions.get(index, self.version)

    def lowest_version(self) -> int:
        """Return the lowest of the members' versions, encoded as GR does (0x080036)."""
        return min(encode_version(self.version_of(index)) for index in range(self.members))


def list_scenarios() -> list[Scenario]:
    """Return the built-in scenarios, sorted by name."""
    return sorted((load_file(path) for path in BUILTIN_DIR.glob("*.toml")), key=lambda s: s.name)


def load_scenario(name_or_path: str) -> Scenario:
    """Return the built-in scenario called ``name_or_path``, or the scenario in that file."""
    builtin = BUILTIN_DIR / f"{name_or_path}.toml"
    if "/" not in name_or_path and builtin.exists():
        return load_file(builtin)
    path = Path(name_or_path)
    if not path.exists():
        names = ", ".join(s.name for s in list_scenarios())
        raise ConfigError(
            f"scenario: {name_or_path!r} is neither a built-in scenario ({names}) nor a file"
        )
    return load_file(path)


def load_file(path: Path) -> Scenario:
    """Read and check the scenario in TOML file ``path``."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"scenario: cannot read {path}: {exc}") from exc
    return from_mapping(data, source=str(path))


def from_mapping(data: dict[str, Any], source: str = "scenario") -> Scenario:
    """Build and check a scenario from parsed TOML ``data``; errors name the key and value."""
    reader = _Reader(data, source)
    workload_data = reader.table("workload")
    members_data = reader.table("appliers")
    group_data = reader.table("group")
    flow_data = reader.table("flow_control")
    writers = workload_data.get("writers", "all")
    workload = Workload(
        rate_tps=reader.number(workload_data, "workload.rate_tps", 500.0, 0, 1_000_000),
        writers=None if writers == "all" else tuple(reader.indexes(writers, "workload.writers")),
        key_space=int(reader.number(workload_data, "workload.key_space", 100_000, 1, 10_000_000)),
        keys_per_transaction=int(
            reader.number(workload_data, "workload.keys_per_transaction", 4, 1, 100)
        ),
        skew=reader.number(workload_data, "workload.skew", 0.0, 0, 5),
        transaction_ms=reader.number(workload_data, "workload.transaction_ms", 10.0, 0, 60_000),
        clients=int(reader.number(workload_data, "workload.clients", 16, 1, 100_000)),
    )
    overrides = members_data.get("capacity_overrides", {})
    if not isinstance(overrides, dict):
        raise ConfigError(f"{source}: appliers.capacity_overrides: {overrides!r} is not a table")
    timing = GroupTiming(
        suspicion_s=reader.number(group_data, "group.suspicion_s", 5.0, 0, 3600),
        expel_timeout_s=reader.number(group_data, "group.expel_timeout_s", 5.0, 0, 3600),
        autorejoin_delay_s=reader.number(group_data, "group.autorejoin_delay_s", 5.0, 0, 3600),
        gc_period_s=int(reader.number(group_data, "group.gc_period_s", 60, 1, 3600)),
        block_size=int(reader.number(group_data, "group.block_size", 1_000_000, 1, 2**40)),
    )
    try:
        flow = FlowControlSettings(**flow_data)
    except TypeError as exc:
        raise ConfigError(f"{source}: flow_control: {exc}") from exc
    except ConfigError as exc:
        raise ConfigError(f"{source}: flow_control: {exc}") from exc
    scenario = Scenario(
        name=reader.text("name"),
        description=reader.text("description"),
        mode=reader.choice("mode", MODES, "single-primary"),
        members=int(reader.number(data, "members", 3, 1, GROUP_MAX_MEMBERS)),
        version=reader.text("version", "8.0.36"),
        view_change_uuid=reader.view_change_uuid(),
        workload=workload,
        capacity_tps=reader.number(members_data, "appliers.capacity_tps", 4000.0, 1, 1_000_000),
        capacity_overrides={
            int(reader.index(key, "appliers.capacity_overrides")): reader.number(
                overrides, f"appliers.capacity_overrides.{key}", 0, 1, 1_000_000, key=key
            )
            for key in overrides
        },
        timing=timing,
        flow_control=flow,
        events=tuple(reader.events()),
        member_weights=reader.member_weights(),
        member_versions=reader.member_versions(),
    )
    try:
        encode_version(scenario.version)
    except ValueError as exc:
        raise ConfigError(
            f"{source}: version: {scenario.version!r} is not a MySQL version"
        ) from exc
    scenario = _checked(scenario)
    lowest = scenario.lowest_version()
    if scenario.view_change_uuid and lowest < VIEW_CHANGE_UUID_SINCE:
        oldest = min(range(scenario.members), key=lambda i: encode_version(scenario.version_of(i)))
        raise ConfigError(
            f"{source}: view_change_uuid: {scenario.view_change_uuid!r} is not allowed: "
            f"group_replication_view_change_uuid came with MySQL 8.0.26, version is "
            f"{scenario.version_of(oldest)!r}"
            + (f" (member.{oldest}.version)" if oldest in scenario.member_versions else "")
        )
    return scenario


def _checked(scenario: Scenario) -> Scenario:
    """Raise ConfigError if an index in ``scenario`` is out of range for its size."""
    last = scenario.members - 1
    if not 1 <= scenario.members <= GROUP_MAX_MEMBERS:
        raise ConfigError(f"members: {scenario.members} is not in 1..{GROUP_MAX_MEMBERS}")
    for position, event in enumerate(scenario.events):
        if event.member > last:
            raise ConfigError(
                f"{scenario.name}: events[{position}].member: {event.member} is not in 0..{last} "
                f"for {scenario.members} members"
            )
    for index in scenario.capacity_overrides:
        if index > last:
            raise ConfigError(
                f"{scenario.name}: appliers.capacity_overrides: {index} is not in 0..{last}"
            )
    _check_memberships(scenario)
    _check_member_settings(scenario)
    for index in scenario.workload.writers or ():
        if index > last:
            raise ConfigError(f"{scenario.name}: workload.writers: {index} is not in 0..{last}")
    return scenario


def _check_memberships(scenario: Scenario) -> None:
    """Raise ConfigError if a force-members event lists a member the group does not have."""
    last = scenario.members - 1
    for position, event in enumerate(scenario.events):
        for index in event.members:
            if index > last:
                raise ConfigError(
                    f"{scenario.name}: events[{position}].members: {index} is not in 0..{last} "
                    f"for {scenario.members} members"
                )


def _check_member_settings(scenario: Scenario) -> None:
    """Raise ConfigError if a ``[member.N]`` table names a member the group does not have."""
    last = scenario.members - 1
    for index in sorted({*scenario.member_weights, *scenario.member_versions}):
        if index > last:
            raise ConfigError(
                f"{scenario.name}: member.{index}: {index} is not in 0..{last} "
                f"for {scenario.members} members"
            )


def _is_version(value: object) -> bool:
    """Whether ``value`` is a MySQL version string (``encode_version`` reads it)."""
    if not isinstance(value, str):
        return False
    try:
        encode_version(value)
    except ValueError:
        return False
    return True


class _Reader:
    """Typed reads from parsed TOML with errors that name the key and the value."""

    def __init__(self, data: dict[str, Any], source: str) -> None:
        self.data = data
        self.source = source

    def fail(self, key: str, value: object, expected: str) -> ConfigError:
        return ConfigError(f"{self.source}: {key}: {value!r} is not {expected}")

    def table(self, key: str) -> dict[str, Any]:
        value = self.data.get(key, {})
        if not isinstance(value, dict):
            raise self.fail(key, value, "a table")
        return value

    def text(self, key: str, default: str | None = None) -> str:
        value = self.data.get(key, default)
        if not isinstance(value, str) or not value:
            raise self.fail(key, value, "a non-empty string")
        return value

    def view_change_uuid(self) -> str | None:
        """Return ``view_change_uuid`` in lower case, or None for AUTOMATIC (the default).

        ``check_view_change_uuid_string`` (plugin/group_replication/src/plugin.cc) takes
        AUTOMATIC or a valid UUID.
        """
        value = self.data.get("view_change_uuid", "AUTOMATIC")
        if value == "AUTOMATIC":
            return None
        try:
            if isinstance(value, str) and len(value) == UUID_TEXT_LENGTH:
                return str(uuid.UUID(value))
        except ValueError:
            pass
        raise self.fail("view_change_uuid", value, "AUTOMATIC or a UUID")

    def choice(self, key: str, choices: tuple[str, ...], default: str) -> str:
        value = self.data.get(key, default)
        if value not in choices:
            raise self.fail(key, value, " or ".join(choices))
        return str(value)

    def number(  # noqa: PLR0913, PLR0917  (a range check wants its bounds spelled out)
        self,
        table: dict[str, Any],
        name: str,
        default: float,
        low: float,
        high: float,
        key: str | None = None,
    ) -> float:
        value = table.get(key if key is not None else name.rsplit(".", 1)[-1], default)
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not low <= value <= high
        ):
            raise self.fail(name, value, f"a number in {low}..{high}")
        return float(value)

    def index(self, value: object, name: str) -> int:
        try:
            index = int(str(value))
        except ValueError:
            raise self.fail(name, value, "a member index") from None
        if not 0 <= index < GROUP_MAX_MEMBERS:
            raise self.fail(name, value, f"a member index in 0..{GROUP_MAX_MEMBERS - 1}")
        return index

    def indexes(
        self, value: object, name: str, expected: str = '"all" or a list of member indexes'
    ) -> list[int]:
        if not isinstance(value, list):
            raise self.fail(name, value, expected)
        return [self.index(item, name) for item in value]

    def membership(
        self, item: dict[str, Any], where: str, action: str, member: int
    ) -> tuple[int, ...]:
        """Return the ``members`` of a force-members, block or unblock event; others take none."""
        if "members" not in item and action not in ("force-members", "block"):
            return ()
        value = item.get("members")
        if action in BLOCK_ACTIONS:
            receivers = self.indexes(value, f"{where}.members", "a list of member indexes")
            if not receivers or member in receivers:
                raise self.fail(
                    f"{where}.members",
                    value,
                    f"the members that stop hearing {where}.member ({member}), without it",
                )
            return tuple(sorted(set(receivers)))
        if action != "force-members":
            raise self.fail(f"{where}.members", value, f"allowed: {action} takes no members")
        members = self.indexes(value, f"{where}.members", "a list of member indexes")
        if member not in members:
            raise self.fail(
                f"{where}.members", value, f"a membership that includes {where}.member ({member})"
            )
        return tuple(sorted(set(members)))

    def member_tables(self) -> dict[int, dict[str, Any]]:
        """Return the ``[member.N]`` tables by member index, their keys checked."""
        raw = self.table("member")
        tables: dict[int, dict[str, Any]] = {}
        for key, settings in raw.items():
            index = self.index(key, "member")
            if not isinstance(settings, dict):
                raise self.fail(f"member.{key}", settings, "a table")
            for name in settings:
                if name not in MEMBER_SETTINGS:
                    raise self.fail(
                        f"member.{key}.{name}",
                        settings[name],
                        f"a member setting: the keys are {' and '.join(MEMBER_SETTINGS)}",
                    )
            tables[index] = settings
        return tables

    def member_weights(self) -> dict[int, int]:
        """Return each ``[member.N]``'s ``member_weight``: a whole number in 0..100."""
        low, high = MEMBER_WEIGHT_RANGE
        weights: dict[int, int] = {}
        for index, settings in self.member_tables().items():
            if "member_weight" not in settings:
                continue
            value = settings["member_weight"]
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise self.fail(
                    f"member.{index}.member_weight", value, f"a whole number in {low}..{high}"
                )
            weights[index] = value
        return weights

    def member_versions(self) -> dict[int, str]:
        """Return each ``[member.N]``'s ``version``: a MySQL version like 8.0.36."""
        versions: dict[int, str] = {}
        for index, settings in self.member_tables().items():
            if "version" not in settings:
                continue
            value = settings["version"]
            if not _is_version(value):
                raise self.fail(f"member.{index}.version", value, "a MySQL version like 8.0.36")
            versions[index] = value
        return versions

    def errant_count(self, item: dict[str, Any], where: str) -> float:
        """Return how many transactions an errant-write writes: a whole number, 1 by default."""
        value = item.get("value", 1)
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1_000_000:
            raise self.fail(f"{where}.value", value, "a whole number in 1..1000000")
        return float(value)

    def events(self) -> list[Event]:
        raw = self.data.get("events", [])
        if not isinstance(raw, list):
            raise self.fail("events", raw, "an array of tables")
        events = []
        for position, item in enumerate(raw):
            where = f"events[{position}]"
            if not isinstance(item, dict):
                raise self.fail(where, item, "a table")
            action = item.get("action")
            if action not in ACTIONS:
                raise self.fail(f"{where}.action", action, " or ".join(ACTIONS))
            if ACTIONS[action] and "value" not in item:
                raise self.fail(f"{where}.value", None, f"given: {action} needs a value")
            member = self.index(item.get("member"), f"{where}.member")
            events.append(
                Event(
                    at=self.number(item, f"{where}.at", 0, 0, 10**7),
                    action=action,
                    member=member,
                    value=self.errant_count(item, where)
                    if action == "errant-write"
                    else self.number(item, f"{where}.value", 0, 0, 1_000_000),
                    members=self.membership(item, where, action, member),
                )
            )
        return sorted(events, key=lambda event: event.at)
