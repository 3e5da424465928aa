"""Benchmark grstats' GtidSet against mysql-replication's GtidSet, in one process.

Operations: parse (text to object), format (object to text), union, difference and
intersection, at 1, 100 and 10,000 intervals per UUID and 1, 10 and 50 UUIDs; then the stable
set of a group (``GtidSet.intersection_of`` of 9 members with 10,000 intervals each) in three
shapes. Both libraries get the same inputs: the peer's objects are parsed from the very texts
grstats parses, outside the timed region.

Inputs are deterministic (seeded): per UUID, intervals of 1 to 100 GNOs separated by gaps of
1 to 3 GNOs, starting at GNO 1. Union joins the even-indexed and the odd-indexed intervals of
a set (disjoint, as the peer raises on overlap), difference removes the odd-indexed ones and
intersection keeps them (grstats only: the peer has no intersection).

grstats is timed as ``timeit`` does: a loop count that fills ``--min-time``, best of several
repeats, garbage collector off. The peer is quadratic in intervals per UUID, so its 1-UUID cells
run once to three times, and a cell with more UUIDs runs only if its estimate (the 1-UUID
figure times the UUIDs, plus parsing its inputs) fits in ``--peer-budget`` seconds.

Run with ``make bench``; ``--quick`` is a smoke run with small sizes. The script exits 0 even
when a target fails: it measures, and prints FAIL where a target is missed.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import sys
import time
import uuid
from dataclasses import asdict, dataclass
from functools import partial
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grstats.core.gtid import GtidSet

if TYPE_CHECKING:
    from collections.abc import Callable

try:
    from pymysqlreplication.gtid import GtidSet as PeerSet
except ImportError:  # the bench extra is not installed: grstats figures only
    PeerSet = None

PEER = "mysql-replication"
OPERATIONS = ("parse", "format", "union", "difference", "intersection")
QUADRATIC = ("parse", "union", "difference")  # peer operations that add interval by interval
MEMBERS = 9  # the largest Group Replication group
TAIL = 40  # the latest intervals, that members have applied to different extents


# -- inputs --------------------------------------------------------------------------------


def random_uuid(rng: random.Random) -> str:
    """Return a random version-4 UUID drawn from ``rng``."""
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def history(rng: random.Random, count: int, first: int = 1) -> list[tuple[int, int]]:
    """Return ``count`` inclusive intervals of 1-100 GNOs separated by gaps of 1-3 GNOs."""
    intervals = []
    gno = first
    for _ in range(count):
        length = rng.randint(1, 100)
        intervals.append((gno, gno + length - 1))
        gno += length + rng.randint(1, 3)
    return intervals


def base_set(intervals: int, uuids: int, seed: int = 1) -> GtidSet:
    """Return the deterministic base set: ``uuids`` distinct UUIDs of ``intervals`` each."""
    rng = random.Random(f"base-{intervals}-{uuids}-{seed}")
    names: set[str] = set()
    while len(names) < uuids:
        names.add(random_uuid(rng))
    return GtidSet(
        (name, "", start, end) for name in sorted(names) for start, end in history(rng, intervals)
    )


def halves(base: GtidSet) -> tuple[GtidSet, GtidSet]:
    """Return the even-indexed and the odd-indexed intervals of each UUID of ``base``."""
    even: list[tuple[str, str, int, int]] = []
    odd: list[tuple[str, str, int, int]] = []
    index: dict[str, int] = {}
    for interval in base:
        position = index.get(interval.uuid, 0)
        index[interval.uuid] = position + 1
        (odd if position & 1 else even).append(
            (interval.uuid, interval.tag, interval.start, interval.end)
        )
    return GtidSet(even), GtidSet(odd)


def stable_members(
    shape: str, intervals: int, seed: int = 1
) -> tuple[list[GtidSet], GtidSet | None]:
    """Return the ``gtid_executed`` of 9 members in ``shape`` and their expected intersection.

    Shapes: ``tails`` (same history, each member has applied a different number, 0 to 40, of
    the latest intervals), ``holes`` (as ``tails``, and each member misses 3 random GNOs of the
    history) and ``random`` (9 independent random sets). The expected intersection is None for
    ``random``: the caller computes it another way.
    """
    rng = random.Random(f"stable-{shape}-{intervals}-{seed}")
    name = random_uuid(rng)
    if shape == "random":
        members = [GtidSet((name, "", *i) for i in history(rng, intervals)) for _ in range(MEMBERS)]
        return members, None
    past = history(rng, intervals + TAIL)
    applied = rng.sample(range(TAIL + 1), MEMBERS)
    members = []
    missing: set[int] = set()
    for count in applied:
        member = GtidSet((name, "", *i) for i in past[: intervals + count])
        if shape == "holes":
            holes = [rng.randint(*past[rng.randrange(intervals)]) for _ in range(3)]
            missing.update(holes)
            member -= GtidSet((name, "", gno, gno) for gno in holes)
        members.append(member)
    expected = GtidSet((name, "", *i) for i in past[: intervals + min(applied)])
    return members, expected - GtidSet((name, "", gno, gno) for gno in missing)


def check(correct: bool, what: str) -> None:
    """Stop the run if a result is wrong: a fast wrong answer is no benchmark figure."""
    if not correct:
        raise RuntimeError(f"wrong result: {what}")


# -- timing --------------------------------------------------------------------------------


def _run(func: Callable[[], object], loops: int) -> float:
    """Return the seconds ``loops`` calls of ``func`` take."""
    started = time.perf_counter()
    for _ in range(loops):
        func()
    return time.perf_counter() - started


def measure(func: Callable[[], object], repeat: int, min_time: float) -> float:
    """Return the best seconds per call over ``repeat`` runs of an auto-chosen loop count.

    The loop count grows 1, 2, 5, 10, 20, ... until a run takes ``min_time``; that calibration
    run counts as the first repeat, so a call slower than ``min_time`` runs ``repeat`` times.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        loops = 1
        while (elapsed := _run(func, loops)) < min_time:
            loops = loops * 5 // 2 if str(loops)[0] == "2" else loops * 2
        samples = [elapsed / loops]
        samples += [_run(func, loops) / loops for _ in range(repeat - 1)]
    finally:
        if enabled:
            gc.enable()
    return min(samples)


