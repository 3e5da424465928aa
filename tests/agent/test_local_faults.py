"""LocalMember's faults: logged when they start, at most every FAULT_REPEAT_S, and at their end.

``fault`` and ``fault_since_us`` follow them, and the password is never logged.
"""

# password_env names a variable, and the test's password is made up:
# ruff: noqa: S105, S106

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import pytest
import structlog
from structlog.testing import capture_logs

from grstats.agent.config import AgentConfig
from grstats.agent.gossip import Key
from grstats.agent.local import FAULT_REPEAT_S, LocalMember
from grstats.agent.metrics import AgentMetrics
from grstats.agent.sources import MemorySource, SimulatedSourceConfig
from grstats.agent.sources.mysql import MySQLSource
from grstats.agent.sources.mysql_config import MySQLSourceConfig
from grstats.core.fault import SourceFault
from grstats.core.gtid import GtidSet
from grstats.core.model import GroupView, MemberSnapshot, SourceHealth
from grstats.core.rows import ApplierStatusRow, MemberRow, MemberStatsRow
from tests.mariadb import free_port

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from grstats.agent.sources.base import StatsSource

START_S = 1_700_000_000
UUID = "e14043d7-16ee-11eb-9a3b-0800275c3a8f"
REFUSED = SourceFault("connect_refused", "cannot connect to MySQL at db1:3306", "start mysqld")
DENIED = SourceFault("access_denied", "MySQL at db1:3306 refused the login", "check the file")
#: The seconds between two reads: the agent's period.
PERIOD_S = 1


class Clock:
    """The agent's clock (µs), moved by the test."""

    def __init__(self) -> None:
        self.us = START_S * 1_000_000

    def __call__(self) -> int:
        return self.us

    def advance(self, seconds: float) -> None:
        self.us += int(seconds * 1_000_000)


def snapshot() -> MemberSnapshot:
    """A member's read: ONLINE in a one-member group."""
    row = MemberRow(member_id=UUID, member_host="db1", member_port=3306, member_state="ONLINE")
    return MemberSnapshot(
        member_id=UUID,
        read_at_us=START_S * 1_000_000,
        view=GroupView(members=(row,), view_id="1:1"),
        stats=MemberStatsRow(view_id="1:1", member_id=UUID),
        applier=ApplierStatusRow(member_id=UUID),
        gtid_executed=GtidSet(),
    )


def member(source: StatsSource, clock: Clock) -> LocalMember:
    """A LocalMember reading ``source`` on ``clock``."""
    config = AgentConfig(
        source="simulated",
        simulated=SimulatedSourceConfig(member_index=0, group_start_s=START_S),
        listen="127.0.0.1:0",
    )
    return LocalMember(
        config, source, clock=clock, log=structlog.get_logger(), metrics=AgentMetrics()
    )


async def reads(local: LocalMember, clock: Clock, count: int) -> None:
    """Read ``count`` times, one period apart (the clock moves before each read)."""
    for _ in range(count):
        clock.advance(PERIOD_S)
        await local.read()


def events(logs: Sequence[Mapping[str, Any]]) -> list[str]:
    """The events of captured log lines, info and above (the per-read line is debug)."""
    return [line["event"] for line in logs if line["log_level"] != "debug"]


@pytest.fixture(name="clock")
def _clock() -> Clock:
    return Clock()


@pytest.fixture(name="source")
def _source() -> MemorySource:
    return MemorySource(snapshot())


