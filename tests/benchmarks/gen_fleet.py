"""Write a fleet's spool fast: N members' day as today's collectors write it, sharded by group.

The fleet is ``--members N`` members in groups of ``--group-size M`` (N / M groups, labels
``g0000`` .. ), spooled by ``--collectors C`` collectors, each polling its share of the groups
once a second (collectors sharded by group, issue 44): collector ``c`` writes the spool
``OUT/collector-CC`` through the collector's own :class:`grstats.collector.spool.SpoolWriter`
with its defaults (segments sealed at 60 s of collection time or 64 MiB, columns files, the
default compression), one batch of its groups' records a second, as its group commit appends
them.

Fast because one template group (``gen_dataset.py``'s simulated group, ``--seed``) is stepped
and msgpack-encoded once a second, and every group's record is the template's bytes with the
identity swapped: the GR group name, the member UUIDs and the label (in ``group_label``, the
hosts and the agent), each the same length as the template's. So every group behaves the same
(same counters, states and lag) under its own name and members: a benchmark of volume, not of
the fleet's variety (``gen_dataset.py --groups`` makes that, about 36 k rows/s). ``--jobs``
processes write the collectors' spools side by side.

Examples::

    python tests/benchmarks/gen_fleet.py --members 1000 --out /data/fleet-day --jobs 2
    python tests/benchmarks/gen_fleet.py --members 20 --hours 2 --collectors 2 --out /tmp/f
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import sys
import time
import uuid
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgpack  # type: ignore[import-untyped]

try:  # run as python -m tests.benchmarks.gen_fleet (and as mypy reads it)
    from tests.benchmarks.gen_dataset import MIN_MEMBERS, Group
except ModuleNotFoundError:  # run as a script: its own folder is on sys.path
    from gen_dataset import MIN_MEMBERS, Group  # type: ignore[import-not-found,no-redef]

from grstats.collector.spool import SpoolSettings, SpoolWriter, usage
from grstats.core.log import configure_logging

MAX_GROUP_SIZE = 9  # what gen_dataset's group simulates
MAX_GROUPS = 10_000  # labels g0000 .. g9999, all the template's length
DEFAULT_START = "2026-01-05"
#: The first UTC day of the snapshots unless told.
START_DAY = dt.date.fromisoformat(DEFAULT_START)
SECONDS_A_DAY = 86_400


def label_of(index: int) -> str:
    """The label of group ``index`` (0-based): ``g0000``, ``g0001``, ..."""
    return f"g{index:04d}"


@dataclass(frozen=True)
class Identity:
    """What sets one group's records apart from the template's: its name, members and label."""

    group_uuid: str
    member_ids: tuple[str, ...]
    label: str


def identity_of(seed: int, index: int, size: int) -> Identity:
    """Group ``index``'s identity, from the seed (the template's is group 0's own)."""
    if index == 0:
        group = Group(seed, 0, members=size, label=label_of(0))
        return Identity(group.group_uuid, tuple(m.member_id for m in group.members), label_of(0))
    ids = random.Random(f"fleet-{seed}-{index}")
    group_uuid = str(uuid.UUID(int=ids.getrandbits(128), version=4))
    members = tuple(str(uuid.UUID(int=ids.getrandbits(128), version=4)) for _ in range(size))
    return Identity(group_uuid, members, label_of(index))


def swaps(template: Identity, group: Identity) -> list[tuple[bytes, bytes]]:
    """The byte replacements that turn the template's records into ``group``'s."""
    pairs = [(template.group_uuid, group.group_uuid), (template.label, group.label)]
    pairs += list(zip(template.member_ids, group.member_ids, strict=True))
    return [(old.encode(), new.encode()) for old, new in pairs]


def swapped(payload: bytes, replacements: list[tuple[bytes, bytes]]) -> bytes:
    """``payload`` with each replacement made (every one keeps the length)."""
    for old, new in replacements:
        payload = payload.replace(old, new)
    return payload


def collector_groups(groups: int, collectors: int, collector: int) -> list[int]:
    """The groups collector ``collector`` (0-based) polls: every ``collectors``-th one."""
    return list(range(collector, groups, collectors))


@dataclass(frozen=True)
class Job:
    """One collector's spool to write."""

    out: Path
    seed: int
    start_s: int
    seconds: int
    size: int
    groups: tuple[int, ...]


def quiet() -> None:
    """Log warnings only: a segment's seal is no news here (each job process calls it)."""
    configure_logging(level="warning")


