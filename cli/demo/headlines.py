"""A few figures of the report's summary.json, as lines for the demo to print."""

from __future__ import annotations

from typing import Any

#: (heading, summary.json key, format) of each member's figures the demo prints.
FIGURES = (
    ("ONLINE_S", "online_s", "{:.0f}"),
    ("UNREACHABLE_S", "unreachable_s", "{:.0f}"),
    ("OFFLINE_S", "offline_s", "{:.0f}"),
    ("NOT_CONNECTED_S", "not_connected_s", "{:.0f}"),
    ("APPLIED_PER_S", "applied_per_s", "{:.0f}"),
    ("LAG_P95_S", "lag_seconds_p95", "{:.2f}"),
    ("LAG_MAX_S", "lag_seconds_max", "{:.2f}"),
)


def headlines(summary: dict[str, Any]) -> list[str]:
    """Lines that give the gist of ``summary`` (the report's summary.json)."""
    if summary.get("empty"):
        return ["the report's range holds no snapshots"]
    group = summary["group"]
    lines = [
        (
            f"{group['snapshots']} snapshots over {group['observed_s']:.0f} s, "
            f"from {group['first_at']} to {group['last_at']}:"
        )
    ]
    header = ["MEMBER_ID", "PORT", *(heading for heading, _, _ in FIGURES)]
    rows = [
        [
            str(member["member_id"]),
            str(member["member_port"]),
            *(_cell(member.get(key), style) for _, key, style in FIGURES),
        ]
        for member in summary["members"]
    ]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines.extend(
        "  ".join(
            cell.ljust(width) if i == 0 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        )
        for row in [header, *rows]
    )
    throttled = summary.get("throttling", {}).get("group_s", 0.0)
    lines.append(
        f"{len(summary['unreachable_episodes'])} UNREACHABLE episode(s), "
        f"{len(summary['not_connected_episodes'])} not-connected episode(s); "
        f"writers throttled by flow control for {throttled:.0f} s"
    )
    return lines


def _cell(value: object, style: str) -> str:
    if value is None:
        return "-"
    if isinstance(value, int | float):
        return style.format(value)
    return str(value)
