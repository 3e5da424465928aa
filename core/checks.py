"""Checks of settings, which raise :class:`~grstats.core.errors.ConfigError`, and their predicates.

It imports nothing of grstats but the errors, so that every layer can use it.

Every message has one shape, ``<field>: <value!r> is not <what is accepted>``, so that a
message from a config file, a flag or a dataclass reads the same (``period_s: 0 is not in
[1, 60] seconds``, ``port: True is not in 1..65535``). A caller whose field has a
conventional phrasing passes it as ``accepted``; the bounds checked are always the ones given.

What counts as a number: an ``int`` or ``float`` but never a ``bool`` (``True`` is not a
port), and NaN never (it is in no range). Infinity passes only a check whose upper bound is
infinite.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TypeGuard

from grstats.core.errors import ConfigError


def is_int(value: object) -> TypeGuard[int]:
    """Whether ``value`` is an integer (``True`` and ``False`` are not)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: object) -> TypeGuard[float]:
    """Whether ``value`` is a finite ``int`` or ``float`` (a ``bool`` is not)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def format_number(value: float) -> str:
    """Show ``value`` as a config file spells it: ``60``, ``0.05``, ``31622400``."""
    return str(int(value)) if float(value).is_integer() else repr(value)


def check_int(
    name: str, value: object, low: int, high: int | None = None, *, accepted: str = ""
) -> None:
    """Raise ConfigError unless ``value`` is an integer in ``low..high`` (None: no top).

    Args:
        name: the field, as the message names it (``limits.max_updates``, ``peers[1]``).
        value: what was given.
        low: the least accepted, inclusive.
        high: the greatest accepted, inclusive; None for no upper bound.
        accepted: what the message says is accepted; default ``in low..high``
            (``a whole number >= low`` without ``high``).
    """
    if is_int(value) and low <= value and (high is None or value <= high):
        return
    if not accepted:
        accepted = f"a whole number >= {low}" if high is None else f"in {low}..{high}"
    raise ConfigError(f"{name}: {value!r} is not {accepted}")


def check_number(  # noqa: PLR0913  (a range check wants its bounds spelled out)
    name: str,
    value: object,
    low: float,
    high: float = math.inf,
    *,
    accepted: str,
    open_low: bool = False,
) -> None:
    """Raise ConfigError unless ``value`` is a number from ``low`` to ``high`` inclusive.

    Args:
        name: the field, as the message names it.
        value: what was given.
        low: the least accepted; excluded too with ``open_low``.
        high: the greatest accepted, inclusive (default: no upper bound, infinity included).
        accepted: what the message says is accepted (``a number of seconds > 0``).
        open_low: whether ``low`` itself is refused.
    """
    if (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and (low < value if open_low else low <= value)
        and value <= high
    ):
        return
    raise ConfigError(f"{name}: {value!r} is not {accepted}")


def check_seconds(  # noqa: PLR0913  (a range check wants its bounds spelled out)
    name: str,
    value: object,
    low: float,
    high: float,
    *,
    open_low: bool = False,
    zero: str = "",
) -> None:
    """Raise ConfigError unless ``value`` is a duration in ``[low, high]`` seconds.

    The message shows the range as an interval: ``is not in [1, 60] seconds``, or
    ``is not in (0, 300] seconds`` with ``open_low``.

    Args:
        name: the field, as the message names it.
        value: what was given.
        low: the shortest accepted; excluded too with ``open_low``.
        high: the longest accepted, inclusive.
        open_low: whether ``low`` itself is refused.
        zero: when given, 0 is accepted too and means this (``never purges``); the message
            says ``is not 0 (never purges) or in [60, 31622400] seconds``.
    """
    if zero and is_number(value) and value == 0:
        return
    bracket = "(" if open_low else "["
    accepted = f"in {bracket}{format_number(low)}, {format_number(high)}] seconds"
    if zero:
        accepted = f"0 ({zero}) or {accepted}"
    check_number(name, value, low, high, accepted=accepted, open_low=open_low)


def check_bool(name: str, value: object, *, accepted: str = "true or false") -> None:
    """Raise ConfigError unless ``value`` is ``True`` or ``False`` (1 and 0 are not)."""
    if not isinstance(value, bool):
        raise ConfigError(f"{name}: {value!r} is not {accepted}")


def check_choice(name: str, value: object, choices: tuple[str, ...]) -> None:
    """Raise ConfigError unless ``value`` is one of ``choices`` (the message lists them)."""
    if value not in choices:
        raise ConfigError(f"{name}: {value!r} is not {', '.join(choices)}")


def check_path(name: str, value: object, what: str = "a file path") -> Path:
    """Return ``value`` (a ``str`` or ``Path`` that is not blank) as a Path; else ConfigError.

    Args:
        name: the field, as the message names it.
        value: what was given; a TOML file gives a ``str``.
        what: what the message says is accepted (``a directory path``).
    """
    if isinstance(value, str | Path) and str(value).strip():
        return Path(value)
    shown = str(value) if isinstance(value, Path) else value
    raise ConfigError(f"{name}: {shown!r} is not {what}")
