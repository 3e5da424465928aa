"""Spool records: built from a real agent's answer, encoded, decoded, and their schema checked."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import grpc
import pytest

from grstats.agent.sim.group import group_uuid
from grstats.collector.errors import RecordError, UnknownSchema
from grstats.collector.records import (
    DEFAULT_GROUP_LABEL,
    SCHEMA_VERSION,
    TABLE_NAMES,
    check_schema,
    decode,
    encode,
    record_from_response,
    table_rows,
)
from grstats.core.query_wire import table_to_wire
from grstats.core.rows import EXTENDED_COLUMNS, TABLES, Column, Kind
from grstats.proto import grstats_pb2 as pb
from grstats.proto import grstats_pb2_grpc as pb_grpc
from tests.agent.test_runtime import Group, start_group

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


@pytest.fixture(name="group")
async def _group() -> AsyncIterator[Group]:
    group = await start_group(3, scenario="slow-secondary")
    await group.rounds(3)
    yield group
    for agent in group.agents:
        await agent.stop(grace_s=0)


async def read_all(address: str) -> pb.QueryResponse:
    """Every table, extended, as one Query.Read over a real channel."""
    async with grpc.aio.insecure_channel(address) as channel:
        request = pb.QueryRequest(tables=list(TABLE_NAMES), extended=True)
        response: pb.QueryResponse = await pb_grpc.QueryStub(channel).Read(request, timeout=5)
        return response


async def test_record_names_its_group(group: Group) -> None:
    """The record carries the operator's label and GR's group name as the agent serves it."""
    agent = group.agents[2]
    response = await read_all(agent.address)
    assert response.group_name == group_uuid("slow-secondary", 1)  # start_group's seed
    record = record_from_response(
        response, agent=agent.address, collected_at_us=1, group_label="orders"
    )
    assert (record["group_label"], record["group_name"]) == ("orders", response.group_name)
    default = record_from_response(response, agent=agent.address, collected_at_us=1)
    assert default["group_label"] == DEFAULT_GROUP_LABEL == "default"


async def test_plain_answer_names_the_group_too(group: Group) -> None:
    """An answer of the plain tables (cached bytes plus the answer's fields) has the group name."""
    async with grpc.aio.insecure_channel(group.agents[0].address) as channel:
        request = pb.QueryRequest(tables=["replication_group_members"])
        response: pb.QueryResponse = await pb_grpc.QueryStub(channel).Read(request, timeout=5)
    assert response.group_name == group_uuid("slow-secondary", 1)


async def test_record_of_a_real_answer(group: Group) -> None:
    """A record holds the four tables with MySQL's and the extended columns, typed as the schema says."""
    agent = group.agents[1]
    response = await read_all(agent.address)
    record = record_from_response(response, agent=agent.address, collected_at_us=123)
    assert record["schema"] == SCHEMA_VERSION
    assert (record["collected_at_us"], record["agent"]) == (123, agent.address)
    assert record["agent_member"] == agent.member_id
    assert record["served_at_us"] == response.served_at_us > 0
    extended = [column.name for column in EXTENDED_COLUMNS]
    members = sorted(a.member_id for a in group.agents)
    for name in TABLE_NAMES:
        table = record["tables"][name]
        assert table["columns"] == [*TABLES[name].column_names, *extended]
        rows = table_rows(record, name)
        assert sorted(str(row["MEMBER_ID"]) for row in rows) == members
        for row in rows:
            assert isinstance(row["LAST_SEEN"], int)
            assert row["CONNECTED"] in ("YES", "NO")
    lag = table_rows(record, "replication_group_member_lag")
    assert all(isinstance(row["APPLIER_LAG_SECONDS"], float | None) for row in lag)
    assert any(isinstance(row["APPLIER_LAG_SECONDS"], float) for row in lag)
    assert all(
        isinstance(row["LAST_APPLIED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP"], int) for row in lag
    )
    assert decode(encode(record)) == record


def response_of(
    tables: dict[str, tuple[list[Column], list[tuple[object, ...]]]],
) -> pb.QueryResponse:
    """A Query answer holding ``tables``, member unknown."""
    return pb.QueryResponse(
        tables=[table_to_wire(name, cols, rows) for name, (cols, rows) in tables.items()],  # type: ignore[arg-type]
        agent="a:1",
        served_at_us=5,
    )


def empty_tables() -> dict[str, tuple[list[Column], list[tuple[object, ...]]]]:
    """The four tables with their columns and no rows."""
    return {name: (list(TABLES[name].columns), []) for name in TABLE_NAMES}


def test_missing_table_is_named() -> None:
    """An answer without one of the four tables is refused, naming the agent and the table."""
    tables = empty_tables()
    del tables["replication_group_member_lag"]
    with pytest.raises(
        RecordError, match="db1:7400: the answer has no table replication_group_member_lag"
    ):
        record_from_response(response_of(tables), agent="db1:7400", collected_at_us=1)


def test_agent_without_a_member_yet() -> None:
    """An agent that knows no member yet is recorded with an empty agent_member."""
    record = record_from_response(response_of(empty_tables()), agent="a:1", collected_at_us=1)
    assert record["agent_member"] == ""
    assert all(record["tables"][name]["rows"] == [] for name in TABLE_NAMES)


def test_decimal_sent_as_integer_becomes_float() -> None:
    """A DECIMAL cell that arrives as a whole number is stored as a float."""
    tables = empty_tables()
    column = Column("APPLIER_LAG_SECONDS", "BIGINT UNSIGNED", nullable=True, kind=Kind.INTEGER)
    tables["replication_group_member_lag"] = ([column], [(3,), (None,)])
    record = record_from_response(response_of(tables), agent="a:1", collected_at_us=1)
    rows = record["tables"]["replication_group_member_lag"]["rows"]
    assert rows == [[3.0], [None]]
    assert isinstance(rows[0][0], float)


def test_cell_of_the_wrong_kind_is_named() -> None:
    """A number where MySQL has text is refused, naming the table and column."""
    tables = empty_tables()
    column = Column("MEMBER_ID", "BIGINT UNSIGNED", nullable=False, kind=Kind.INTEGER)
    tables["replication_group_member_gtid_executed"] = ([column], [(7,)])
    with pytest.raises(RecordError, match=r"replication_group_member_gtid_executed\.MEMBER_ID: 7"):
        record_from_response(response_of(tables), agent="a:1", collected_at_us=1)


def test_member_uuid_is_text() -> None:
    """The answering agent's 16-byte member becomes its lowercase UUID text."""
    member = uuid.uuid4()
    response = response_of(empty_tables())
    response.member = member.bytes
    record = record_from_response(response, agent="a:1", collected_at_us=1)
    assert record["agent_member"] == str(member)


class TestCheckSchema:
    def test_known_version(self) -> None:
        """Version 1 is read."""
        assert check_schema({"schema": 1}) == 1

    @pytest.mark.parametrize("version", [2, 0, "1", None, True, 1.0])
    def test_unknown_version_is_named_with_where(self, version: object) -> None:
        """Any other version (or none) is refused, naming the version and where the record is."""
        where = "segment-00000000000000000001.sealed offset 8"
        payload = {"schema": version} if version is not None else {}
        with pytest.raises(UnknownSchema) as caught:
            check_schema(payload, where)
        assert str(caught.value) == f"{where}: record schema {version!r} is not a known version"
        assert caught.value.version == version


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b"", "not msgpack"),
        (b"\xc1", "not msgpack"),
        (b"\x93\x01\x02\x03", "a msgpack list, not a map"),
        (b"\x81\x91\x01\x01", "not msgpack"),
        (encode({"schema": 1}) + b"\x01", "not msgpack"),
    ],
)
def test_decode_refuses_what_is_not_a_map(payload: bytes, reason: str) -> None:
    """Bytes that are not exactly one msgpack map are refused with the reason."""
    with pytest.raises(RecordError, match=reason):
        decode(payload)
