"""Write a realistic spool: a 9-member multi-primary group or a fleet, one snapshot a second.

The spool is what ``grstats collect`` would have written polling the agent of member 1 once a
second: every record holds the four tables with the extended columns, and is written through
the collector's own :class:`grstats.collector.spool.SpoolWriter`, so segments roll at the collector's
defaults (64 MiB or one hour of collection time) and are sealed the same way.

With ``--groups N`` (N > 1) it is the spool of one collector polling N groups (``--group``,
labels ``g01`` .. ``gNN``): each second one record per group, every record with its
``group_label`` and ``group_name`` (collector/records.py), the second's records appended as one
batch as the collector's group commit appends them, in the order their answers came. Each
group has its own GR group name, members and behaviour (see "A fleet" below).

What the group does (deterministic for a given --seed; day d is the same in every run that
reaches it, so the 1-day dataset is the first day of the 7-day one):

* three writers (members 1-3) share 140-420 tps that follow office hours (busy 08-18 UTC),
  with minute-to-minute noise; 0.3% of transactions conflict and are rolled back;
* a few batch jobs a day push 3,000 tps for about a minute: applier queues pass the
  flow-control threshold of 25,000 and flow control caps the writers until they drain;
* member 9 applies slowly: its applier queue and lag rise through the busy hours and drain
  at night;
* every day a few members are UNREACHABLE for 5-30 s, and a few agents are not heard for
  20-120 s (CONNECTED = NO, rows frozen, AGE_MS growing);
* member 7 leaves the group for 20 minutes on the first day and every 7th day after
  (OFFLINE, out of the view, new view ids), then rejoins: RECOVERING while it catches up,
  with its counters reset as a restarted member's are;
* GTID texts are MySQL's: three writers' blocks of 1,000,000 GNOs of the group's UUID;
  TRANSACTIONS_COMMITTED_ALL_MEMBERS and LAST_CONFLICT_FREE_TRANSACTION change every 30 s and
  gtid_executed every 60 s, as the agents exchange them.

With ``--members M`` (3 to 9) the group has M members: members 1-3 still write, member M is
the slow one, and member M - 2 leaves (member 4 of 5 or 6; of 3 or 4 members, the slow one).

A fleet (``--groups N``): group ``gNN``'s name, member UUIDs and days come from the seed and
its label, and so does its profile: its load (0.4 to 1.3 times the single group's), how fast
its slowest member applies, how many batch jobs it runs a day (0 to 4), and whether and when
a member leaves it. Two groups are picked (by the seed) to stand out in the fleet's ranking:
in one a member is cut off every night, UNREACHABLE for 10 to 30 minutes from a few minutes
after midnight UTC (the group runs with group_replication_member_expel_timeout at its maximum,
3600 s, so the member is not expelled); in the other the slowest member applies about half
what the writers commit in busy hours, so flow control throttles the writers for hours.

Examples::

    python tests/benchmarks/gen_dataset.py --days 1 --out /data/spool-1d
    python tests/benchmarks/gen_dataset.py --days 30 --out /data/spool-30d --format json
    python tests/benchmarks/gen_dataset.py --groups 50 --members 5 --days 1 --out /data/fleet
"""

from __future__ import annotations

import argparse
import bisect
import datetime as dt
import json
import math
import random
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack  # type: ignore[import-untyped]

from grstats.collector.compression import Compression
from grstats.collector.records import SCHEMA_VERSION, TABLE_NAMES
from grstats.collector.spool import SpoolSettings, SpoolWriter, SyncPolicy, usage
from grstats.core.gtid import GtidSet
from grstats.core.log import configure_logging
from grstats.core.rows import EXTENDED_COLUMNS, TABLES

MEMBERS = 9
#: How the collector stores sealed segments unless told otherwise.
DEFAULT_COMPRESSION = SpoolSettings().compression
WRITERS = (0, 1, 2)
WRITER_SHARE = (0.5, 0.3, 0.2)
BLOCK = 1_000_000  # group_replication_gtid_assignment_block_size
BASE_TPS = 420.0
CONFLICT_RATE = 0.003
CAPACITY_TPS = 1800.0  # a healthy member's applier
SLOW_CAPACITY_TPS = 460.0
FLOW_CONTROL_THRESHOLD = 25_000
OFFLINE_AT_S = 13 * 3600 + 7 * 60  # 13:07 UTC on day 0, 7, 14, ...
OFFLINE_FOR_S = 20 * 60
CHANNEL = "group_replication_applier"
DEFAULT_START = "2026-01-05"
MAX_GROUPS = 999
MIN_MEMBERS = 3  # the writers


