"""The shared checks of settings: bounds included, one past refused, messages naming field and value."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from grstats.core.checks import (
    check_bool,
    check_choice,
    check_int,
    check_number,
    check_path,
    check_seconds,
    format_number,
    is_int,
    is_number,
)
from grstats.core.errors import ConfigError


def refused(message: str) -> pytest.RaisesExc[ConfigError]:
    """Expect a ConfigError whose whole message is ``message``."""
    return pytest.raises(ConfigError, match=f"^{re.escape(message)}$")


class TestPredicates:
    @pytest.mark.parametrize(("value", "expected"), [(0, True), (-3, True), (True, False), (1.0, False), ("1", False)])  # fmt: skip
    def test_is_int(self, value: object, expected: bool) -> None:
        """is_int takes integers only: a bool, a float or a string is not one."""
        assert is_int(value) is expected

    @pytest.mark.parametrize(
        ("value", "expected"),
        [
            (0, True),
            (0.5, True),
            (False, False),
            (math.inf, False),
            (math.nan, False),
            ("1", False),
        ],
    )
    def test_is_number(self, value: object, expected: bool) -> None:
        """is_number takes finite ints and floats, never a bool, infinity or NaN."""
        assert is_number(value) is expected

    @pytest.mark.parametrize(("value", "text"), [(60, "60"), (60.0, "60"), (0.05, "0.05"), (31_622_400, "31622400")])  # fmt: skip
    def test_format_number(self, value: float, text: str) -> None:
        """format_number writes a number as a config file would, whole ones without '.0'."""
        assert format_number(value) == text


class TestCheckInt:
    def test_accepts_both_bounds(self) -> None:
        """The low and the high bound are both accepted."""
        check_int("port", 1, 1, 65535)
        check_int("port", 65535, 1, 65535)

    @pytest.mark.parametrize("value", [0, 65536])
    def test_refuses_one_past_a_bound(self, value: int) -> None:
        """One below the low bound or above the high one is refused, naming field and value."""
        with refused(f"port: {value} is not in 1..65535"):
            check_int("port", value, 1, 65535)

    @pytest.mark.parametrize("value", [True, 2.0, "2", None])
    def test_refuses_what_is_not_an_int(self, value: object) -> None:
        """A bool, a float or a string is refused even when it compares as in range."""
        with refused(f"port: {value!r} is not in 1..65535"):
            check_int("port", value, 1, 65535)

    def test_without_a_top(self) -> None:
        """Without a high bound any integer from low passes; the message says so."""
        check_int("count", 10**30, 1)
        with refused("count: 0 is not a whole number >= 1"):
            check_int("count", 0, 1)

    def test_accepted_replaces_the_range(self) -> None:
        """``accepted`` is what the message says is accepted; the bounds still decide."""
        with refused("fanout: 9 is not 0 (every peer) or in 1..8"):
            check_int("fanout", 9, 0, 8, accepted="0 (every peer) or in 1..8")


class TestCheckNumber:
    def test_accepts_both_bounds(self) -> None:
        """The low and the high bound are both accepted, as ints or floats."""
        check_number("interval_s", 1, 1, 3600, accepted="from 1 to 3600")
        check_number("interval_s", 3600.0, 1, 3600, accepted="from 1 to 3600")

    @pytest.mark.parametrize("value", [0.999, 3600.001])
    def test_refuses_one_past_a_bound(self, value: float) -> None:
        """A number just outside the range is refused, naming field and value."""
        with refused(f"interval_s: {value!r} is not from 1 to 3600"):
            check_number("interval_s", value, 1, 3600, accepted="from 1 to 3600")

    def test_open_low(self) -> None:
        """With ``open_low`` the low bound itself is refused and anything above it passes."""
        check_number("timeout_s", 1e-9, 0, 60, open_low=True, accepted="over 0")
        with refused("timeout_s: 0 is not over 0"):
            check_number("timeout_s", 0, 0, 60, open_low=True, accepted="over 0")

    @pytest.mark.parametrize("value", [True, math.nan, "5", None])
    def test_refuses_what_is_not_a_number(self, value: object) -> None:
        """A bool, NaN or a string is refused."""
        with refused(f"timeout_s: {value!r} is not over 0"):
            check_number("timeout_s", value, 0, 60, open_low=True, accepted="over 0")

    def test_infinity_only_without_a_top(self) -> None:
        """Infinity passes a check without a high bound (never), and no other."""
        check_number("duration_s", math.inf, 0, open_low=True, accepted="> 0")
        with refused("interval_s: inf is not from 1 to 3600"):
            check_number("interval_s", math.inf, 1, 3600, accepted="from 1 to 3600")


class TestCheckSeconds:
    def test_accepts_both_bounds(self) -> None:
        """The shortest and the longest duration are both accepted."""
        check_seconds("period_s", 1, 1, 60)
        check_seconds("period_s", 60.0, 1, 60)

    @pytest.mark.parametrize("value", [0.5, 61])
    def test_refuses_one_past_a_bound(self, value: float) -> None:
        """A duration outside the range is refused, the range shown as an interval."""
        with refused(f"period_s: {value!r} is not in [1, 60] seconds"):
            check_seconds("period_s", value, 1, 60)

    def test_open_low(self) -> None:
        """With ``open_low`` the interval is shown half open and its low end refused."""
        check_seconds("connect_timeout_s", 0.001, 0, 300, open_low=True)
        with refused("connect_timeout_s: 0 is not in (0, 300] seconds"):
            check_seconds("connect_timeout_s", 0, 0, 300, open_low=True)

    def test_fractional_bounds_are_shown_as_written(self) -> None:
        """Bounds show as a config file spells them: 0.05, not 5e-02; 31622400, not 3.2e7."""
        with refused("rpc_timeout_s: 0.01 is not in [0.05, 30] seconds"):
            check_seconds("rpc_timeout_s", 0.01, 0.05, 30)
        with refused("retention_s: 59 is not in [60, 31622400] seconds"):
            check_seconds("retention_s", 59, 60, 31_622_400)

    def test_zero_means_something(self) -> None:
        """With ``zero``, 0 passes too, and the message says what it means; False is no 0."""
        check_seconds("retention_s", 0, 60, 3600, zero="never purges")
        check_seconds("retention_s", 0.0, 60, 3600, zero="never purges")
        false: object = False
        with refused("retention_s: False is not 0 (never purges) or in [60, 3600] seconds"):
            check_seconds("retention_s", false, 60, 3600, zero="never purges")

    @pytest.mark.parametrize("value", [True, math.nan, math.inf, "1"])
    def test_refuses_what_is_not_a_duration(self, value: object) -> None:
        """A bool, NaN, infinity or a string is refused."""
        with refused(f"period_s: {value!r} is not in [1, 60] seconds"):
            check_seconds("period_s", value, 1, 60)


class TestCheckBool:
    @pytest.mark.parametrize("value", [True, False])
    def test_true_and_false(self, value: bool) -> None:
        """True and False pass."""
        check_bool("discover_peers", value)

    @pytest.mark.parametrize("value", [1, 0, "yes", None])
    def test_refuses_what_only_looks_boolean(self, value: object) -> None:
        """1, 0, a string or None is refused, naming field and value."""
        with refused(f"discover_peers: {value!r} is not true or false"):
            check_bool("discover_peers", value)


class TestCheckChoice:
    def test_choices(self) -> None:
        """A listed value passes; any other is refused with the list."""
        check_choice("log_level", "info", ("debug", "info"))
        with refused("log_level: 'trace' is not debug, info"):
            check_choice("log_level", "trace", ("debug", "info"))


class TestCheckPath:
    def test_string_becomes_a_path(self) -> None:
        """A string (TOML's) or a Path comes back as a Path."""
        assert check_path("token_file", "/etc/token") == Path("/etc/token")
        assert check_path("token_file", Path("token")) == Path("token")

    @pytest.mark.parametrize(
        ("value", "shown"), [("", "''"), ("  ", "'  '"), (3, "3"), (Path("  "), "'  '")]
    )
    def test_refuses_blank_or_not_text(self, value: object, shown: str) -> None:
        """A blank path or a value that is not text is refused; a Path shows as its text."""
        with refused(f"state_dir: {shown} is not a directory path"):
            check_path("state_dir", value, "a directory path")


def test_imports_nothing_of_grstats_but_errors() -> None:
    """The checks sit low: loading them loads no other grstats module than the errors (and the version)."""
    check = (
        "import sys, grstats.core.checks; "
        "loaded = {m for m in sys.modules if m.startswith('grstats.')}; "
        "assert loaded == {'grstats._version', 'grstats.core', 'grstats.core.checks', "
        "'grstats.core.errors'}, loaded"
    )
    subprocess.run([sys.executable, "-c", check], check=True, timeout=60, capture_output=True)