# -- the grid ------------------------------------------------------------------------------


@dataclass
class Row:
    """One cell of the table: seconds per call, ``None`` where not run."""

    operation: str
    intervals: int
    uuids: int
    grstats: float
    peer: float | None = None
    peer_note: str = ""


def peer_difference(left: Any, right: Any) -> Any:
    """Return ``left - right`` with the peer: its GtidSet has no ``-``, its Gtid does."""
    by_sid = {gtid.sid: gtid for gtid in right.gtids}
    return PeerSet([gtid - by_sid[gtid.sid] if gtid.sid in by_sid else gtid for gtid in left.gtids])


def grstats_cell(base: GtidSet, repeat: int, min_time: float) -> dict[str, float]:
    """Return grstats' seconds per operation on ``base``, checking every result."""
    even, odd = halves(base)
    text = str(base)
    check(GtidSet.parse(text) == base, "parse(format(base)) is not base")
    check(even | odd == base, "even | odd is not base")
    check(base - odd == even, "base - odd is not even")
    check(base & odd == odd, "base & odd is not odd")
    calls: dict[str, Callable[[], object]] = {
        "parse": lambda: GtidSet.parse(text),
        "format": lambda: str(base),
        "union": lambda: even | odd,
        "difference": lambda: base - odd,
        "intersection": lambda: base & odd,
    }
    return {name: measure(call, repeat, min_time) for name, call in calls.items()}


def peer_cell(base: GtidSet, estimates: dict[str, float], min_time: float) -> dict[str, float]:
    """Return the peer's seconds per operation on ``base`` (no intersection), checking results.

    Each operation runs 1 to 3 times: as often as its ``estimates`` (seconds) fit in 20 s.
    """
    even, odd = halves(base)
    text = str(base)
    kept: list[Any] = []
    results: dict[str, float] = {}

    def timed(name: str, call: Callable[[], Any]) -> Any:
        count = max(1, min(3, int(20.0 / max(estimates.get(name, 0.0), 1e-9))))
        results[name] = measure(lambda: kept.append(call()), count, min_time)
        result = kept[-1]
        kept.clear()
        return result

    peer_base = timed("parse", lambda: PeerSet(text))
    peer_even, peer_odd = PeerSet(str(even)), PeerSet(str(odd))
    checks = {
        "format": (timed("format", lambda: str(peer_base)), text),
        "union": (str(timed("union", lambda: peer_even + peer_odd)), base.to_text(",")),
        "difference": (
            str(timed("difference", lambda: peer_difference(peer_base, peer_odd))),
            even.to_text(","),
        ),
    }
    for name, (got, expected) in checks.items():
        if got.replace(",\n", ",") != expected.replace(",\n", ","):
            print(f"warning: {PEER} {name} differs from grstats at {base.count()} GTIDs")
    return results


