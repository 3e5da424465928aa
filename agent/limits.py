"""Limits on what peers and clients may send: message sizes, GTID texts, updates, request rates.

The ``[limits]`` section of the agent's config is a :class:`LimitsConfig`; every key has a
default that a 9-member group never comes near::

    [limits]
    max_message_bytes = 4194304   # largest gRPC message received or sent, 64 KiB-256 MiB
    max_gtid_text = 196608        # longest GTID set text in a message, 1 KiB-max_message_bytes
    max_updates = 144             # most updates one message may carry, 72-100000
    gossip_rate = 200             # Exchange calls plus Push messages per second per peer host
    gossip_burst = 400            # ... and how many may come at once (the bucket's size)
    gossip_bytes_in_flight = 16777216  # gossip bytes one peer host may have decoded at once
    query_rate = 2000             # Query reads per second per client host (0: no limit)
    query_burst = 2000
    max_clients = 1024            # peer and client hosts whose rates are tracked at once
    max_members = 64              # members whose values the agent holds, 9-10000
    sql_connections_per_host = 16 # SQL endpoint connections open at once per client host
    sql_query_timeout_s = 5.0     # one SQL statement's time, 0.1-3600 s (then error 3024)
    sql_max_rows = 100000         # rows one SQL result may have, 1-10000000 (then error 1104)
    sql_max_join_size = 100000    # row combinations one SQL statement may examine (then 1104)
    sql_max_result_bytes = 16777216  # bytes one SQL result may take, 64 KiB-1 GiB (then 1104)
    sql_max_cost = 400000         # one SQL statement's estimated CPU, about us (then 1104)
    sql_max_allowed_packet = 16384   # longest SQL statement text, 1 KiB-1 GiB (then 1153)
    sql_failed_connections_threshold = 3  # failed logins of a user@host before delays (0: off)
    sql_min_connection_delay_ms = 1000    # the first delay, then 1 s more per failure ...
    sql_max_connection_delay_ms = 2147483647  # ... up to this, as MySQL's connection_control
    sql_connect_timeout_s = 10.0  # MySQL's connect_timeout: each login packet (then 1159, closed)
    sql_wait_timeout_s = 28800.0  # MySQL's wait_timeout: an idle session (then 4031, closed)
    sql_interactive_timeout_s = 28800.0  # ... for a client that says CLIENT_INTERACTIVE

This module is the one home of these defaults and of their bounds: the transports, the
wire decoder, the server and the gossip state take theirs from :data:`DEFAULT_LIMITS` (or
from the agent's own ``[limits]``), never from a constant of their own.

:class:`RateLimiter` keeps one token bucket per host and kind of request, in a table of at
most ``max_clients`` entries (the least recently seen is dropped first), so a flood from many
addresses costs a bounded amount of memory. A host over its rate is logged once when it goes
over, and once when it is admitted again after a second without refusals (with the count
refused meanwhile), never per request.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from grstats.core.checks import check_int, check_number, check_seconds
from grstats.core.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Callable

    import structlog

MIB = 1024 * 1024
#: The most members a Group Replication group has at a time (MySQL Reference Manual, Group
#: Replication Limitations, "Limit on Group Size").
GROUP_MAX_MEMBERS = 9
#: The values each member shares, :class:`grstats.agent.gossip.Key` (counts, view, applier,
#: gtid_executed, health, server, events, log); a test holds this to the enum.
KEYS_PER_MEMBER = 8

#: Message size limits accepted, in bytes.
MIN_MESSAGE_BYTES = 64 * 1024
TOP_MESSAGE_BYTES = 256 * MIB
#: The shortest GTID text limit accepted, in characters.
MIN_GTID_TEXT = 1024
#: The fewest updates a message must be allowed: every key of a full group's members.
MIN_UPDATES = GROUP_MAX_MEMBERS * KEYS_PER_MEMBER
TOP_UPDATES = 100_000
#: Gossip messages larger than this are decoded on a worker thread, not on the event loop
#: (a 9-member group's messages are a few KiB; a GTID text of 192 KiB takes ~20 ms to parse).
DECODE_ON_LOOP_BYTES = 64 * 1024
#: The most bytes of gossip one peer host may be allowed to have in flight.
MAX_BYTES_IN_FLIGHT = 4096 * MIB
#: The highest rate accepted, per second, and the largest burst.
MAX_RATE = 1_000_000.0
MAX_BURST = 1_000_000
#: How many hosts' rates may be tracked at once.
MIN_CLIENTS = 16
MAX_CLIENTS = 1_000_000
#: How many members' values the agent may be told to hold: at least a full group.
MIN_MEMBERS = GROUP_MAX_MEMBERS
TOP_MEMBERS = 10_000
#: The most connections to the SQL endpoint one client host may hold at once.
MAX_SQL_CONNECTIONS = 100_000
#: The longest a SQL statement may be allowed to run, in seconds, and the shortest.
MIN_SQL_QUERY_TIMEOUT_S = 0.1
MAX_SQL_QUERY_TIMEOUT_S = 3600.0
#: The most rows a SQL result may be allowed to have.
MAX_SQL_ROWS = 10_000_000
#: The most row combinations a SQL statement may be allowed to examine.
MAX_SQL_JOIN_SIZE = 10**12
#: The most a SQL statement may be allowed to cost (grstats.agent.sql.bounds' units).
MAX_SQL_COST = 10**12
#: The bounds of a SQL result's size, in bytes.
MIN_SQL_RESULT_BYTES = 64 * 1024
MAX_SQL_RESULT_BYTES = 1024 * MIB
#: The bounds of ``max_allowed_packet``, as MySQL's (sql/sys_vars.cc): 1 KiB..1 GiB.
MIN_SQL_PACKET = 1024
MAX_SQL_PACKET = 1024 * MIB
#: connection_control's bounds (plugin/connection_control/connection_delay.cc): the threshold
#: 0 (off)..INT_MAX32 and the delays 1000..INT_MAX32 ms.
MAX_CONNECTION_CONTROL = 2**31 - 1
MIN_CONNECTION_DELAY_MS = 1000
#: The bounds of the SQL endpoint's client timeouts, in seconds: MySQL's LONG_TIMEOUT
#: (3600 * 24 * 365) at the top, as ``connect_timeout``, ``wait_timeout`` and
#: ``interactive_timeout`` (sql/sys_vars.cc: ``Sys_connect_timeout``, ``Sys_net_wait_timeout``,
#: ``Sys_interactive_timeout``); fractions of a second down to 0.1 (MySQL's are whole seconds,
#: from 2 for connect_timeout and 1 for the others), so that tests need not wait.
MIN_SQL_CLIENT_TIMEOUT_S = 0.1
MAX_SQL_CLIENT_TIMEOUT_S = 365 * 24 * 3600.0
#: An episode of refusals ends at the first request admitted this long after the last refusal.
EPISODE_QUIET_S = 1.0


@dataclass(frozen=True, slots=True, kw_only=True)
class LimitsConfig:
    """The ``[limits]`` section: how much a peer or client may send; errors name ``limits.<key>``.

    Attributes:
        max_message_bytes: the largest gRPC message the agent receives or sends (server and
            client channels), 64 KiB..256 MiB.
        max_gtid_text: the longest GTID set text an update may carry, 1024..max_message_bytes.
        max_updates: the most updates one Exchange or Push message may carry, 72..100000.
        gossip_rate: Exchange calls plus Push messages admitted per second from one peer host;
            0 admits all.
        gossip_burst: how many gossip messages a peer host may send at once, 1..1000000.
        gossip_bytes_in_flight: the bytes of gossip messages from one peer host that the agent
            decodes and merges at once, max_message_bytes..4 GiB; a message past it gets
            RESOURCE_EXHAUSTED, so one host's messages cost at most this much memory.
        query_rate: Query reads admitted per second from one client host; 0 admits all.
        query_burst: how many reads a client host may send at once, 1..1000000.
        max_clients: hosts whose rates are tracked at once, 16..1000000.
        max_members: the most members whose values the agent holds (members come and go over
            a group's life; those unseen for ``retention_s`` are purged), 9..10000.
        sql_connections_per_host: connections to the SQL endpoint (``sql_listen``) one client
            host may hold at once, 1..100000; one more is refused with MySQL's error 1040.
        sql_query_timeout_s: how long a client waits for one SQL statement, 0.1..3600 s; then
            it gets MySQL's error 3024 and the connection stays open. The statement, bounded
            by ``sql_max_cost``, still runs to its end on the worker; its result is dropped.
        sql_max_rows: the most rows one SQL result may have, 1..10000000; a larger one is
            refused with error 1104 (add a WHERE or a LIMIT).
        sql_max_join_size: MySQL's ``max_join_size``: the most row combinations a statement
            may examine (the product of the sizes of each SELECT's tables, counted before it
            runs), 1..10**12; more is refused with error 1104 before it runs.
        sql_max_result_bytes: the most bytes one SQL result's values may take, 64 KiB..1 GiB;
            more is refused with error 1104.
        sql_max_cost: the most one SQL statement may cost, estimated before it is parsed,
            planned and run (:mod:`grstats.agent.sql.bounds`), in units of about a
            microsecond of CPU, 1..10**12; more is refused with error 1104 before it starts.
            The endpoint's one worker thread runs each statement to its end (nothing
            interrupts sqlglot's executor): this bounds how long one holds it.
        sql_max_allowed_packet: MySQL's ``max_allowed_packet``: the longest statement text
            (one client packet), 1 KiB..1 GiB; a longer one is read and dropped, answered with
            error 1153, and the connection stays open. 16 KiB by default (MySQL's is 64 MiB):
            sqlglot's parse and plan of a statement take memory and time in proportion to it
            (``sql_max_cost`` bounds them too: a longer text may need a larger one). It is
            also the longest string a function may build (longer is NULL, as MySQL's).
        sql_failed_connections_threshold: failed SQL logins of one account, ``'user'@'host'``
            (the user name a client gave and its address), before each further login of that
            account is delayed, as MySQL's connection_control plugin does; 0..2147483647, 0
            turns the delays off. Other accounts on the same host are not delayed.
        sql_min_connection_delay_ms: the shortest such delay, 1000..max, in milliseconds.
        sql_max_connection_delay_ms: the longest such delay, min..2147483647 ms.
        sql_connect_timeout_s: MySQL's ``connect_timeout``: how long the endpoint waits for
            each packet of a login (and for the TLS handshake) before it answers error 1159
            and closes the connection, 0.1..31536000 s; 10 s as MySQL's default.
        sql_wait_timeout_s: MySQL's ``wait_timeout``: how long a logged-in session may stay
            idle (no command) before the endpoint sends error 4031 and closes it,
            0.1..31536000 s; 28800 s (8 hours) as MySQL's default. A session may change its
            own (``SET SESSION wait_timeout``).
        sql_interactive_timeout_s: MySQL's ``interactive_timeout``: the ``wait_timeout`` of a
            session whose client said CLIENT_INTERACTIVE (the ``mysql`` and ``mariadb``
            shells), 0.1..31536000 s; 28800 s.
    """

    # A 9-member group's largest message, an exchange's answer with every value of every
    # member, is about 18 GTID texts (gtid_executed and transactions_committed_all_members per
    # member) and 5 KiB more: 4 MiB (gRPC's own default) holds 18 texts of max_gtid_text.
    max_message_bytes: int = 4 * MIB
    max_gtid_text: int = 192 * 1024
    max_updates: int = 2 * MIN_UPDATES  # every key of every member of a full group, twice over
    gossip_rate: float = 200.0
    gossip_burst: int = 400
    gossip_bytes_in_flight: int = 16 * MIB
    query_rate: float = 2000.0
    query_burst: int = 2000
    max_clients: int = 1024
    max_members: int = 64
    sql_connections_per_host: int = 16
    sql_query_timeout_s: float = 5.0
    sql_max_rows: int = 100_000
    sql_max_join_size: int = 100_000
    sql_max_result_bytes: int = 16 * MIB
    sql_max_cost: int = 400_000
    sql_max_allowed_packet: int = 16 * 1024
    sql_failed_connections_threshold: int = 3
    sql_min_connection_delay_ms: int = MIN_CONNECTION_DELAY_MS
    sql_max_connection_delay_ms: int = MAX_CONNECTION_CONTROL
    sql_connect_timeout_s: float = 10.0
    sql_wait_timeout_s: float = 28800.0
    sql_interactive_timeout_s: float = 28800.0

    def __post_init__(self) -> None:
        _check_count(
            "max_message_bytes", self.max_message_bytes, MIN_MESSAGE_BYTES, TOP_MESSAGE_BYTES
        )
        _check_count("max_gtid_text", self.max_gtid_text, MIN_GTID_TEXT, self.max_message_bytes)
        _check_count("max_updates", self.max_updates, MIN_UPDATES, TOP_UPDATES)
        _check_rate("gossip_rate", self.gossip_rate)
        _check_count("gossip_burst", self.gossip_burst, 1, MAX_BURST)
        _check_count(
            "gossip_bytes_in_flight",
            self.gossip_bytes_in_flight,
            self.max_message_bytes,
            MAX_BYTES_IN_FLIGHT,
        )
        _check_rate("query_rate", self.query_rate)
        _check_count("query_burst", self.query_burst, 1, MAX_BURST)
        _check_count("max_clients", self.max_clients, MIN_CLIENTS, MAX_CLIENTS)
        _check_count("max_members", self.max_members, MIN_MEMBERS, TOP_MEMBERS)
        _check_count(
            "sql_connections_per_host", self.sql_connections_per_host, 1, MAX_SQL_CONNECTIONS
        )
        check_seconds(
            "limits.sql_query_timeout_s",
            self.sql_query_timeout_s,
            MIN_SQL_QUERY_TIMEOUT_S,
            MAX_SQL_QUERY_TIMEOUT_S,
        )
        _check_count("sql_max_rows", self.sql_max_rows, 1, MAX_SQL_ROWS)
        _check_count("sql_max_join_size", self.sql_max_join_size, 1, MAX_SQL_JOIN_SIZE)
        _check_count(
            "sql_max_result_bytes",
            self.sql_max_result_bytes,
            MIN_SQL_RESULT_BYTES,
            MAX_SQL_RESULT_BYTES,
        )
        _check_count(
            "sql_max_allowed_packet", self.sql_max_allowed_packet, MIN_SQL_PACKET, MAX_SQL_PACKET
        )
        _check_count("sql_max_cost", self.sql_max_cost, 1, MAX_SQL_COST)
        _check_count(
            "sql_failed_connections_threshold",
            self.sql_failed_connections_threshold,
            0,
            MAX_CONNECTION_CONTROL,
        )
        _check_count(
            "sql_min_connection_delay_ms",
            self.sql_min_connection_delay_ms,
            MIN_CONNECTION_DELAY_MS,
            MAX_CONNECTION_CONTROL,
        )
        _check_count(
            "sql_max_connection_delay_ms",
            self.sql_max_connection_delay_ms,
            self.sql_min_connection_delay_ms,
            MAX_CONNECTION_CONTROL,
        )
        for name in ("sql_connect_timeout_s", "sql_wait_timeout_s", "sql_interactive_timeout_s"):
            check_seconds(
                f"limits.{name}",
                getattr(self, name),
                MIN_SQL_CLIENT_TIMEOUT_S,
                MAX_SQL_CLIENT_TIMEOUT_S,
            )

    @classmethod
    def from_table(cls, table: object) -> LimitsConfig:
        """Build the section from a TOML table; errors name ``limits.<key>``."""
        if isinstance(table, LimitsConfig):
            return table
        if not isinstance(table, dict):
            raise ConfigError(f"limits: {table!r} is not a table ([limits])")
        try:
            return cls(**table)
        except TypeError as exc:
            raise ConfigError(f"limits: {exc}") from exc

    @property
    def channel_options(self) -> list[tuple[str, int]]:
        """The gRPC options of every server and channel: message bounds and a fixed window."""
        return [
            ("grpc.max_receive_message_length", self.max_message_bytes),
            ("grpc.max_send_message_length", self.max_message_bytes),
            *FIXED_WINDOW_OPTIONS,
        ]


#: HTTP/2 flow control with a fixed 1 MiB window per stream instead of gRPC's BDP probing.
#: The probe sends a PING beside the data it measures and tunes the window from the answers:
#: with one small message a second on each of 8 push streams, those pings and their
#: acknowledgements were most of the work of gRPC's own threads (0.35 % of a core of an agent
#: of 9 members, 0.13 % without; docs/benchmarks.md, "Agent footprint"). A fixed 1 MiB window
#: (grpc-java's default flowControlWindow) still carries the largest message (max_message_bytes,
#: 4 MiB by default) in four round trips, where the 64 KiB default would take 64.
#: (grpc's chttp2_transport.cc, read_channel_args: lookahead_bytes sets the initial window.)
FIXED_WINDOW_OPTIONS: tuple[tuple[str, int], ...] = (
    ("grpc.http2.bdp_probe", 0),
    ("grpc.http2.lookahead_bytes", 1024 * 1024),
)


def _check_count(name: str, value: object, low: int, high: int) -> None:
    check_int(f"limits.{name}", value, low, high)


def _check_rate(name: str, value: object) -> None:
    check_number(
        f"limits.{name}",
        value,
        0,
        MAX_RATE,
        accepted=f"0 (no limit) or a rate in (0, {MAX_RATE:g}] per second",
    )


#: The limits of an agent whose config has no ``[limits]`` section.
DEFAULT_LIMITS = LimitsConfig()


def client_host(peer: str) -> str:
    """The host of a gRPC peer string (``ipv4:10.0.0.5:51234`` -> ``ipv4:10.0.0.5``).

    Rates are per host, not per connection: a client opening many connections is one client.
    """
    if peer.startswith("ipv6:[") and "]" in peer:
        return peer[: peer.index("]") + 1]
    if peer.startswith(("ipv4:", "ipv6:")):
        return peer.rpartition(":")[0]
    return peer


class ByteBudget:
    """Bytes in flight per host, at most ``limit`` each: ``gossip_bytes_in_flight``.

    A message is charged from the moment its handler holds its bytes until it is merged or
    refused (:meth:`take`, then :meth:`give`). Only hosts with bytes in flight are held, so
    the table is as large as the messages being handled at once.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._held: dict[str, int] = {}

    def held(self, peer: str) -> int:
        """The bytes in flight from ``peer``'s host."""
        return self._held.get(client_host(peer), 0)

    def take(self, peer: str, size: int) -> bool:
        """Charge ``size`` bytes to ``peer``'s host; False (nothing charged) past the limit."""
        host = client_host(peer)
        held = self._held.get(host, 0)
        if held + size > self.limit:
            return False
        self._held[host] = held + size
        return True

    def give(self, peer: str, size: int) -> None:
        """Return ``size`` bytes taken for ``peer``'s host."""
        host = client_host(peer)
        held = self._held.get(host, 0) - size
        if held > 0:
            self._held[host] = held
        else:
            self._held.pop(host, None)


@dataclass(slots=True)
class _Bucket:
    tokens: float
    at: float
    refused: int = 0  # in the current episode
    refused_at: float = 0.0


class RateLimiter:
    """Token buckets per (kind, host), at most ``max_clients`` of them: see the module docstring.

    Args:
        rates: per kind of request (``gossip``, ``query``), its (rate per second, burst);
            a rate of 0 admits everything of that kind without tracking it.
        max_clients: the most buckets held; the least recently used goes first.
        clock: monotonic seconds (injectable for tests).
        logger: where going over and coming back under are logged.
    """

    def __init__(
        self,
        rates: dict[str, tuple[float, int]],
        max_clients: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        logger: structlog.typing.FilteringBoundLogger | None = None,
    ) -> None:
        self._rates = rates
        self._max = max_clients
        self._clock = clock
        import structlog  # noqa: PLC0415  (a command that only reads the limits needs none)

        self._log = logger or structlog.get_logger()
        self._buckets: OrderedDict[tuple[str, str], _Bucket] = OrderedDict()

    @classmethod
    def from_limits(
        cls, limits: LimitsConfig, logger: structlog.typing.FilteringBoundLogger | None = None
    ) -> RateLimiter:
        """The limiter of a ``[limits]`` section."""
        rates = {
            "gossip": (limits.gossip_rate, limits.gossip_burst),
            "query": (limits.query_rate, limits.query_burst),
        }
        return cls(rates, limits.max_clients, logger=logger)

    def __len__(self) -> int:
        """The number of buckets held."""
        return len(self._buckets)

    def admit(self, kind: str, peer: str) -> bool:
        """Take one token of ``kind`` for ``peer``'s host; False when it has none left."""
        rate, burst = self._rates.get(kind, (0.0, 0))
        if not rate:
            return True
        key = (kind, client_host(peer))
        now = self._clock()
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _Bucket(float(burst), now)
            while len(self._buckets) > self._max:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(key)
            bucket.tokens = min(float(burst), bucket.tokens + (now - bucket.at) * rate)
            bucket.at = now
        if bucket.tokens >= 1:
            bucket.tokens -= 1
            if bucket.refused and now - bucket.refused_at >= EPISODE_QUIET_S:
                self._log.info("rate_limit_ended", kind=kind, client=key[1], refused=bucket.refused)
                bucket.refused = 0
            return True
        if not bucket.refused:
            self._log.warning("rate_limited", kind=kind, client=key[1], rate=rate, burst=burst)
        bucket.refused += 1
        bucket.refused_at = now
        return False
