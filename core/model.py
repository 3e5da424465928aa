"""The member model: what a stats source reads of its member, and what gossip carries of it.

Built from the row model (:mod:`grstats.core.rows`), so the agent serves what the source read in
MySQL's exact names and formats. :class:`ServerSettings` holds the member's ``read_only``,
``super_read_only`` and ``group_replication_flow_control_*`` variables: a real member's are read
from ``global_variables``, a simulated member's come from its scenario, and the group status
judges flow control with them as GR's own flow-control step does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from grstats.core.checks import check_int
from grstats.core.errors import ConfigError

if TYPE_CHECKING:
    from grstats.core.fault import SourceFault
    from grstats.core.gtid import GtidSet
    from grstats.core.rows import ApplierStatusRow, MemberRow, MemberStatsRow

#: group_replication_flow_control_mode values (``enum Flow_control_mode`` in
#: plugin/group_replication/include/pipeline_stats.h).
FLOW_CONTROL_MODES = ("QUOTA", "DISABLED")
_INT32_MAX = 2_147_483_647
#: group_replication_member_weight's default (plugin/group_replication/include/plugin_variables.h,
#: DEFAULT_MEMBER_WEIGHT): the simulated members'.
DEFAULT_MEMBER_WEIGHT = 50


@dataclass(frozen=True, slots=True)
class FlowControlSettings:
    """The ``group_replication_flow_control_*`` variables of a member (or a simulated group).

    Defaults are MySQL's (the system variables' definitions in
    plugin/group_replication/src/plugin.cc); ranges are the reference manual's.
    """

    mode: str = "QUOTA"
    certifier_threshold: int = 25000
    applier_threshold: int = 25000
    min_quota: int = 0
    min_recovery_quota: int = 0
    max_quota: int = 0
    member_quota_percent: int = 0
    period: int = 1
    hold_percent: int = 10
    release_percent: int = 50

    def __post_init__(self) -> None:
        if self.mode not in FLOW_CONTROL_MODES:
            raise ConfigError(
                f"group_replication_flow_control_mode: {self.mode!r} is not QUOTA or DISABLED"
            )
        ranges = {
            "certifier_threshold": (0, _INT32_MAX),
            "applier_threshold": (0, _INT32_MAX),
            "min_quota": (0, _INT32_MAX),
            "min_recovery_quota": (0, _INT32_MAX),
            "max_quota": (0, _INT32_MAX),
            "member_quota_percent": (0, 100),
            "period": (1, 60),
            "hold_percent": (0, 100),
            "release_percent": (0, 1000),
        }
        for name, (low, high) in ranges.items():
            check_int(f"group_replication_flow_control_{name}", getattr(self, name), low, high)


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """The member's server variables the group status needs, as its source read them.

    ``read_only`` and ``super_read_only`` are the ``@@GLOBAL`` values (GR turns
    ``super_read_only`` on for secondaries and for a member that is not ONLINE);
    ``flow_control`` is its ``group_replication_flow_control_*`` variables, MySQL's defaults
    when the server does not have one (5.7 before 5.7.20 lacks most of them).
    ``member_weight`` is its ``group_replication_member_weight`` (0..100), None where it is
    not known: the server lacks it (before 5.7.20) or the agent that sent it is older; the
    election counts such a member at :data:`DEFAULT_MEMBER_WEIGHT`.
    """

    read_only: bool = False
    super_read_only: bool = False
    flow_control: FlowControlSettings = field(default_factory=FlowControlSettings)
    member_weight: int | None = None

    def __post_init__(self) -> None:
        if self.member_weight is not None:
            check_int("group_replication_member_weight", self.member_weight, 0, 100)


#: The longest group label: MySQL Shell's metadata holds a cluster name in VARCHAR(63).
MAX_LABEL_LENGTH = 63
#: What a group label may be, in words (errors name it).
LABEL_RULE = f"1 to {MAX_LABEL_LENGTH} printable characters, no spaces at either end"


def is_group_label(text: str) -> bool:
    """Whether ``text`` may be a group's label (:data:`LABEL_RULE`): config, metadata or wire."""
    return 0 < len(text) <= MAX_LABEL_LENGTH and text.isprintable() and text == text.strip()