def grid(
    sizes: tuple[int, ...], uuid_counts: tuple[int, ...], args: argparse.Namespace
) -> tuple[list[Row], list[str]]:
    """Measure both libraries over ``sizes`` x ``uuid_counts``; say why peer cells were skipped."""
    rows: list[Row] = []
    skipped: list[str] = []
    one_uuid: dict[str, float] = {}  # the peer's figures at 1 UUID for the current size
    previous = 0
    for intervals in sizes:
        for uuids in uuid_counts:
            base = base_set(intervals, uuids)
            mine = grstats_cell(base, args.repeat, args.min_time)
            theirs: dict[str, float] = {}
            note = "" if PeerSet is not None else "not installed"
            if PeerSet is not None and uuids == 1:
                growth = (intervals / previous) if previous else 1.0
                guess = {
                    op: t * growth ** (2 if op in QUADRATIC else 1) for op, t in one_uuid.items()
                }
                theirs = peer_cell(base, guess, args.min_time)
                one_uuid = theirs
            elif PeerSet is not None:
                cost = uuids * (sum(one_uuid.values()) + one_uuid["parse"] / 2)  # + its inputs
                if cost <= args.peer_budget:
                    theirs = peer_cell(
                        base, {op: t * uuids for op, t in one_uuid.items()}, args.min_time
                    )
                else:
                    note = "not run (quadratic)"
                    skipped.append(skip_reason(intervals, uuids, one_uuid, cost, args.peer_budget))
            for operation in OPERATIONS:
                peer_note = "n/a: no intersection" if operation == "intersection" else note
                if note.startswith("not run") and operation in QUADRATIC:
                    peer_note += f"; 1 UUID: {duration(one_uuid[operation])}"
                rows.append(
                    Row(
                        operation,
                        intervals,
                        uuids,
                        mine[operation],
                        theirs.get(operation),
                        peer_note,
                    )
                )
            print(f"  measured {intervals:,} intervals x {uuids} UUIDs", file=sys.stderr)
        previous = intervals
    return rows, skipped


def skip_reason(
    intervals: int, uuids: int, one_uuid: dict[str, float], cost: float, budget: float
) -> str:
    """Return why the peer did not run at ``intervals`` x ``uuids``."""
    figures = ", ".join(f"{op} {duration(one_uuid[op])}" for op in QUADRATIC)
    return (
        f"{PEER} not run at {intervals:,} intervals x {uuids} UUIDs: estimated {duration(cost)} "
        f"(its 1-UUID figures, {figures}, times {uuids} UUIDs, plus parsing the inputs of union "
        f"and difference), over the {duration(budget)} budget; format needs a parsed set too."
    )


def stable(intervals: int, args: argparse.Namespace) -> dict[str, float]:
    """Return the seconds of the 9-way ``intersection_of`` for each member shape, checked."""
    figures: dict[str, float] = {}
    for shape in ("tails", "holes", "random"):
        members, expected = stable_members(shape, intervals)
        if expected is None:  # an independent check: intersect one member at a time
            expected = members[0]
            for member in members[1:]:
                expected -= expected - member
        check(GtidSet.intersection_of(members) == expected, f"stable set, {shape}")
        call: Callable[[], object] = partial(GtidSet.intersection_of, members)
        figures[shape] = measure(call, args.repeat, args.min_time)
    return figures


# -- report --------------------------------------------------------------------------------

TARGET_INTERVALS = 10_000
SHAPES = {
    "tails": "shared history, different tails",
    "holes": "shared history, tails and 3 random holes each",
    "random": "9 independent random sets (adversarial)",
}


def duration(seconds: float) -> str:
    """Return ``seconds`` with three significant digits in a readable unit."""
    units = (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6))
    unit, scale = next((pair for pair in units if seconds >= pair[1]), units[-1])
    value = seconds / scale
    return f"{value:.3g} {unit}" if value < 100 else f"{value:.0f} {unit}"


def ratio(row: Row) -> str:
    """Return the peer's time over grstats' time, or a dash."""
    if row.peer is None:
        return "-"
    times = row.peer / row.grstats
    return f"{times:,.0f}x" if times >= 10 else f"{times:.2g}x"


def table(rows: list[Row]) -> str:
    """Return the markdown table of ``rows``."""
    lines = [
        f"| operation | intervals/UUID | UUIDs | grstats | {PEER} | ratio (peer/grstats) |",
        "|---|--:|--:|--:|--:|--:|",
    ]
    for row in rows:
        peer = duration(row.peer) if row.peer is not None else row.peer_note
        lines.append(
            f"| {row.operation} | {row.intervals:,} | {row.uuids} | {duration(row.grstats)} "
            f"| {peer} | {ratio(row)} |"
        )
    return "\n".join(lines)


