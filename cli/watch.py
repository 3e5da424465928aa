"""``grstats query status --watch``: the verdict asked for again every period, like ``top``.

On a terminal (``table`` and ``vertical``) one screen is redrawn in place, on the alternate
screen, with rich: a title line with the agent asked and the time (in the zone of
``--time-zone``, marked with it, like every time on the screen); the status, coloured, and its
sentence; the mode, primary, group, view, AS_OF and flow control; then one line per member (up
to 9 fit 80x24): the first 8 characters of its MEMBER_ID, host:port (ellipsized when the
terminal is narrow), state (ONLINE green, RECOVERING yellow, UNREACHABLE and ERROR red, OFFLINE
dim), role (``*`` when flow control holds its writes back), applier lag in seconds, applier and
certifier queues, transactions behind, read-only flags and the age of its row (``!`` when it is
not connected). While a member recovers or has a backlog of more than
:data:`~grstats.core.election.BACKLOG_WARNING` transactions, a yellow ``catching up`` line
under the verdict gives its progress: the first 8 characters of its MEMBER_ID, its state, the
transactions left, the apply rate and the ETA (:func:`catching_up`). Under the members, for
groups of up to 9, the views matrix (:data:`VIEW_LETTERS`): a row per member, what its own
server shows of each member, a column per member in the same order, the state as a letter in
its colour, a disagreement between two members' views (``replication_group_member_views``'
DISAGREEMENT: split-brain, a lagging view, a one-way link) on red; where the terminal is too
short for it (9 members on 24 lines), one line says how many disagreements there are instead. A
value that changed since the last refresh is shown in reverse. When the agent stops answering,
the last answer stays on the screen, marked STALE with the time it began and the error, and the
agent is asked again every period. While the agent answers but cannot read its own member, a
yellow line under the title says so (:func:`~grstats.cli.status_view.source_line`).
Ctrl-C (or SIGTERM) leaves the alternate screen, shows the cursor and exits 0.

Anywhere else (a pipe, a file) and for ``json``, each answer is printed as it comes and
flushed: one compact JSON object per line (JSON Lines), or the text of ``grstats query status``
with a blank line between answers. A failed ask is one line on standard error, printed again
only when the error changes; so is the warning that the agent cannot read its member, and one
line says when it can again.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import math
import os
import signal
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, NamedTuple, TextIO

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from grstats.cli.errors import CliError
from grstats.cli.status_view import (
    address,
    catching_up_members,
    json_line,
    progress_text,
    render_status,
    source_line,
)
from grstats.core.rows.zone import UTC_ZONE

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Mapping

    from rich.console import RenderableType

    from grstats.cli.status_view import GroupStatus
    from grstats.core.rows import Value
    from grstats.core.rows.zone import TimeZone

    #: Asks the agent once; raises CliError when it does not answer.
    Fetch = Callable[[], Awaitable[GroupStatus]]
    #: One value of the verdict as the screen shows it.
    Field = Callable[[GroupStatus], str]

#: How member states and group statuses are coloured.
STATE_STYLES = {
    "ONLINE": "green",
    "RECOVERING": "yellow",
    "UNREACHABLE": "bold red",
    "ERROR": "bold red",
    "OFFLINE": "dim",
}
STATUS_STYLES = {
    "OK": "bold green",
    "OK_PARTIAL": "bold yellow",
    "OK_NO_TOLERANCE": "bold yellow",
    "OK_NO_TOLERANCE_PARTIAL": "bold yellow",
    "NO_QUORUM": "bold red",
    "UNKNOWN": "bold red",
}
#: The style added to a value that changed since the last refresh.
CHANGED = "reverse"
#: The characters of a MEMBER_ID shown on the screen.
SHORT_ID = 8
LEGEND = "reverse: changed  ROLE*: throttled  AGE!: agent not heard  Ctrl-C: quit"
#: The letter of each state in the views matrix; NOT_LISTED is ``-``, an unheard view ``?``.
VIEW_LETTERS = {
    "ONLINE": "O",
    "RECOVERING": "R",
    "UNREACHABLE": "U",
    "ERROR": "E",
    "OFFLINE": "o",
    "NOT_LISTED": "-",
}
#: The most members the views matrix is drawn for (a group's most: 9).
MATRIX_MEMBERS = 9
#: The style of a matrix cell whose observation disagrees with another member's view.
DISAGREES = "bold white on red"
MATRIX_LEGEND = (
    "views: row = what that member's server shows of member 1..n  O ONLINE R RECOVERING "
    "U UNREACHABLE E ERROR o OFFLINE - not listed  red: views disagree"
)


def watch_period(text: str) -> float:
    """The seconds of ``--watch SECONDS``.

    Raises:
        CliError: exit status 2, naming --watch and the value, unless it is a positive number.
    """
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise CliError(f"--watch: {text!r} is not a positive number of seconds", code=2)
    return value


def run_watch(
    fetch: Fetch,
    *,
    agent: str,
    period_s: float,
    output_format: str,
    zone: TimeZone = UTC_ZONE,
) -> int:
    """Ask ``fetch`` every ``period_s`` until Ctrl-C or SIGTERM; return the exit status (0).

    Times are shown in ``zone`` (JSON Lines: UTC).
    """
    live = output_format != "json" and sys.stdout.isatty()
    try:
        asyncio.run(_watch(fetch, agent, period_s, output_format, live=live, zone=zone))
    except (KeyboardInterrupt, asyncio.CancelledError):
        pass
    except BrokenPipeError:  # the reader went away (| head): nothing more to say
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


async def _watch(  # noqa: PLR0913  (run_watch's arguments, passed on)
    fetch: Fetch,
    agent: str,
    period_s: float,
    output_format: str,
    *,
    live: bool,
    zone: TimeZone,
) -> None:
    task = asyncio.current_task()
    assert task is not None
    loop = asyncio.get_running_loop()
    # Ctrl-C and SIGTERM end the watch, also when it was started with SIGINT ignored (a
    # script's background job inherits that, and Python then installs no KeyboardInterrupt).
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, task.cancel)
    if live:
        await _live(fetch, WatchScreen(agent, period_s, zone=zone), Console())
    else:
        await _stream(fetch, period_s, output_format, sys.stdout, sys.stderr, zone=zone)


def _end_if_cancelled() -> None:
    """Raise CancelledError when the watch was cancelled (Ctrl-C, SIGTERM) during a fetch.

    A fetch can lose the cancellation: grpc.aio's call task catches it, and when the answer
    had already arrived the awaiting task goes on with it, its cancel() spent (the watch
    then asked forever after Ctrl-C); or turns it into an error of its own. Each turn
    checks, so the watch ends either way.
    """
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


async def _every(period_s: float) -> AsyncIterator[None]:
    """Yield now and then every ``period_s``; a late turn starts the next period, no burst."""
    next_at = time.monotonic()
    while True:
        yield
        _end_if_cancelled()
        next_at += period_s
        now = time.monotonic()
        next_at = max(next_at, now)
        await asyncio.sleep(next_at - now)


async def _stream(  # noqa: PLR0913  (the stream's ends and its zone are explicit)
    fetch: Fetch,
    period_s: float,
    output_format: str,
    out: TextIO,
    err: TextIO,
    *,
    zone: TimeZone = UTC_ZONE,
) -> None:
    """Print every answer as it comes: JSON Lines, or text (times in ``zone``) between blanks."""
    first = True
    failing: str | None = None
    warned: str | None = None  # the source warning last printed
    async for _ in _every(period_s):
        started = time.monotonic()
        try:
            status = await fetch()
        except CliError as exc:
            _end_if_cancelled()  # not a failed read: Ctrl-C
            if str(exc) != failing:
                print(f"grstats: {exc} (asking again every {period_s:g} s)", file=err, flush=True)
            failing = str(exc)
            continue
        failing = None
        if output_format == "json":
            out.write(json_line(status) + "\n")
        else:
            text = render_status(status, output_format, time.monotonic() - started, zone)
            out.write(text if first else "\n" + text)
        first = False
        out.flush()
        warning = source_line(status.agent, status.source, zone=zone)
        if warning != warned:
            if warning is not None:
                print(f"grstats: warning: {warning}", file=err, flush=True)
            else:
                print(
                    f"grstats: agent {status.agent} can read its member again", file=err, flush=True
                )
            warned = warning


async def _live(fetch: Fetch, screen: WatchScreen, console: Console) -> None:
    """Redraw ``screen`` in place every period until cancelled."""
    with Live(
        screen.render(time.time()),
        console=console,
        screen=True,
        auto_refresh=False,
        redirect_stdout=False,
        redirect_stderr=False,
    ) as live:
        async for _ in _every(screen.period_s):
            screen.height, screen.width = console.size.height, console.size.width
            try:
                status = await fetch()
            except CliError as exc:
                _end_if_cancelled()  # not a failed read: Ctrl-C
                screen.failed(str(exc), time.time())
            else:
                screen.answered(status)
            live.update(screen.render(time.time()), refresh=True)


# -- the screen ----------------------------------------------------------------------------


def _count(value: Value) -> str:
    """A queue or count in at most 5 characters."""
    if not isinstance(value, int):
        return "-"
    if value < 100_000:
        return str(value)
    if value < 100_000_000:
        return f"{value // 1000}k"
    return f"{value // 1_000_000}M"


def _seconds(value: Value) -> str:
    """Applier lag in seconds, in at most 5 characters."""
    if not isinstance(value, int | float):
        return "-"
    seconds = float(value)
    for decimals in (3, 2, 1, 0):  # as many decimals as fit
        if len(text := f"{seconds:.{decimals}f}") <= 5:
            return text
    return f"{seconds / 86400:.0f}d"


def _age(milliseconds: Value) -> str:
    """The age of a row in at most 4 characters: ``0.4s``, ``12s``, ``5m``, ``3h``, ``2d``."""
    if not isinstance(milliseconds, int):
        return "-"
    seconds = milliseconds / 1000
    if seconds < 10:
        return f"{milliseconds // 100 / 10:.1f}s"
    for unit, size in (("s", 1), ("m", 60), ("h", 3600)):
        if seconds / size < 100:
            return f"{seconds // size:.0f}{unit}"
    return f"{seconds // 86400:.0f}d"


def _read_only(member: Mapping[str, Value]) -> str:
    if member.get("SUPER_READ_ONLY") == "ON":
        return "SRO"
    if member.get("READ_ONLY") == "ON":
        return "RO"
    if member.get("READ_ONLY") == "OFF":
        return "RW"
    return "-"


def _role(member: Mapping[str, Value]) -> str:
    role = str(member.get("MEMBER_ROLE") or "")
    return role + "*" if member.get("THROTTLING") == "YES" else role


def _status(status: GroupStatus) -> str:
    return status.text("STATUS")


def _status_text(status: GroupStatus) -> str:
    return status.text("STATUS_TEXT")


def _primary(status: GroupStatus) -> str:
    shown = [f"{m[:SHORT_ID]} {status.address_of(m)}".strip() for m in status.primary]
    return ", ".join(shown) or "none"


def _is_throttled(status: GroupStatus) -> bool:
    return status.text("THROTTLED") == "YES"


def _throttled(status: GroupStatus) -> str:
    by = ", ".join(member[:SHORT_ID] for member in status.throttled_by)
    return f"{status.text('THROTTLED')} by {by}" if by else status.text("THROTTLED")


def _as_of(status: GroupStatus, zone: TimeZone = UTC_ZONE) -> str:
    """AS_OF to the second, in ``zone`` and marked with it: ``10:15:02 UTC``, with the date."""
    at = status.as_of_us
    if at is None:
        return "unknown"
    return f"{zone.moment(at):%Y-%m-%d %H:%M:%S} {zone.label(at)}"


#: The lines under the status: (label, value) pairs.
VERDICT_LINES: tuple[tuple[tuple[str, Field], ...], ...] = (
    (
        ("mode", lambda s: s.text("MODE") or "unknown"),
        ("tolerance", lambda s: s.text("TOLERANCE")),
        ("primary", _primary),
    ),
    (("view", lambda s: s.text("VIEW_ID")), ("group", lambda s: s.text("GROUP_NAME"))),
    (("as of", _as_of), ("throttled", _throttled)),
)


def catching_up(status: GroupStatus) -> str:
    """The members recovering or with a backlog, and their progress, in one line ('' if none).

    ``f23d2b0f RECOVERING 8000 transactions left at 4000/s, ETA 2.3 s``, ``; `` between them
    (:func:`~grstats.cli.status_view.catching_up_members`).
    """
    return "; ".join(
        f"{str(member.get('MEMBER_ID'))[:SHORT_ID]} {member.get('MEMBER_STATE')} "
        f"{progress_text(member)}"
        for member in catching_up_members(status)
    )


def _agent_age(member: Mapping[str, Value]) -> str:
    """The age of the member's row, with ``!`` when it is not connected (CONNECTED NO)."""
    return _age(member.get("AGE_MS")) + ("" if member.get("CONNECTED") == "YES" else "!")


