"""The tables an agent serves, built from its gossip state and a fresh read of its own member.

Pure: the caller passes the time, the local snapshot (or None when its server is down) and the
clock offsets it estimated. Rules (MySQL's where MySQL defines them):

* membership comes from the group's newest view (:func:`~grstats.agent.known.served_view`):
  the highest VIEW_ID read or heard, the local member's own view among equals (so grstats
  never contradicts MySQL there while its member is in the group's current view), else the
  most recently read; MEMBER_STATE and MEMBER_ROLE are Group Replication's own;
* except on the agent of a member split from that view (absent from it, or UNREACHABLE in
  it, while its server says ONLINE or RECOVERING: MySQL Shell's split-brain,
  :func:`~grstats.agent.known.split_state`): that agent serves its member's own view (itself
  ONLINE, the others as its server shows them), as MySQL does on that member
  (:func:`~grstats.agent.known.tables_view`); the verdict still judges the group's view;
* every member known but absent from that view stays listed (WL#2860) as OFFLINE, with its
  last rows; rows are sorted by MEMBER_ID;
* the local stats row is read now; other rows are the last values received; VIEW_ID is the
  served view's, the same on every row (``get_group_member_stats`` in
  plugin/group_replication/src/ps_information.cc); a member in the view whose stats were
  never received shows MySQL's empty remote row;
* APPLIER_LAG_SECONDS: while applying, the time of the member's last report on its own clock
  (the local one's last read) minus the original commit; otherwise end of apply minus
  original commit, as the member's server reported both; so a member not connected keeps the
  lag of its last report (:func:`~grstats.agent.known.lag_time`), in every table;
* TRANSACTIONS_BEHIND: the count the member's agent sent with its counts (the local one read
  now);
* GTID_EXECUTED: every member's last sample, the local one's too (never a fresher read), all
  sampled on the same wall-clock mark; SAMPLED_AT when, on this agent's clock;
* with ``extended``, every row also gets CONNECTED (its agent is heard and read its server
  within the silence: :func:`~grstats.agent.known.connected`), IN_VIEW, LAST_SEEN and AGE_MS
  (when the member's agent last reported it: the same in every table, see
  :func:`~grstats.agent.known.reported`) and SOURCE;
* ``replication_group_status`` and ``replication_group_member_status`` hold the group's verdict
  (:mod:`grstats.agent.status`), built from the same inputs;
* ``replication_group_events`` holds every member's events (:mod:`grstats.core.events`), on
  their reporters' clocks, so that every agent serves the same rows;
* ``replication_group_member_log`` holds every member's Group Replication error-log lines
  (:mod:`grstats.agent.member_log`), on their members' clocks, so that every agent serves the
  same rows; like the events, it has no ``extended`` columns;
* ``replication_group_member_views`` holds every member's own view of every member, and where
  two disagree (:mod:`grstats.agent.views`); it has AGE_MS and CONNECTED of its own, and no
  ``extended`` columns.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from grstats.agent.gossip import LOCAL, Events, Key, LogLines
from grstats.agent.known import (
    applier_of,
    connected,
    departed,
    executed_of,
    freshest_view,
    group_label,
    lag_time,
    member_ids,
    reported,
    stats_of,
    tables_view,
)
from grstats.agent.status import group_status
from grstats.agent.views import member_views
from grstats.core.rows import (
    EXTENDED_COLUMNS,
    REPLICATION_GROUP_EVENTS,
    REPLICATION_GROUP_MEMBER_GTID_EXECUTED,
    REPLICATION_GROUP_MEMBER_LAG,
    REPLICATION_GROUP_MEMBER_STATS,
    REPLICATION_GROUP_MEMBER_STATUS,
    REPLICATION_GROUP_MEMBER_VIEWS,
    REPLICATION_GROUP_MEMBERS,
    REPLICATION_GROUP_STATUS,
    Column,
    GtidExecutedRow,
)
from grstats.core.rows.member_log import REPLICATION_GROUP_MEMBER_LOG, MemberLogRow, log_order

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from grstats.agent.gossip import GossipState, Heard
    from grstats.agent.status import Progress
    from grstats.core.model import MemberSnapshot
    from grstats.core.rows import EventRow, GroupStatusRow, MemberStatusRow, Row, Value
    from grstats.core.stable_set import Stall

#: One served table: its columns and its rows.
Table = tuple[tuple[Column, ...], list[tuple["Value", ...]]]


class Served(Mapping[str, Table]):
    """The served tables by name, each built at its first lookup and then kept.

    A query names one or two tables: only those are built (``grstats query status`` does not
    pay for the GTID sets, nor ``query members`` for the verdict). Build and read it on the
    agent's event loop (or before the gossip state changes again): a table is built from the
    state as it is at its first lookup.
    """

    def __init__(
        self,
        builders: Mapping[str, Callable[[], Table]],
        group_name: str = "",
        group_label: str = "",
    ) -> None:
        self._builders = dict(builders)
        self._built: dict[str, Table] = {}
        #: GROUP_NAME of the served view (``''`` while none is known), without a table built.
        self.group_name = group_name
        #: GROUP_LABEL of the group (``''`` while none is known), without a table built.
        self.group_label = group_label

    def __getitem__(self, name: str) -> Table:
        table = self._built.get(name)
        if table is None:
            table = self._built[name] = self._builders[name]()
        return table

    def __iter__(self) -> Iterator[str]:
        return iter(self._builders)

    def __len__(self) -> int:
        return len(self._builders)

    def __contains__(self, name: object) -> bool:
        return name in self._builders


def served_tables(  # noqa: PLR0913  (every input of the tables is explicit)
    state: GossipState,
    local: MemberSnapshot | None,
    now_us: int,
    silence_us: int,
    *,
    offsets_us: Mapping[str, int] | None = None,
    offset_errors_us: Mapping[str, int] | None = None,
    extended: bool = False,
    cannot_read: tuple[str, str] | None = None,
    stall: Stall | None = None,
    progress: Mapping[str, Progress] | None = None,
) -> Served:
    """Return every served table, by name: columns and rows in MEMBER_ID order.

    Each table is built when first looked up (see :class:`Served`). ``cannot_read`` is (the
    agent's address, why) while the agent cannot read its own member (for the verdict);
    ``stall`` the stable set's stall its member shows (:mod:`grstats.core.stable_set`);
    ``progress`` each member's recovery or backlog progress (:mod:`grstats.agent.recovery`).
    """
    offsets = offsets_us or {}
    view = tables_view(local, freshest_view(state, local))
    in_view = {row.member_id: row for row in view.members}
    members = member_ids(state, local, view)

    def table(
        table_columns: Sequence[Column], rows: Callable[[], list[tuple[Row, str, Key | None]]]
    ) -> Callable[[], Table]:
        def build() -> Table:
            columns = tuple(table_columns) + (EXTENDED_COLUMNS if extended else ())
            values = []
            for row, member, key in rows():
                cells = row.values()
                if extended:
                    cells += _extended(
                        state,
                        local,
                        member,
                        key,
                        in_view=member in in_view,
                        now_us=now_us,
                        silence_us=silence_us,
                        offsets=offsets,
                    )
                values.append(cells)
            return columns, values

        return build

    def lag_at(member: str) -> int:
        """When ``member``'s lag is computed: its last report, on its clock."""
        return lag_time(state, local, member, now_us=now_us, offsets=offsets)

    verdict: list[tuple[GroupStatusRow, list[MemberStatusRow]]] = []

    def status() -> tuple[GroupStatusRow, list[MemberStatusRow]]:
        """The verdict, computed once for both of its tables."""
        if not verdict:
            verdict.append(
                group_status(
                    state,
                    local,
                    now_us,
                    silence_us,
                    offsets_us=offsets,
                    offset_errors_us=offset_errors_us,
                    cannot_read=cannot_read,
                    stall=stall,
                    progress=progress,
                )
            )
        return verdict[0]

    return Served(
        {
            REPLICATION_GROUP_MEMBERS.name: table(
                REPLICATION_GROUP_MEMBERS.columns,
                lambda: [(in_view.get(m) or departed(state, m), m, Key.COUNTS) for m in members],
            ),
            REPLICATION_GROUP_MEMBER_STATS.name: table(
                REPLICATION_GROUP_MEMBER_STATS.columns,
                lambda: [
                    (stats_of(state, local, m, view.view_id, m in in_view), m, Key.COUNTS)
                    for m in members
                ],
            ),
            REPLICATION_GROUP_MEMBER_LAG.name: table(
                REPLICATION_GROUP_MEMBER_LAG.columns,
                lambda: [(applier_of(state, local, m, lag_at(m)), m, Key.APPLIER) for m in members],
            ),
            REPLICATION_GROUP_MEMBER_GTID_EXECUTED.name: table(
                REPLICATION_GROUP_MEMBER_GTID_EXECUTED.columns,
                lambda: [(_gtid_row(state, m, offsets), m, Key.GTID_EXECUTED) for m in members],
            ),
            REPLICATION_GROUP_STATUS.name: lambda: (
                REPLICATION_GROUP_STATUS.columns,
                [status()[0].values()],
            ),
            REPLICATION_GROUP_MEMBER_STATUS.name: lambda: (
                REPLICATION_GROUP_MEMBER_STATUS.columns,
                [row.values() for row in status()[1]],
            ),
            REPLICATION_GROUP_EVENTS.name: lambda: (
                REPLICATION_GROUP_EVENTS.columns,
                [event.values() for event in group_events(state)],
            ),
            REPLICATION_GROUP_MEMBER_LOG.name: lambda: (
                REPLICATION_GROUP_MEMBER_LOG.columns,
                [line.values() for line in group_log(state)],
            ),
            REPLICATION_GROUP_MEMBER_VIEWS.name: lambda: (
                REPLICATION_GROUP_MEMBER_VIEWS.columns,
                [
                    row.values()
                    for row in member_views(
                        state, local, now_us=now_us, silence_us=silence_us, offsets=offsets
                    )
                ],
            ),
        },
        group_name=view.group_name if view.members else "",
        group_label=group_label(state, local, view) if view.members else "",
    )


def group_events(state: GossipState) -> list[EventRow]:
    """Every member's events as their agents keep them, ordered by time and reporter.

    Not corrected by the clock offsets: EVENT_TIME is the reporter's own, so every agent
    serves the same rows.
    """
    events: list[EventRow] = []
    for origin in state.origins.values():
        heard = origin.values.get(Key.EVENTS)
        if heard is not None and isinstance(heard.update.value, Events):
            events += heard.update.value.events
    return sorted(events, key=lambda e: (e.event_time, e.reported_by, e.member_id, e.event_type))


def group_log(state: GossipState) -> list[MemberLogRow]:
    """Every member's Group Replication log lines as their agents keep them, by LOGGED.

    Not corrected by the clock offsets: LOGGED is the member's own, as its server wrote it.
    """
    lines: list[MemberLogRow] = []
    for origin in state.origins.values():
        heard = origin.values.get(Key.LOG)
        if heard is not None and isinstance(heard.update.value, LogLines):
            lines += heard.update.value.lines
    return sorted(lines, key=log_order)


def _gtid_row(state: GossipState, member: str, offsets: Mapping[str, int]) -> GtidExecutedRow:
    """``member``'s last sampled gtid_executed, SAMPLED_AT on this agent's clock."""
    executed, sampled = executed_of(state, member)
    if sampled:
        sampled = max(0, sampled - offsets.get(member, 0))
    return GtidExecutedRow.of(member, executed, sampled)


def _extended(  # noqa: PLR0913  (the five columns need all of these)
    state: GossipState,
    local: MemberSnapshot | None,
    member: str,
    key: Key | None,
    *,
    in_view: bool,
    now_us: int,
    silence_us: int,
    offsets: Mapping[str, int],
) -> tuple[Value, ...]:
    """CONNECTED, IN_VIEW, LAST_SEEN, AGE_MS and SOURCE of ``member``'s row for ``key``.

    LAST_SEEN and AGE_MS are the member's last report (:func:`~grstats.agent.known.reported`),
    the same in every table; SOURCE is the agent its row for ``key`` came through.
    """
    heard: Heard | None = state.value(member, key) if key is not None else None
    if local is not None and member == local.member_id:
        source = LOCAL
    else:
        source = heard.via if heard is not None else ""
    seen = reported(state, local, member, offsets)
    live = connected(state, local, member, now_us=now_us, silence_us=silence_us, offsets=offsets)
    age = max(0, (now_us - seen) // 1000) if seen else None
    return ("YES" if live else "NO", "YES" if in_view else "NO", seen, age, source)