def targets(rows: list[Row], shapes: dict[str, float], intervals: int) -> list[dict[str, Any]]:
    """Return the issue's targets, each with the measured figure and a verdict.

    The verdict is PASS or FAIL; ``not measured`` or ``not at size`` when the run did not reach
    the target's size (``--quick``); ``information`` for the stable-set shapes that are not the
    target case.
    """
    cells = {(r.operation, r.intervals, r.uuids): r for r in rows}

    def entry(target: str, measured: str, passed: bool | None) -> dict[str, Any]:
        verdict = "not measured" if passed is None else ("PASS" if passed else "FAIL")
        return {"target": target, "measured": measured, "passed": passed, "verdict": verdict}

    found = []
    for operation in ("union", "difference"):
        row = cells.get((operation, TARGET_INTERVALS, 1))
        times = row.peer / row.grstats if row and row.peer else None
        found.append(
            entry(
                f"{operation} at {TARGET_INTERVALS:,} intervals: >= 100x {PEER}",
                f"{times:,.0f}x" if times else "-",
                None if times is None else times >= 100,
            )
        )
    for operation in ("parse", "format"):
        row = cells.get((operation, TARGET_INTERVALS, 1))
        found.append(
            entry(
                f"{operation} one {TARGET_INTERVALS:,}-interval set: < 10 ms",
                duration(row.grstats) if row else "-",
                None if row is None else row.grstats < 0.010,
            )
        )
    at_size = intervals == TARGET_INTERVALS
    for shape, seconds in shapes.items():
        target = f"intersection of {MEMBERS} x {intervals:,} intervals, {SHAPES[shape]}"
        if shape == "tails":
            tails = entry(f"{target}: < 20 ms", duration(seconds), seconds < 0.020)
            found.append(tails if at_size else tails | {"passed": None, "verdict": "not at size"})
        else:
            found.append(entry(target, duration(seconds), None) | {"verdict": "information"})
    return found


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print the tables and optionally write the raw figures as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run with small sizes")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write raw results here")
    parser.add_argument("--repeat", type=int, default=5, help="grstats repeats (best is kept)")
    parser.add_argument("--min-time", type=float, default=0.2, help="seconds per timed run")
    parser.add_argument(
        "--peer-budget", type=float, default=60.0, help="skip peer cells estimated above this"
    )
    args = parser.parse_args(argv)
    sizes: tuple[int, ...] = (1, 100, TARGET_INTERVALS)
    uuid_counts: tuple[int, ...] = (1, 10, 50)
    members = TARGET_INTERVALS
    if args.quick:
        sizes, uuid_counts, members = (1, 100, 1_000), (1, 5), 1_000
        args.repeat, args.min_time = min(args.repeat, 3), min(args.min_time, 0.02)
    peer = "not installed" if PeerSet is None else f"{PEER} {version(PEER)}"
    print(f"# GTID sets: grstats vs {peer}")
    print(f"Python {platform.python_version()} ({platform.python_implementation()}), ", end="")
    print(
        f"{platform.machine()}, {os.cpu_count()} CPUs; best of {args.repeat} repeats\n", flush=True
    )
    started = time.perf_counter()
    rows, skipped = grid(sizes, uuid_counts, args)
    shapes = stable(members, args)
    print(table(rows))
    for reason in skipped:
        print(f"\n{reason}")
    print(f"\n## Stable set: intersection_of {MEMBERS} members x {members:,} intervals\n")
    print("| member shape | grstats |\n|---|--:|")
    for shape, seconds in shapes.items():
        print(f"| {SHAPES[shape]} | {duration(seconds)} |")
    print("\n## Targets\n")
    found = targets(rows, shapes, members)
    if args.quick:
        print("(--quick: sizes are below the targets', so these are not meaningful)\n")
    print("| target | measured | result |\n|---|--:|---|")
    for entry in found:
        shown = "**FAIL**" if entry["passed"] is False else entry["verdict"]
        print(f"| {entry['target']} | {entry['measured']} | {shown} |")
    failed = [entry["target"] for entry in found if entry["passed"] is False]
    unmeasured = [entry["target"] for entry in found if entry["verdict"] == "not measured"]
    if failed:
        print(f"\n{len(failed)} target(s) FAILED")
    else:
        print("\ntargets not all measured" if unmeasured else "\nall targets met")
    print(f"(whole run: {time.perf_counter() - started:.0f} s)")
    if args.json:
        raw = {
            "python": platform.python_version(),
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
            "peer": peer,
            "quick": args.quick,
            "rows": [asdict(row) for row in rows],
            "stable_set": {"members": MEMBERS, "intervals": members, "seconds": shapes},
            "targets": found,
        }
        args.json.write_text(json.dumps(raw, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