class MemberField(NamedTuple):
    """One member column of the screen."""

    header: str
    width: int | None  #: at most this wide; None: the host, which gets what is left
    cell: Callable[[Mapping[str, Value]], str]
    justify: Literal["left", "right"] = "left"
    fixed: bool = True  #: always ``width`` wide, so numbers do not move; else as wide as needed


def _text(name: str) -> Callable[[Mapping[str, Value]], str]:
    return lambda member: str(member.get(name) or "")


#: The member columns of the screen.
MEMBER_FIELDS: tuple[MemberField, ...] = (
    # Always SHORT_ID wide, yet not fixed: before rich 14.3 a fixed first column counted the
    # edge padding that pad_edge=False leaves out, and took a space from the host.
    MemberField("ID", SHORT_ID, lambda m: str(m.get("MEMBER_ID") or "")[:SHORT_ID], fixed=False),
    MemberField("HOST", None, address, fixed=False),
    MemberField("STATE", 11, _text("MEMBER_STATE"), fixed=False),
    MemberField("ROLE", 10, _role, fixed=False),
    MemberField("LAG s", 5, lambda m: _seconds(m.get("APPLIER_LAG_SECONDS")), "right"),
    MemberField("APPLQ", 5, lambda m: _count(m.get("APPLIER_QUEUE")), "right"),
    MemberField("CERTQ", 5, lambda m: _count(m.get("CERTIFIER_QUEUE")), "right"),
    MemberField("BEHIND", 6, lambda m: _count(m.get("TRANSACTIONS_BEHIND")), "right"),
    MemberField("RO", 3, _read_only),
    MemberField("AGE", 5, _agent_age, "right"),
)
#: The member columns whose changes are not marked: the age changes every period.
UNMARKED = frozenset({"AGE"})