@dataclass(frozen=True)
class Profile:
    """What sets one group apart; the defaults are the single group's.

    Attributes:
        load: the writers' demand, times the single group's.
        slow_capacity_tps: what the slow member applies a second at night (8% less when busy).
        spikes: how many batch jobs a day: from, to (excluded), as ``randrange`` takes them.
        offline_at_s: second of the day the leaving member leaves (days 0, 7, 14, ...).
        offline_for_s: how long it stays out (0: no member leaves).
        cut_off_s: a member is UNREACHABLE this long every night (0: never).
    """

    load: float = 1.0
    slow_capacity_tps: float = SLOW_CAPACITY_TPS
    spikes: tuple[int, int] = (2, 5)
    offline_at_s: int = OFFLINE_AT_S
    offline_for_s: int = OFFLINE_FOR_S
    cut_off_s: int = 0


def fleet_profiles(seed: int, groups: int) -> list[Profile]:
    """The profiles of a fleet of ``groups`` groups: one cut off every night, one throttled."""
    rng = random.Random(f"fleet-{seed}")
    order = rng.sample(range(groups), groups)
    cut_off, throttled = order[0], order[-1]
    profiles = []
    for index in range(groups):
        load = rng.uniform(0.4, 1.3)
        # The slow member applies 1.0 to 3.0 times what the single group's does, scaled by the
        # load (that one lags in busy hours); the throttled group's 0.55 times, so its applier
        # queue passes the flow-control threshold in busy hours and stays there.
        keeps_up = 0.55 if index == throttled else rng.uniform(1.0, 3.0)
        offline_for_s = rng.choice((0, 0, 0, 10 * 60, 20 * 60, 40 * 60))
        profiles.append(
            Profile(
                load=load,
                slow_capacity_tps=min(CAPACITY_TPS, SLOW_CAPACITY_TPS * load * keeps_up),
                spikes=rng.choice(((0, 1), (0, 3), (1, 4), (2, 5))),
                offline_at_s=rng.randrange(9 * 3600, 18 * 3600),
                offline_for_s=offline_for_s,
                cut_off_s=rng.randrange(10 * 60, 30 * 60) if index == cut_off else 0,
            )
        )
    return profiles


def busy(hour: float) -> float:
    """Office-hours load in [0, 1]: low at night, high from 08 to 18 UTC."""
    return 0.5 - 0.5 * math.cos(2 * math.pi * max(0.0, min(1.0, (hour - 6) / 14)))


@dataclass
class Member:
    """One member's true state, stepped every second."""

    index: int
    member_id: str
    host: str
    in_group: bool = True
    state: str = "ONLINE"
    checked: int = 0
    conflicts: int = 0
    rows_validating: int = 0
    remote_applied: int = 0
    local_proposed: int = 0
    local_rollback: int = 0
    cert_queue: int = 0
    applier_queue: float = 0.0
    applied: list[int] = field(default_factory=lambda: [0, 0, 0])  # per writer
    last_applied_gno: int = 0
    last_applied_commit_us: int = 0
    lag_s: float = 0.0
    recovering_until: int = -1


@dataclass(frozen=True)
class Episode:
    """A member not heard (CONNECTED = NO) or UNREACHABLE from ``start`` for ``seconds``."""

    member: int
    start: int
    seconds: int
    unreachable: bool