class TestFaultLog:
    async def test_logged_once_when_it_starts(self, source: MemorySource, clock: Clock) -> None:
        """A fault that lasts less than FAULT_REPEAT_S is logged once, however many reads fail."""
        local = member(source, clock)
        source.fail("db1:3306: connect failed", fault=REFUSED)
        with capture_logs() as logs:
            await reads(local, clock, 60)
        assert events(logs) == ["source_fault"]
        line = next(line for line in logs if line["event"] == "source_fault")
        assert line["log_level"] == "warning"
        assert line["kind"] == "connect_refused"
        assert line["message"] == REFUSED.message
        assert line["fix"] == REFUSED.fix
        assert line["error"] == "db1:3306: connect failed"

    async def test_fault_and_since(self, source: MemorySource, clock: Clock) -> None:
        """``fault`` is the failing read's, ``fault_since_us`` when the fault began."""
        local = member(source, clock)
        await reads(local, clock, 1)
        assert (local.fault, local.fault_since_us) == (None, None)
        source.fail("down", fault=REFUSED)
        await reads(local, clock, 1)
        began = clock.us
        await reads(local, clock, 5)
        assert local.fault == REFUSED
        assert local.fault_since_us == began

    async def test_repeated_with_a_count(self, source: MemorySource, clock: Clock) -> None:
        """A lasting fault is logged again after FAULT_REPEAT_S, counting the failed reads."""
        local = member(source, clock)
        source.fail("down", fault=REFUSED)
        repeat = int(FAULT_REPEAT_S / PERIOD_S)
        with capture_logs() as logs:
            await reads(local, clock, repeat)  # the start, then FAULT_REPEAT_S - 1 s
            assert events(logs) == ["source_fault"]
            await reads(local, clock, 1)  # FAULT_REPEAT_S after the start
            assert events(logs) == ["source_fault", "source_fault_persisted"]
            await reads(local, clock, repeat)
        assert events(logs) == ["source_fault", "source_fault_persisted", "source_fault_persisted"]
        persisted = [line for line in logs if line["event"] == "source_fault_persisted"]
        assert [line["failed_reads"] for line in persisted] == [repeat, repeat]
        assert [line["lasted_s"] for line in persisted] == [FAULT_REPEAT_S, 2 * FAULT_REPEAT_S]
        assert all(line["kind"] == "connect_refused" for line in persisted)
        assert all(line["log_level"] == "warning" for line in persisted)

    async def test_end_with_its_duration(self, source: MemorySource, clock: Clock) -> None:
        """A read that succeeds ends the fault: logged with how long it lasted and its reads."""
        local = member(source, clock)
        await reads(local, clock, 1)
        source.fail("down", fault=REFUSED)
        with capture_logs() as logs:
            await reads(local, clock, 42)
            source.recover()
            await reads(local, clock, 3)
        assert events(logs) == ["source_fault", "source_recovered"]
        end = logs[-1]
        assert end["log_level"] == "info"
        assert end["kind"] == "connect_refused"
        assert end["lasted_s"] == 42.0  # from the first failed read to the first good one
        assert end["failed_reads"] == 42
        assert local.fault is None
        assert local.fault_since_us is None

    async def test_new_kind_is_a_new_fault(self, source: MemorySource, clock: Clock) -> None:
        """A change of kind is logged at once as a new fault, naming the kind it replaces."""
        local = member(source, clock)
        source.fail("refused", fault=REFUSED)
        with capture_logs() as logs:
            await reads(local, clock, 10)
            source.fail("denied", fault=DENIED)
            await reads(local, clock, 10)
        assert events(logs) == ["source_fault", "source_fault"]
        second = [line for line in logs if line["event"] == "source_fault"][1]
        assert second["kind"] == "access_denied"
        assert second["replaces"] == "connect_refused"
        assert local.fault == DENIED
        assert local.fault_since_us == clock.us - 9 * PERIOD_S * 1_000_000

    async def test_same_kind_new_wording_is_not_logged(
        self, source: MemorySource, clock: Clock
    ) -> None:
        """Within one kind, a new wording is kept for the Query answer but not logged again."""
        local = member(source, clock)
        source.fail("a", fault=REFUSED)
        with capture_logs() as logs:
            await reads(local, clock, 3)
            reworded = dataclasses.replace(REFUSED, message="cannot connect, still")
            source.fail("b", fault=reworded)
            await reads(local, clock, 3)
        assert events(logs) == ["source_fault"]
        assert local.fault == reworded

    async def test_error_without_fault(self, source: MemorySource, clock: Clock) -> None:
        """A source that attaches no fault reads as kind other, with its text."""
        local = member(source, clock)
        source.fail("server is down")
        with capture_logs() as logs:
            await reads(local, clock, 2)
        assert [line["kind"] for line in logs if line["event"] == "source_fault"] == ["other"]
        assert local.fault == SourceFault("other", "server is down")

    async def test_health_is_the_fault_message(self, source: MemorySource, clock: Clock) -> None:
        """The member's gossiped health is the fault's message, stable across reads."""
        local = member(source, clock)
        await reads(local, clock, 1)
        source.fail("down; next attempt at 04:00:01.0 UTC", fault=REFUSED)
        await reads(local, clock, 1)
        assert local.state is not None
        held = local.state.value(UUID, Key.HEALTH)
        assert held is not None
        assert held.update.value == SourceHealth(ok=False, message=REFUSED.message)


class TestMySQLBackoffAndLog:
    async def test_log_and_backoff_agree(
        self, clock: Clock, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Against a refused port: one line, whose next attempt later reads repeat; no password."""
        secret = "Sup3r-s3cret-passw0rd"
        monkeypatch.setenv("GRSTATS_TEST_PASSWORD", secret)
        now = [500.0]
        config = MySQLSourceConfig(
            host="127.0.0.1",
            port=free_port(),
            password_env="GRSTATS_TEST_PASSWORD",
            backoff_initial_s=4.0,
            backoff_max_s=4.0,
        )
        source = MySQLSource(config, clock=lambda: now[0], wall_clock=lambda: clock.us / 1e6)
        local = member(source, clock)
        with capture_logs() as logs:
            for _ in range(3):  # reads 1 s apart within the 4 s backoff
                clock.advance(1)
                now[0] += 1
                await local.read()
            assert source.connect_attempts == 1
        await local.aclose()
        assert events(logs) == ["source_fault"]
        assert {line["error"] for line in logs} == {logs[0]["error"]}  # debug lines: the same
        assert logs[0]["error"].endswith("; next attempt at 22:13:25.0 UTC")  # START_S + 1 + 4
        assert logs[0]["kind"] == "connect_refused"
        assert all(secret not in repr(line) for line in logs)