def _member_style(header: str, value: str, member: Mapping[str, Value]) -> str:
    """The colour of a member's cell: its state, a throttled role, an agent not heard."""
    if header == "STATE":
        return STATE_STYLES.get(value, "")
    if header == "ROLE" and member.get("THROTTLING") == "YES":
        return "bold yellow"
    if header == "AGE" and member.get("CONNECTED") != "YES":
        return "bold red"
    return ""


def _clock(at: float, zone: TimeZone = UTC_ZONE) -> str:
    """``at`` (epoch seconds) as ``HH:MM:SS`` in ``zone``, marked with it: ``10:15:02 UTC``."""
    micros = int(at * 1_000_000)
    return f"{zone.moment(micros):%H:%M:%S} {zone.label(micros)}"


@dataclass
class WatchScreen:
    """What the watch screen shows: the last answer, the one before, and a failure if any."""

    agent: str
    period_s: float
    current: GroupStatus | None = None
    previous: GroupStatus | None = None
    error: str | None = None
    failing_since: float | None = None
    zone: TimeZone = UTC_ZONE  #: the zone of the times shown
    height: int | None = None  #: the terminal's lines, None: as many as needed
    width: int = 80  #: the terminal's columns (where the lines wrap, for :attr:`height`)

    def answered(self, status: GroupStatus) -> None:
        """The agent answered ``status``."""
        self.previous, self.current = self.current, status
        self.error = self.failing_since = None

    def failed(self, error: str, now: float) -> None:
        """The agent did not answer, with ``error``, at ``now`` (epoch seconds)."""
        self.error = error
        if self.failing_since is None:
            self.failing_since = now

    def render(self, now: float) -> RenderableType:
        """The screen at ``now`` (epoch seconds)."""
        parts: list[RenderableType] = [self._title(now)]
        if self.error is not None:
            parts.append(self._failure(now))
        warning = (
            source_line(self.agent, self.current.source, now, self.zone) if self.current else None
        )
        if warning is not None:
            parts.append(Text(warning, style="bold yellow", no_wrap=True, overflow="ellipsis"))
        matrix: RenderableType | None = None
        if self.current is not None:
            verdict = self._verdict(self.current)
            parts += [*verdict, Text(""), self._members(self.current)]
            used = self._lines(parts) + 2  # and a blank line, the legend
            matrix = self._views(self.current, used)
            if matrix is not None:
                parts += [Text(""), matrix]
        parts += [Text(""), Text(LEGEND, style="dim", no_wrap=True, overflow="ellipsis")]
        if isinstance(matrix, Table):
            parts.append(Text(MATRIX_LEGEND, style="dim", no_wrap=True, overflow="ellipsis"))
        return Group(*parts)

    def _title(self, now: float) -> Table:
        stale = self.error is not None and self.current is not None
        left = f"grstats query status  agent {self.agent}  every {self.period_s:g}s"
        right = ("STALE  " if stale else "") + _clock(now, self.zone)
        title = Table.grid(expand=True)
        title.add_column(no_wrap=True, overflow="ellipsis", ratio=1)  # a long agent is cut short
        title.add_column(justify="right", no_wrap=True, width=len(right))
        title.add_row(left, right, style="bold white on red" if stale else "reverse")
        return title

    def _failure(self, now: float) -> Text:
        since = self.failing_since if self.failing_since is not None else now
        if self.current is None:
            head = f"waiting for {self.agent} since {_clock(since, self.zone)}"
        else:
            head = f"STALE since {_clock(since, self.zone)} ({now - since:.0f} s), last answer kept"
        return Text(f"{head}: {self.error}", style="bold red")

    def _marked(self, field: Field, status: GroupStatus, style: str = "") -> Text:
        """The value of ``field`` in ``status``, in reverse when it changed since the last one.

        AS_OF is not marked: it changes every period. It is shown in the screen's zone.
        """
        if field is _as_of:
            return Text(_as_of(status, self.zone), style=style)
        value = field(status)
        if self.previous is not None and field(self.previous) != value:
            style = f"{style} {CHANGED}"
        return Text(value, style=style.strip())

    def _verdict(self, status: GroupStatus) -> list[RenderableType]:
        verdict = status.text("STATUS")
        lines: list[RenderableType] = [
            Text.assemble(
                self._marked(_status, status, STATUS_STYLES.get(verdict, "bold")),
                "  ",
                self._marked(_status_text, status),
            )
        ]
        for line in VERDICT_LINES:
            parts: list[Text | str] = []
            for label, field in line:
                style = "bold yellow" if label == "throttled" and _is_throttled(status) else ""
                parts += ["  " if parts else "", Text(label + " ", style="dim")]
                parts.append(self._marked(field, status, style))
            lines.append(Text.assemble(*parts, no_wrap=True, overflow="ellipsis"))
        catching = catching_up(status)
        if catching:
            lines.append(
                Text.assemble(
                    Text("catching up ", style="dim"),
                    Text(catching, style="bold yellow"),
                    no_wrap=True,
                    overflow="ellipsis",
                )
            )
        return lines

    def _members(self, status: GroupStatus) -> Table:
        table = Table(
            box=None,
            pad_edge=False,  # no padding at the left and right edges
            padding=(0, 0, 0, 1),  # one space between columns
            header_style="bold",
            show_edge=False,
        )
        for field in MEMBER_FIELDS:
            table.add_column(
                field.header,
                justify=field.justify,
                no_wrap=field.width is not None,  # the host alone shrinks, to an ellipsis
                overflow="ellipsis",
                min_width=field.width if field.fixed else len(field.header),
                max_width=field.width,
            )
        before = {
            str(member.get("MEMBER_ID")): member
            for member in (self.previous.members if self.previous else [])
        }
        for member in status.members:
            old = before.get(str(member.get("MEMBER_ID")))
            cells = []
            for field in MEMBER_FIELDS:
                value = field.cell(member)
                style = _member_style(field.header, value, member)
                if self.previous is not None and field.header not in UNMARKED:
                    style += f" {CHANGED}" if old is None or field.cell(old) != value else ""
                cells.append(Text(value, style=style.strip()))
            table.add_row(*cells)
        return table

    def _lines(self, parts: list[RenderableType]) -> int:
        """How many lines ``parts`` take at :attr:`width` (a long status sentence wraps)."""
        if self.height is None:
            return 0
        console = Console(file=io.StringIO(), width=self.width, height=self.height)
        return len(console.render_lines(Group(*parts), pad=False))

    def _views(self, status: GroupStatus, used: int) -> Table | Text | None:
        """The views matrix (see the module docstring); None without views or past 9 members.

        ``used`` is the lines the rest of the screen takes; where the matrix does not fit in
        :attr:`height` besides, one line counts the disagreements instead.
        """
        members = [str(member.get("MEMBER_ID")) for member in status.members]
        if status.views is None or not members or len(members) > MATRIX_MEMBERS:
            return None
        needed = used + len(members) + 3  # a blank, the header, a line each, its legend
        if self.height is not None and needed > self.height:
            count = len(status.disagreements or ())
            return Text(
                f"views: {count} disagreement{'' if count == 1 else 's'} (the matrix needs "
                f"{needed} lines)",
                style="bold red" if count else "dim",
                no_wrap=True,
                overflow="ellipsis",
            )
        table = Table(
            box=None, pad_edge=False, padding=(0, 0, 0, 1), header_style="bold", show_edge=False
        )
        table.add_column("VIEWS", no_wrap=True, min_width=SHORT_ID + 2)
        for number in range(1, len(members) + 1):
            table.add_column(str(number), justify="center", no_wrap=True)
        now, before = _cells(status), _cells(self.previous) if self.previous else None
        for number, observer in enumerate(members, start=1):
            cells = [Text(f"{number} {observer[:SHORT_ID]}")]
            for member in members:
                state, disagreement = now.get((observer, member), ("", ""))
                letter = VIEW_LETTERS.get(state, "?")
                style = DISAGREES if disagreement else STATE_STYLES.get(state, "")
                if before is not None and before.get((observer, member)) != (state, disagreement):
                    style += f" {CHANGED}"
                cells.append(Text(letter, style=style.strip()))
            table.add_row(*cells)
        return table


def _cells(status: GroupStatus) -> dict[tuple[str, str], tuple[str, str]]:
    """Each (observer, member) of the views: the state and the disagreement ('' for none)."""
    return {
        (str(row.get("OBSERVER_ID")), str(row.get("MEMBER_ID"))): (
            str(row.get("MEMBER_STATE") or ""),
            str(row.get("DISAGREEMENT") or ""),
        )
        for row in status.views or ()
    }