class Blocks:
    """GTID blocks as Group Replication assigns them: the next free block to a writer that
    has used up its own (``group_replication_gtid_assignment_block_size``), so a member's
    ``gtid_executed`` is one long interval plus a few blocks in progress."""

    def __init__(self) -> None:
        self.starts: list[list[int]] = [[] for _ in WRITERS]  # each writer's blocks, in order
        self.next_free = 1

    def grow(self, writer: int, count: int) -> None:
        """Make sure writer ``writer`` has blocks for ``count`` transactions."""
        starts = self.starts[writer]
        while len(starts) * BLOCK < count:
            starts.append(self.next_free)
            self.next_free += BLOCK

    def gno(self, writer: int, n: int) -> int:
        """The GNO of writer ``writer``'s ``n``-th transaction (0-based)."""
        return self.starts[writer][n // BLOCK] + n % BLOCK

    def text(self, group: str, counts: list[int]) -> str:
        """MySQL's text of the GTIDs of the first ``counts[w]`` transactions of each writer."""
        # Every block before the oldest block some writer has not filled is full.
        current = [
            starts[count // BLOCK] if count // BLOCK < len(starts) else self.next_free
            for starts, count in zip(self.starts, counts, strict=True)
        ]
        oldest = min(current)
        intervals = [(group, "", 1, oldest - 1)] if oldest > 1 else []
        for writer, count in enumerate(counts):
            starts = self.starts[writer]
            for index in range(bisect.bisect_left(starts, oldest), len(starts)):
                covered = min(BLOCK, count - index * BLOCK)
                if covered > 0:
                    intervals.append((group, "", starts[index], starts[index] + covered - 1))
        return GtidSet(intervals).to_text(",")


class Group:
    """The whole group, one second at a time; :meth:`record` is the collector's snapshot.

    ``label`` is the group's label in a fleet's spool (None: the single group, whose records
    carry no group keys, as before they existed); its hosts are then ``dbN.LABEL.example.net``.
    """

    def __init__(
        self,
        seed: int,
        start_s: int,
        *,
        members: int = MEMBERS,
        profile: Profile | None = None,
        label: str | None = None,
    ) -> None:
        self.seed = seed
        self.start_s = start_s
        self.size = members
        self.profile = profile or Profile()
        self.label = label
        self.slow = members - 1
        self.leaving = min(members - 1, max(len(WRITERS), members - 3))
        ids = random.Random(seed)
        self.group_uuid = str(uuid.UUID(int=ids.getrandbits(128), version=4))
        domain = "example.net" if label is None else f"{label}.example.net"
        self.members = [
            Member(i, str(uuid.UUID(int=ids.getrandbits(128), version=4)), f"db{i + 1}.{domain}")
            for i in range(members)
        ]
        self.agents = [f"db{i + 1}.{domain}:7400" for i in range(members)]
        self.view_base = f"{start_s * 10_000_000 + ids.randrange(1000)}"
        self.view_number = 1
        self.view_id = f"{self.view_base}:{self.view_number}"
        self.committed = [0, 0, 0]
        self.blocks = Blocks()
        self.carry = [0.0, 0.0, 0.0]
        self.conflict_carry = 0.0
        self.throttled_s = 0
        self.episodes: dict[int, Episode] = {}
        self.spikes: list[tuple[int, int]] = []
        self.day = -1
        self.rng = random.Random(seed)
        self.noise = 1.0
        self.texts: dict[str, str] = {}
        self.stable = [0, 0, 0]
        self.last_certified_gno = 0
        self.executed_text = [""] * members
        # What the asked agent last heard of each member: rows frozen while it is not heard.
        self.heard_at_us = [0] * members
        self.gtid_heard_at_us = [0] * members
        self.served_stats: list[list[Any]] = [[] for _ in range(members)]
        self.served_lag: list[list[Any]] = [[] for _ in range(members)]
        self.served_gtid = [""] * members
        self.columns = {
            name: [c.name for c in (*TABLES[name].columns, *EXTENDED_COLUMNS)]
            for name in TABLE_NAMES
        }

    # -- the day's plan --------------------------------------------------------------------

    def _plan_day(self, day: int) -> None:
        self.day = day
        self.rng = random.Random(self.seed * 100_003 + day)
        rng, base, size = self.rng, day * 86_400, self.size
        self.spikes = sorted(
            (base + rng.randrange(9 * 3600, 20 * 3600), rng.randrange(45, 100))
            for _ in range(rng.randrange(*self.profile.spikes))
        )
        self.episodes = {}
        for _ in range(rng.randrange(2, 5)):
            start = base + rng.randrange(86_400 - 200)
            self.episodes[start] = Episode(
                rng.randrange(1, size - 1), start, rng.randrange(5, 31), unreachable=True
            )
        for _ in range(rng.randrange(3, 6)):
            start = base + rng.randrange(86_400 - 200)
            self.episodes[start] = Episode(
                rng.randrange(1, size), start, rng.randrange(20, 121), unreachable=False
            )
        if self.profile.cut_off_s:
            # Cut off a few minutes after midnight; not expelled, as with
            # group_replication_member_expel_timeout at its maximum (3600 s).
            start = base + rng.randrange(60, 300)
            self.episodes[start] = Episode(
                rng.randrange(1, size), start, self.profile.cut_off_s, unreachable=True
            )

    # -- one second ------------------------------------------------------------------------

    def step(self, t: int) -> None:  # noqa: C901, PLR0912, PLR0915 (one second of the whole group)
        """Advance the group to second ``t`` since the start."""
        day, second = divmod(t, 86_400)
        if day != self.day:
            self._plan_day(day)
        rng = self.rng
        if second % 60 == 0:
            self.noise = rng.uniform(0.8, 1.2)
        demand = BASE_TPS * self.profile.load * (0.33 + 0.67 * busy(second / 3600)) * self.noise
        for start, seconds in self.spikes:
            if start <= t < start + seconds:
                demand = 3000.0
        self._membership(t, day, second)
        online = [m for m in self.members if m.in_group]
        over = [
            m
            for m in online
            if m.state == "ONLINE" and max(m.applier_queue, m.cert_queue) > FLOW_CONTROL_THRESHOLD
        ]
        tps = demand
        if over:  # flow control: writers get 90% of the slowest member's capacity
            tps = min(demand, 0.9 * min(self._capacity(m, second) for m in over))
            self.throttled_s += 1
        writes = []
        for w, share in enumerate(WRITER_SHARE):
            exact = tps * share + self.carry[w]
            n = int(exact)
            self.carry[w] = exact - n
            writes.append(n)
            self.committed[w] += n
            self.blocks.grow(w, self.committed[w])
        total = sum(writes)
        exact_conflicts = total * CONFLICT_RATE + self.conflict_carry
        conflicts = int(exact_conflicts)
        self.conflict_carry = exact_conflicts - conflicts
        if total:
            self.last_certified_gno = self.blocks.gno(0, self.committed[0] - 1)
        now_us = (self.start_s + t) * 1_000_000
        for m in online:
            m.checked += total + conflicts
            m.conflicts += conflicts
            if m.index in WRITERS:
                w = m.index
                m.local_proposed += writes[w] + round(conflicts * WRITER_SHARE[w])
                m.local_rollback += round(conflicts * WRITER_SHARE[w])
                m.applied[w] = self.committed[w]
            remote = total - (writes[m.index] if m.index in WRITERS else 0)
            capacity = self._capacity(m, second)
            if m.recovering_until >= t:
                capacity *= 1.5
            m.applier_queue += remote
            done = min(m.applier_queue, capacity * rng.uniform(0.9, 1.1))
            m.applier_queue -= done
            m.remote_applied += int(done)
            for w in WRITERS:
                if w != m.index:
                    m.applied[w] = max(
                        m.applied[w], self.committed[w] - int(m.applier_queue * WRITER_SHARE[w])
                    )
            m.cert_queue = (
                rng.randrange(200, 2000) if demand >= 3000 else rng.choice((0, 0, 0, 1, 2, 3))
            )
            m.lag_s = m.applier_queue / capacity + rng.uniform(0.0005, 0.004)
            m.last_applied_gno = self.blocks.gno(0, max(m.applied[0] - 1, 0))
            m.last_applied_commit_us = now_us - int(m.lag_s * 1_000_000)
            if m.state == "RECOVERING" and t > m.recovering_until and m.applier_queue < capacity:
                m.state = "ONLINE"
        committed_total = sum(self.committed)
        for m in online:
            m.rows_validating = committed_total - sum(self.stable) + rng.randrange(0, 50)
        if second % 30 == 0:
            self.stable = [min(m.applied[w] for m in online) for w in WRITERS]
            self.texts["committed_all"] = self.blocks.text(self.group_uuid, self.stable)
            self.texts["conflict_free"] = f"{self.group_uuid}:{self.last_certified_gno}"
        if second % 60 == 0:
            for m in online:
                self.executed_text[m.index] = self.blocks.text(self.group_uuid, m.applied)

    def _capacity(self, m: Member, second: int) -> float:
        if m.index == self.slow:
            return self.profile.slow_capacity_tps * (1.0 - 0.08 * busy(second / 3600))
        return CAPACITY_TPS

    def _membership(self, t: int, day: int, second: int) -> None:
        leaves_at, out_s = self.profile.offline_at_s, self.profile.offline_for_s
        if not out_s or day % 7:
            return
        m = self.members[self.leaving]
        if second == leaves_at:
            m.in_group, m.state = False, "OFFLINE"
            self._new_view()
        elif second == leaves_at + out_s:
            backlog = sum(self.committed) - sum(m.applied)
            restarted = Member(m.index, m.member_id, m.host, applied=list(m.applied))
            restarted.state, restarted.applier_queue = "RECOVERING", float(backlog)
            restarted.recovering_until = t + 60
            self.members[self.leaving] = restarted
            self._new_view()

    def _new_view(self) -> None:
        self.view_number += 1
        self.view_id = f"{self.view_base}:{self.view_number}"

    # -- the snapshot ----------------------------------------------------------------------

    def record(self, t: int, jitter_us: int) -> dict[str, Any]:
        """The collector's record of second ``t``: what member 1's agent serves."""
        collected_us = (self.start_s + t) * 1_000_000 + jitter_us
        served_us = collected_us + 1200 + jitter_us // 4
        silent = self._silent(t)
        members_rows, stats_rows, lag_rows, gtid_rows = [], [], [], []
        texts = self.texts
        for m in self.members:
            i = m.index
            heard = i not in silent
            if heard:
                self.heard_at_us[i] = served_us - (jitter_us * 7 + i * 97_000) % 1_000_000
                self.served_stats[i] = [
                    CHANNEL,
                    self.view_id,
                    m.member_id,
                    m.cert_queue,
                    m.checked,
                    m.conflicts,
                    m.rows_validating,
                    texts.get("committed_all", ""),
                    texts.get("conflict_free", ""),
                    int(m.applier_queue),
                    m.remote_applied,
                    m.local_proposed,
                    m.local_rollback,
                ]
                self.served_lag[i] = self._lag_row(m, served_us)
                if self.served_gtid[i] != self.executed_text[i] or not self.gtid_heard_at_us[i]:
                    self.served_gtid[i] = self.executed_text[i]
                    self.gtid_heard_at_us[i] = self.heard_at_us[i]
            last_seen = self.heard_at_us[i]
            age_ms = (served_us - last_seen) // 1000
            connected = "NO" if silent.get(i, 0) >= 10 else "YES"
            in_view = "YES" if m.in_group else "NO"
            source = self.agents[i]
            ext = [connected, in_view, last_seen, age_ms, source]
            state = "UNREACHABLE" if i in silent and self._unreachable(t, i) else m.state
            members_rows.append(
                [
                    CHANNEL,
                    m.member_id,
                    m.host,
                    3306,
                    state,
                    "PRIMARY" if m.in_group else "",
                    "8.0.36",
                    "XCom",
                    *ext,
                ]
            )
            stats_rows.append([*self.served_stats[i], *ext])
            lag_rows.append([*self.served_lag[i], *ext])
            gtid_seen = self.gtid_heard_at_us[i]
            gtid_rows.append(
                [
                    m.member_id,
                    self.served_gtid[i],
                    connected,
                    in_view,
                    gtid_seen,
                    (served_us - gtid_seen) // 1000,
                    source,
                ]
            )
        columns = self.columns
        snapshot: dict[str, Any] = {
            "schema": SCHEMA_VERSION,
            "collected_at_us": collected_us,
            "agent": self.agents[0],
            "agent_member": self.members[0].member_id,
            "served_at_us": served_us,
            "tables": {
                TABLE_NAMES[0]: {"columns": columns[TABLE_NAMES[0]], "rows": members_rows},
                TABLE_NAMES[1]: {"columns": columns[TABLE_NAMES[1]], "rows": stats_rows},
                TABLE_NAMES[2]: {"columns": columns[TABLE_NAMES[2]], "rows": lag_rows},
                TABLE_NAMES[3]: {"columns": columns[TABLE_NAMES[3]], "rows": gtid_rows},
            },
        }
        if self.label is not None:  # the keys' order is record_from_response's
            snapshot["group_label"] = self.label
            snapshot["group_name"] = self.group_uuid
        return snapshot

    def _silent(self, t: int) -> dict[int, int]:
        """Members whose agent is not heard at ``t``, with how many seconds they have been."""
        silent = {}
        for start, episode in self.episodes.items():
            if start <= t < start + episode.seconds:
                silent[episode.member] = t - start
        return silent

    def _unreachable(self, t: int, index: int) -> bool:
        return any(
            e.unreachable and e.member == index and s <= t < s + e.seconds
            for s, e in self.episodes.items()
        )

    def _lag_row(self, m: Member, now_us: int) -> list[Any]:
        group = self.group_uuid
        applied = f"{group}:{m.last_applied_gno}"
        commit = m.last_applied_commit_us
        queued = f"{group}:{self.blocks.gno(0, max(self.committed[0] - 1, 0))}"
        queued_commit = now_us - 900 - m.index * 13
        busy_applier = m.applier_queue >= 1
        applying = f"{group}:{m.last_applied_gno + 1}" if busy_applier else ""
        applying_commit = commit + 2500 if busy_applier else 0
        return [
            CHANNEL,
            m.member_id,
            queued,
            queued_commit,
            queued_commit,
            queued_commit + 500,
            queued_commit + 550,
            "",
            0,
            0,
            0,
            applied,
            commit,
            commit,
            now_us - 400,
            now_us - 150,
            applying,
            applying_commit,
            applying_commit,
            now_us - 100 if busy_applier else 0,
            round(m.lag_s, 6),
            int(m.applier_queue),  # TRANSACTIONS_BEHIND
            0.00055,  # TRANSPORT_SECONDS: queued 550 us after the original commit (above)
            round(m.lag_s * 0.9, 6),  # WAITING_SECONDS: most of the lag is the queue's
            0.00025,  # APPLY_SECONDS: LAST_APPLIED start to end apply (above)
        ]


def make_groups(seed: int, start_s: int, groups: int, members: int) -> list[Group]:
    """The single group (``groups`` = 1), or a fleet's groups ``g01`` .. with their profiles."""
    if groups == 1:
        return [Group(seed, start_s, members=members)]
    width = max(2, len(str(groups)))
    fleet = []
    for index, profile in enumerate(fleet_profiles(seed, groups), start=1):
        label = f"g{index:0{width}d}"
        group_seed = random.Random(f"fleet-{seed}-{label}").getrandbits(64)
        fleet.append(Group(group_seed, start_s, members=members, profile=profile, label=label))
    return fleet


def generate(
    out: Path,
    days: float,
    seed: int,
    start: dt.date,
    progress: bool = True,
    *,
    groups: int = 1,
    members: int = MEMBERS,
    compression: Compression = DEFAULT_COMPRESSION,
) -> dict[str, Any]:
    """Write the spool into ``out`` and return what was written.

    ``bytes`` is the records' (frames'), ``spool_bytes`` what the spool takes on disk: its
    sealed segments, stored with ``compression``, and their columns files.
    """
    start_s = int(dt.datetime.combine(start, dt.time(), dt.UTC).timestamp())
    seconds = int(days * 86_400)
    fleet = make_groups(seed, start_s, groups, members)
    sim_clock = [0.0]
    settings = SpoolSettings(sync=SyncPolicy.SEAL, compression=compression)
    pack = msgpack.Packer(use_bin_type=True).pack
    began = time.monotonic()
    jitter = random.Random(seed + 1)
    with SpoolWriter(out, settings, clock=lambda: sim_clock[0]) as writer:
        if writer.last_sequence:
            raise SystemExit(f"--out: {out} already holds a spool; give an empty directory")
        for t in range(seconds):
            sim_clock[0] = float(t)
            snapshots = []
            for group in fleet:
                group.step(t)
                snapshots.append(group.record(t, jitter.randrange(0, 4000)))
            # The collector appends a tick's records as their answers come: one batch.
            snapshots.sort(key=lambda snapshot: snapshot["served_at_us"])
            writer.append_payloads([pack(snapshot) for snapshot in snapshots])
            if progress and (t + 1) % 3600 == 0:
                hours = (t + 1) // 3600
                rate = (t + 1) * groups / (time.monotonic() - began)
                print(
                    f"gen: {hours} h of {seconds // 3600} h, {rate:,.0f} records/s",
                    file=sys.stderr,
                    flush=True,
                )
    sealed, size = writer.sealed, writer.appended_bytes
    elapsed = time.monotonic() - began
    records = seconds * groups
    return {
        "out": str(out),
        "days": days,
        "seed": seed,
        "start": start.isoformat(),
        "groups": groups,
        "members": members,
        "records": records,
        "member_rows": records * members,
        "segments": sealed,
        "bytes": size,
        "compression": compression.value,
        "spool_bytes": usage(out).bytes,
        "seconds": round(elapsed, 1),
        "records_per_second": round(records / elapsed) if elapsed else None,
        "throttled_seconds": sum(group.throttled_s for group in fleet),
    }


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, write the spool and print what was written."""
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="\n\n".join(__doc__.split("\n\n")[1:]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--out", type=Path, required=True, help="spool directory (new or empty)")
    parser.add_argument(
        "--days", type=float, default=1.0, help="days of snapshots (e.g. 1, 7, 30; default 1)"
    )
    parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    parser.add_argument(
        "--groups",
        type=int,
        default=1,
        help=f"groups (default 1; above 1 a fleet g01 .. gNN, at most {MAX_GROUPS})",
    )
    parser.add_argument(
        "--members",
        type=int,
        default=MEMBERS,
        help=f"members of each group ({MIN_MEMBERS} to {MEMBERS}; default {MEMBERS})",
    )
    parser.add_argument(
        "--start",
        default=DEFAULT_START,
        help=f"first day, YYYY-MM-DD, 00:00 UTC (default {DEFAULT_START})",
    )
    parser.add_argument(
        "--compression",
        choices=[codec.value for codec in Compression],
        default=DEFAULT_COMPRESSION.value,
        help="how sealed segments and columns files are stored "
        f"(default {DEFAULT_COMPRESSION.value}, the collector's)",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    args = parser.parse_args(argv)
    if not 0 < args.days <= 366:
        parser.error(f"--days: {args.days:g} is not a number of days from above 0 to 366")
    if not 1 <= args.groups <= MAX_GROUPS:
        parser.error(f"--groups: {args.groups} is not a number of groups from 1 to {MAX_GROUPS}")
    if not MIN_MEMBERS <= args.members <= MEMBERS:
        parser.error(
            f"--members: {args.members} is not a number of members from {MIN_MEMBERS} to {MEMBERS}"
        )
    try:
        start = dt.date.fromisoformat(args.start)
    except ValueError:
        parser.error(f"--start: {args.start!r} is not a date YYYY-MM-DD")
    if args.out.exists() and any(args.out.iterdir()):
        parser.error(f"--out: {str(args.out)!r} is not empty")
    configure_logging(level="warning")
    summary = generate(
        args.out,
        args.days,
        args.seed,
        start,
        progress=not args.quiet,
        groups=args.groups,
        members=args.members,
        compression=Compression(args.compression),
    )
    if args.format == "json":
        print(json.dumps(summary, indent=2))
    else:
        fleet = f" of {args.groups} groups" if args.groups > 1 else ""
        print(
            f"wrote {summary['records']:,} records{fleet} ({summary['member_rows']:,} member rows) in "
            f"{summary['segments']} segments, {summary['bytes'] / 2**20:,.0f} MiB of records "
            f"({summary['spool_bytes'] / 2**20:,.1f} MiB on disk, {summary['compression']}), "
            f"to {summary['out']} in {summary['seconds']} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