@dataclass(frozen=True, slots=True)
class GroupView:
    """The group as the local member sees it: ``replication_group_members`` and group settings.

    ``members`` are sorted by MEMBER_ID, as MySQL returns them. ``view_id`` is ``''`` when the
    member is in no group; ``group_name`` is ``group_replication_group_name``. ``group_label``
    is the group's human name as the origin's agent knows it: its InnoDB Cluster name
    (``mysql_innodb_cluster_metadata.clusters.cluster_name``), else its config's
    ``group_label``, else ``''``.
    """

    members: tuple[MemberRow, ...] = ()
    view_id: str = ""
    group_name: str = ""
    single_primary_mode: bool = True
    group_label: str = ""


@dataclass(frozen=True, slots=True)
class SourceHealth:
    """How the last read went: ok, or what is degraded (e.g. a table the server lacks)."""

    ok: bool = True
    message: str = ""


@dataclass(frozen=True, slots=True)
class CommunicationInfo:
    """The member's ``replication_group_communication_information`` row (MySQL 8.0.27+).

    As ``Replication_group_communication_information_table_handle::fetch_row_data``
    (plugin/group_replication/src/perfschema/table_communication_information.cc) fills it:
    the group's write concurrency and communication protocol version, the consensus leaders
    XCom was told to use and those it uses (member UUIDs), whether the group runs a single
    consensus leader, and, from MySQL 8.4, how often this member has suspected each member
    (``{"uuid":count,...}``; None for a server whose table lacks the column).
    """

    write_concurrency: int
    protocol_version: str
    leaders_preferred: tuple[str, ...]
    leaders_actual: tuple[str, ...]
    single_leader_capable: bool
    failure_suspicions: str | None = None


@dataclass(frozen=True, slots=True)
class MemberSnapshot:
    """One reading of the local member, as a source returns it.

    ``read_at_us`` is the source's clock (µs since the epoch) when it read. ``stats`` is the
    member's own row of ``replication_group_member_stats``; ``applier`` its
    ``group_replication_applier`` WL#7374 fields (lag not filled in: the agent computes it when
    it serves the row). ``health`` says how the read went.

    ``transactions_behind`` is ProxySQL's figure: how many transactions the member received
    from the group and has not applied, the GTID count of the ``group_replication_applier``
    channel's ``RECEIVED_TRANSACTION_SET`` (``replication_connection_status``) minus
    ``gtid_executed``; None when the member has no such channel (Group Replication never
    started). ``server`` holds its read_only, super_read_only and flow-control variables, and
    ``member_weight`` its ``group_replication_member_weight`` (None where the server lacks it);
    the weight is the agent's own (the SQL endpoint's ``@@`` variables), not gossiped, as is
    ``communication``, its ``replication_group_communication_information`` row (None where
    the server has no such table or the member is not ONLINE or RECOVERING).
    ``fault`` is set when the read worked but the member is not serving its group: Group
    Replication installed but not started (the member OFFLINE, as MySQL shows it).
    """

    member_id: str
    read_at_us: int
    view: GroupView
    stats: MemberStatsRow
    applier: ApplierStatusRow
    gtid_executed: GtidSet
    health: SourceHealth = field(default_factory=SourceHealth)
    transactions_behind: int | None = None
    server: ServerSettings = field(default_factory=ServerSettings)
    fault: SourceFault | None = None
    member_weight: int | None = None
    communication: CommunicationInfo | None = None

    def own_row(self) -> MemberRow | None:
        """Return the local member's row of ``replication_group_members``, if it is listed."""
        for row in self.view.members:
            if row.member_id == self.member_id:
                return row
        return None