def write_spool(job: Job) -> dict[str, Any]:
    """Write one collector's spool; return its figures."""
    began = time.monotonic()
    template_identity = identity_of(job.seed, 0, job.size)
    template = Group(job.seed, job.start_s, members=job.size, label=template_identity.label)
    replacements = [
        swaps(template_identity, identity_of(job.seed, index, job.size)) for index in job.groups
    ]
    pack = msgpack.Packer(use_bin_type=True).pack
    clock = [0.0]
    with SpoolWriter(job.out, SpoolSettings(), clock=lambda: clock[0]) as writer:
        if writer.last_sequence:
            raise SystemExit(f"--out: {job.out} already holds a spool; give an empty directory")
        for t in range(job.seconds):
            clock[0] = float(t)
            template.step(t)
            payload = pack(template.record(t, 0))
            writer.append_payloads([swapped(payload, pairs) for pairs in replacements])
    records = job.seconds * len(job.groups)
    return {
        "spool": str(job.out),
        "groups": len(job.groups),
        "records": records,
        "member_rows": records * job.size,
        "segments": writer.sealed,
        "bytes": writer.appended_bytes,
        "spool_bytes": usage(job.out).bytes,
        "seconds": round(time.monotonic() - began, 1),
    }


def generate(
    out: Path,
    *,
    members: int,
    group_size: int = 5,
    hours: float = 24.0,
    collectors: int = 1,
    jobs: int = 1,
    seed: int = 1,
    start: dt.date = START_DAY,
) -> dict[str, Any]:
    """Write the fleet's spools under ``out`` (``collector-CC``); return what was written."""
    groups = members // group_size
    start_s = int(dt.datetime.combine(start, dt.time(), dt.UTC).timestamp())
    seconds = round(hours * 3600)
    work = [
        Job(
            out / f"collector-{collector + 1:02d}",
            seed,
            start_s,
            seconds,
            group_size,
            tuple(collector_groups(groups, collectors, collector)),
        )
        for collector in range(collectors)
    ]
    began = time.monotonic()
    if jobs == 1:
        spools = [write_spool(job) for job in work]
    else:
        with ProcessPoolExecutor(jobs, initializer=quiet) as pool:
            spools = list(pool.map(write_spool, work))
    elapsed = time.monotonic() - began
    rows = sum(spool["member_rows"] for spool in spools)
    return {
        "out": str(out),
        "members": members,
        "group_size": group_size,
        "groups": groups,
        "hours": hours,
        "collectors": collectors,
        "jobs": jobs,
        "seed": seed,
        "start": start.isoformat(),
        "records": sum(spool["records"] for spool in spools),
        "member_rows": rows,
        "segments": sum(spool["segments"] for spool in spools),
        "bytes": sum(spool["bytes"] for spool in spools),
        "spool_bytes": sum(spool["spool_bytes"] for spool in spools),
        "seconds": round(elapsed, 1),
        "member_rows_per_second": round(rows / elapsed) if elapsed else None,
        "spools": spools,
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line, checked."""
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="\n\n".join(__doc__.split("\n\n")[1:]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--out", type=Path, required=True, help="directory of the spools (new)")
    parser.add_argument("--members", type=int, required=True, help="members of the fleet")
    parser.add_argument("--group-size", type=int, default=5, help="members a group (default 5)")
    parser.add_argument("--hours", type=float, default=24.0, help="hours of snapshots (default 24)")
    parser.add_argument(
        "--collectors", type=int, help="collectors, each its own spool (default --jobs)"
    )
    parser.add_argument("--jobs", type=int, default=1, help="processes (default 1)")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    parser.add_argument(
        "--start", default=DEFAULT_START, help=f"first UTC day (default {DEFAULT_START})"
    )
    args = parser.parse_args(argv)
    if not MIN_MEMBERS <= args.group_size <= MAX_GROUP_SIZE:
        parser.error(
            f"--group-size: {args.group_size} is not a number of members from {MIN_MEMBERS} "
            f"to {MAX_GROUP_SIZE}"
        )
    groups, rest = divmod(args.members, args.group_size)
    if rest or not 1 <= groups <= MAX_GROUPS:
        parser.error(
            f"--members: {args.members} is not 1 to {MAX_GROUPS} groups of --group-size "
            f"{args.group_size}"
        )
    if not 0 < args.hours <= 24 * 366:
        parser.error(f"--hours: {args.hours:g} is not a number of hours from above 0 to 8784")
    if args.jobs < 1:
        parser.error(f"--jobs: {args.jobs} is not a number of processes from 1")
    args.collectors = args.jobs if args.collectors is None else args.collectors
    if not 1 <= args.collectors <= groups:
        parser.error(f"--collectors: {args.collectors} is not a number from 1 to {groups} (groups)")
    return args


def main(argv: list[str] | None = None) -> int:
    """Write the fleet's spools and print what was written, as JSON."""
    args = parse_args(argv)
    quiet()
    if args.out.exists() and any(args.out.iterdir()):
        print(f"--out: {args.out} is not empty; give a new directory", file=sys.stderr)
        return 1
    summary = generate(
        args.out,
        members=args.members,
        group_size=args.group_size,
        hours=args.hours,
        collectors=args.collectors,
        jobs=args.jobs,
        seed=args.seed,
        start=dt.date.fromisoformat(args.start),
    )
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
