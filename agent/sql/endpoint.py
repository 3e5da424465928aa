"""``SqlEndpoint``: the agent's MySQL-protocol server, around mysql-mimic's ``MysqlServer``.

One endpoint per agent, on the agent's event loop: it binds ``sql_listen``, logs clients in
(:mod:`grstats.agent.sql.auth`), offers TLS with the agent's ``[tls]`` certificate when one
is configured (re-read when its files change, like the gRPC server's), and gives each
connection a :class:`~grstats.agent.sql.session.GrstatsSession` that answers from the agent's
tables. Statements run on one worker thread the endpoint owns, so a heavy query never holds
the loop (the gossip periods and the gRPC services go on), and at most one runs at a time;
what each may cost is bounded by the ``sql_*`` keys of ``[limits]`` (:mod:`.session`).

A command longer than ``limits.sql_max_allowed_packet`` is read and dropped as it comes (it is
never held whole) and answered with MySQL's error 1153 ``Got a packet bigger than
'max_allowed_packet' bytes``; the connection stays open (MySQL closes it). Failed logins of
one account (``'user'@'host'``) slow its next logins down as MySQL's connection_control plugin
does (:class:`~grstats.agent.sql.auth.ConnectionControl`); other accounts of the host are not
slowed.

The endpoint closes what MySQL closes (:class:`_Stream`): a connection whose login packet (or
TLS handshake) does not come within ``limits.sql_connect_timeout_s`` (MySQL's
``connect_timeout``) is told 1159 ``Got timeout reading communication packets`` and closed; a
session idle for its ``wait_timeout`` (``limits.sql_wait_timeout_s``, or
``sql_interactive_timeout_s`` for a client that says CLIENT_INTERACTIVE; ``SET SESSION
wait_timeout`` changes a session's own) is told 4031 ``The client was disconnected by the
server because of inactivity...`` and closed, as MySQL 8.0.24 and later do. Both are logged
at debug only: a flood of idle connections costs timers, not log lines.

A client host may hold ``limits.sql_connections_per_host`` connections at once; one more is
refused at connect with MySQL's error 1040 ``Too many connections``. A connection whose
client disconnects abruptly or sends a malformed packet is closed, alone; it is logged at
debug (a disconnect) or as a warning at most once per 10 s per kind of failure (no traceback),
never per packet. mysql-mimic's own log records are quietened to match: its per-connection
info lines and the errors it logs for statements the client was answered with an error do
not reach the agent's log (unless at debug level).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import ssl
from collections import Counter
from typing import TYPE_CHECKING, Any, cast

import structlog
from mysql_mimic import packets
from mysql_mimic.connection import Connection
from mysql_mimic.control import LocalControl, TooManyConnections
from mysql_mimic.errors import ErrorCode, MysqlError
from mysql_mimic.server import MysqlServer
from mysql_mimic.stream import ConnectionClosed, MysqlStream
from mysql_mimic.types import Capabilities

from grstats.agent.sql import tls_stream
from grstats.agent.sql.auth import (
    ClientIdentity,
    ConnectionControl,
    OpenIdentity,
    PasswordFileIdentity,
)
from grstats.core.address import join_address, split_address
from grstats.core.errors import ConfigError
from grstats.core.log import ThrottledWarning
from grstats.core.mysql_errors import (
    ER_CLIENT_INTERACTION_TIMEOUT,
    ER_NET_PACKET_TOO_LARGE,
    ER_NET_READ_INTERRUPTED,
)
from grstats.core.tls import FileWatch

if TYPE_CHECKING:
    from collections.abc import Callable

    from mysql_mimic.session import BaseSession
    from structlog.typing import FilteringBoundLogger

    from grstats.agent.config import AgentConfig
    from grstats.agent.sql.session import GrstatsSession, SqlSource
    from grstats.core.tls import TlsConfig

__all__ = ["PerHostControl", "SqlEndpoint"]

#: A failing connection is logged at most this often per kind of failure.
LOG_EVERY_S = 10.0
#: The longest text of a client's failure put in a log line.
MAX_ERROR_CHARS = 200

#: The message of MySQL's ER_NET_PACKET_TOO_LARGE.
PACKET_TOO_LARGE = "Got a packet bigger than 'max_allowed_packet' bytes"
#: What MySQL tells a client whose login packet did not come within ``connect_timeout``
#: (ER_NET_READ_INTERRUPTED, set by net_serv.cc's ``net_read_raw_loop`` and sent by
#: sql_connect.cc's ``login_connection``), and one idle past ``wait_timeout``
#: (ER_CLIENT_INTERACTION_TIMEOUT, MySQL 8.0.24+, the same ``net_read_raw_loop`` for the first
#: packet of a command; share/messages_to_clients.txt has its text).
READ_INTERRUPTED = "Got timeout reading communication packets"
INACTIVITY = (
    "The client was disconnected by the server because of inactivity. "
    "See wait_timeout and interactive_timeout for configuring this behavior."
)
#: The longest the endpoint tries to send that farewell to a client that does not read.
FAREWELL_S = 1.0
#: The largest payload of one MySQL packet; a longer command comes in several.
_MAX_PAYLOAD = 0xFFFFFF
#: How much of a too-large command is read at a time to be dropped.
_DISCARD_CHUNK = 64 * 1024

#: What a client that went away (or never spoke MySQL) makes a connection fail with.
_DISCONNECTS = (ConnectionClosed, ConnectionError, asyncio.IncompleteReadError, EOFError)


class SqlEndpoint:
    """The MySQL-protocol endpoint of one agent: see the module docstring.

    Args:
        source: what the sessions read (the agent: its tables and identity), on the loop.
        config: the agent's config: ``sql_listen``, ``sql_password_file``, ``[tls]`` and the
            ``sql_*`` keys of ``[limits]``.
        log: the agent's logger.

    Attributes:
        address: the ``host:port`` bound once started (the real port for port 0), else None.
    """

    def __init__(self, source: SqlSource, config: AgentConfig, log: FilteringBoundLogger) -> None:
        assert config.sql_listen is not None
        self._source = source
        self._config = config
        self._log = log
        self._server: _Server | None = None
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self.address: str | None = None

    async def start(self) -> str:
        """Bind ``sql_listen`` and serve; return the address bound.

        Raises:
            ConfigError: ``sql_listen: cannot bind ...`` when the address is taken or invalid
                here; nothing is left running.
        """
        # Imported here: the session brings sqlglot's executor, heavy and needed only now.
        from grstats.agent.sql.session import GrstatsSession  # noqa: PLC0415

        listen = self._config.sql_listen
        assert listen is not None
        quiet_mimic_logging()
        executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="grstats-sql")
        limits = self._config.limits

        def new_session() -> GrstatsSession:
            return GrstatsSession(self._source, limits, executor)

        control = ConnectionControl(
            limits.sql_failed_connections_threshold,
            limits.sql_min_connection_delay_ms,
            limits.sql_max_connection_delay_ms,
            limits.max_clients,
        )
        identity = (
            OpenIdentity(self._log, control)
            if self._config.sql_password_file is None
            else PasswordFileIdentity(self._config.sql_password_file, self._log, control)
        )
        server = _Server(
            new_session,
            identity,
            PerHostControl(limits.sql_connections_per_host, self._log),
            self._config.tls,
            self._log,
            max_packet=limits.sql_max_allowed_packet,
            connect_timeout_s=limits.sql_connect_timeout_s,
        )
        host, port = split_address(listen, "sql_listen", lowest_port=0)
        try:
            await server.start_server(host=host, port=port, reuse_address=True)
        except OSError as exc:
            executor.shutdown(wait=False)
            raise ConfigError(f"sql_listen: cannot bind {listen}: {exc}") from exc
        self._server, self._executor = server, executor
        bound = server.sockets()[0].getsockname()[1]
        self.address = join_address(host, bound)
        return self.address

    async def aclose(self) -> None:
        """Stop accepting, close every connection, stop the worker; safe to call twice."""
        server, self._server = self._server, None
        if server is not None:
            await server.aclose()
        executor, self._executor = self._executor, None
        if executor is not None:
            # A statement still running ends by itself (bounded by limits.sql_max_cost, see
            # session._Job) with no one to answer; queued ones are cancelled here.
            executor.shutdown(wait=False, cancel_futures=True)

    @property
    def connections(self) -> int:
        """How many client connections are open."""
        return 0 if self._server is None else len(self._server.tasks)


class PerHostControl(LocalControl):
    """mysql-mimic's connection registry, refusing a host's connection over ``per_host``.

    mysql-mimic calls :meth:`add` when a client connects, before the handshake (a refusal is
    answered with error 1040), and :meth:`remove` when its connection ends.
    """

    def __init__(self, per_host: int, log: FilteringBoundLogger) -> None:
        super().__init__()
        self._per_host = per_host
        self._hosts: dict[int, str] = {}  # connection id -> its client host
        self._open: Counter[str] = Counter()
        self._warn = ThrottledWarning(log, "sql_too_many_connections", LOG_EVERY_S)

    async def add(self, connection: Connection) -> int:
        """Register a new connection; TooManyConnections when its host has its fill."""
        host = _client_host(connection)
        if self._open[host] >= self._per_host:
            self._warn("per_host", client=host, limit=self._per_host)
            raise TooManyConnections
        connection_id: int = await super().add(connection)
        self._hosts[connection_id] = host
        self._open[host] += 1
        return connection_id

    async def remove(self, connection_id: int) -> None:
        """Forget a connection that ended."""
        await super().remove(connection_id)
        host = self._hosts.pop(connection_id, None)
        if host is not None:
            self._open[host] -= 1
            if not self._open[host]:
                del self._open[host]


class _TimedOut(BaseException):
    """A client kept the endpoint waiting too long: ends the connection, after the farewell.

    A BaseException, as :class:`_Refused`: mysql-mimic's handshake answers any Exception with
    error 1043 of its own, and the farewell was sent already. Its text names the variable
    and its seconds (``wait_timeout 28800 s``).
    """


class _Stream:
    """mysql-mimic's packet stream, bounded by ``max_packet``, whose TLS keeps the bytes read.

    A client sends its TLS ClientHello right behind its SSLRequest packet, without waiting,
    so the ClientHello is often in the stream reader's buffer when the server switches to TLS:
    mysql-mimic's switch loses it, and the handshake hangs. This one reads those bytes first
    (:mod:`.tls_stream`), then reads and writes over TLS. A command of more than ``max_packet``
    bytes is dropped as it is read and answered with 1153 (``refuse`` makes the error packet,
    the connection's). Everything else is the wrapped ``MysqlStream``'s (a compiled class,
    which cannot be subclassed).

    Every read is bounded in time, as MySQL's are by its net read timeout: until the login
    is done each packet (and the TLS handshake) must come within ``connect_timeout_s``
    (``login_connection``, sql/sql_connect.cc: MySQL reads the whole packet in that time
    when ``timeout_on_full_packet``, net_serv.cc), else the client is told 1159; after it,
    each command within ``idle()`` seconds, the session's ``wait_timeout`` (``do_command``,
    sql/sql_parse.cc), else 4031. Then the connection ends (:class:`_TimedOut`). A wait
    is one timer on the event loop: idle connections cost it nothing else.
    """

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        max_packet: int,
        connect_timeout_s: float,
    ) -> None:
        self._stream = MysqlStream(reader, writer)
        self._reader = reader
        self._writer = writer
        self._max_packet = max_packet
        self._connect_timeout_s = connect_timeout_s
        self._before: bytes | None = None
        self.refuse: Callable[..., bytes] | None = None
        #: The session's wait_timeout, once the login is done (None: still logging in).
        self.idle: Callable[[], float] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    def before_next(self, more_data: bytes) -> None:
        """Send ``more_data`` as an AuthMoreData packet before the next packet written.

        caching_sha2_password's ``fast_auth_success`` precedes the login's OK packet, which
        mysql-mimic writes itself.
        """
        self._before = packets.make_auth_more_data(more_data)

    async def write(self, data: bytes, drain: bool = True) -> None:
        """``MysqlStream.write``, after the packet :meth:`before_next` holds, if any."""
        before, self._before = self._before, None
        if before is not None:
            await self._stream.write(before, drain=False)
        await self._stream.write(data, drain=drain)

    async def read(self) -> bytes:
        """The next command (a packet, or several of 16 MiB), as ``MysqlStream.read``.

        One longer than ``max_packet`` is answered with 1153, and the next one is read.
        """
        while True:
            data = await self._read_in_time()
            if data is not None:
                return data
            assert self.refuse is not None
            await self._stream.write(
                self.refuse(msg=PACKET_TOO_LARGE, code=ER_NET_PACKET_TOO_LARGE)
            )
            self._stream.reset_seq()

    async def _read_in_time(self) -> bytes | None:
        """:meth:`_read_command` within the time the connection's phase allows (see the class).

        Raises:
            _TimedOut: after the client was told 1159 (logging in) or 4031 (idle).
        """
        idle = self.idle
        seconds = self._connect_timeout_s if idle is None else idle()
        try:
            async with asyncio.timeout(seconds):
                return await self._read_command()
        except TimeoutError:
            pass
        if idle is None:
            await self._farewell(ER_NET_READ_INTERRUPTED, READ_INTERRUPTED)
            raise _TimedOut(f"connect_timeout {seconds:g} s")
        await self._farewell(ER_CLIENT_INTERACTION_TIMEOUT, INACTIVITY)
        raise _TimedOut(f"wait_timeout {seconds:g} s")

    async def _farewell(self, code: int, message: str) -> None:
        """Tell the client why it is closed, if it reads within :data:`FAREWELL_S`.

        MySQL sends the error although the client is not waiting for one; a client sees it at
        its next read (the mysql client: ``ERROR 4031 (HY000)``). The packet's sequence is
        the one the client's packet would have had: 0 for a command, as net_serv.cc's
        "First packet always wait for net_wait_timeout".
        """
        assert self.refuse is not None
        with contextlib.suppress(TimeoutError, *_DISCONNECTS):
            async with asyncio.timeout(FAREWELL_S):
                await self._stream.write(self.refuse(msg=message, code=code))

    async def _read_command(self) -> bytes | None:
        """One command's payload; None when it was longer than ``max_packet`` (dropped)."""
        data = bytearray()
        dropped = False
        while True:
            try:
                header = await self._reader.readexactly(4)
            except asyncio.IncompleteReadError as exc:
                raise ConnectionClosed from exc
            word = int.from_bytes(header, "little")
            length, sequence = word & _MAX_PAYLOAD, word >> 24
            expected = next(self._stream.seq)
            if sequence != expected:
                raise MysqlError(
                    f"Expected seq({expected}) got seq({sequence})", ErrorCode.MALFORMED_PACKET
                )
            if dropped or len(data) + length > self._max_packet:
                dropped = True
                data = bytearray()
                await self._drop(length)
            elif length:
                data += await self._reader.readexactly(length)
            if length < _MAX_PAYLOAD:
                return None if dropped else bytes(data)

    async def _drop(self, length: int) -> None:
        """Read ``length`` bytes and keep none of them."""
        while length:
            chunk = await self._reader.read(min(length, _DISCARD_CHUNK))
            if not chunk:
                raise ConnectionClosed
            length -= len(chunk)

    async def start_tls(self, context: ssl.SSLContext) -> None:
        """Switch the connection to TLS, server side, keeping the bytes read ahead.

        mysql-mimic's ``MysqlStream.start_tls`` would lose them (:mod:`.tls_stream`): a new
        ``MysqlStream`` over the TLS reader and writer takes over, at the packet sequence the
        SSLRequest left, and so do this stream's own reads.
        """
        reader, writer = await tls_stream.start_tls(
            self._reader, self._writer, context, handshake_timeout=self._connect_timeout_s
        )
        stream = MysqlStream(reader, writer)
        stream.seq = self._stream.seq
        self._stream, self._reader, self._writer = stream, reader, writer

    def close(self) -> None:
        """Close the connection (over TLS: after close_notify, and its reading task ends)."""
        self._writer.close()


class _Refused(BaseException):
    """A login was refused: ends the connection (mysql-mimic's command loop catches Exception)."""


class _Connection(Connection):
    """A mysql-mimic connection that ends when a login (or COM_CHANGE_USER) is refused.

    mysql-mimic answers a refused login with an error packet and then goes on to the command
    phase, where a client that ignored the error could run statements: MySQL closes the
    connection instead, and so does this.
    """

    async def connection_phase(self) -> None:
        """mysql-mimic's login, then the session's wait_timeout bounds each wait for a command.

        A client that said CLIENT_INTERACTIVE waits ``interactive_timeout`` instead, as MySQL's
        ``server_mpvio_update_thd`` (sql/auth/sql_authentication.cc) sets it at login.
        """
        await super().connection_phase()
        session = cast("GrstatsSession", self.session)
        if self.capabilities & Capabilities.CLIENT_INTERACTIVE:
            session.interactive()
        stream = cast("_Stream", self.stream)
        stream.idle = lambda: session.wait_timeout_s

    async def authenticate(self, *args: Any, **kwargs: Any) -> None:
        self.session.username = None
        identity = self.identity_provider
        if isinstance(identity, ClientIdentity):
            # The account takes the client's plugin when its response is for that plugin: a
            # scramble, or the plugin the greeting offered. An empty response for another
            # plugin (libmariadb shows no plugin the data of another) gets an auth switch.
            plugin = kwargs.get("client_plugin_name")
            answered = bool(kwargs.get("auth_response")) or plugin == self.handshake_auth_plugin
            identity.client_plugin = plugin if answered else None
        await super().authenticate(*args, **kwargs)
        if self.session.username is None:
            raise _Refused


class _Server(MysqlServer):
    """``MysqlServer`` that closes a failed connection alone, quietly, and renews its TLS.

    Its connection callback is mysql-mimic's, but with :class:`_Connection`, the socket always
    closed (mysql-mimic leaves it open after a 1040) and a client's failure logged by us.
    """

    def __init__(  # noqa: PLR0913  (mysql-mimic's server and the endpoint's own settings)
        self,
        session_factory: Callable[[], BaseSession],
        identity: OpenIdentity | PasswordFileIdentity,
        control: PerHostControl,
        tls: TlsConfig | None,
        log: FilteringBoundLogger,
        *,
        max_packet: int,
        connect_timeout_s: float,
    ) -> None:
        self._tls = tls if tls is not None and tls.cert_file is not None else None
        self._watch = FileWatch(self._tls) if self._tls is not None else None
        super().__init__(
            session_factory=session_factory,
            identity_provider=identity,
            control=control,
            ssl=_server_context(self._tls) if self._tls is not None else None,
        )
        self._new_session = session_factory
        self._identity = identity
        self._max_packet = max_packet
        self._connect_timeout_s = connect_timeout_s
        self._log = log
        self._warn = ThrottledWarning(log, "sql_connection_failed", LOG_EVERY_S)
        self.tasks: set[asyncio.Task[Any]] = set()

    async def _client_connected_cb(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        """Serve one client: mysql-mimic's own callback, but with :class:`_Connection`."""
        task = asyncio.current_task()
        assert task is not None
        self.tasks.add(task)
        connection_id: int | None = None
        stream: _Stream | None = None
        try:
            self._renew_tls()
            stream = _Stream(reader, writer, self._max_packet, self._connect_timeout_s)
            connection = _Connection(
                stream=stream,  # type: ignore[arg-type]  # a MysqlStream by delegation
                session=self._new_session(),
                control=self.control,
                server_capabilities=self.capabilities,
                # the client's own: its failed logins are counted for its host
                identity_provider=self._identity.for_client(_host_of(writer), stream.before_next),
                ssl=self.ssl,
            )
            stream.refuse = connection.error
            try:
                connection_id = await self.control.add(connection)
            except TooManyConnections:
                await stream.write(
                    connection.error(msg="Too many connections", code=ErrorCode.CON_COUNT_ERROR)
                )
                return
            connection.connection_id = connection_id
            await connection.start()
        except _Refused:
            pass  # told 1045 and logged by the plugin
        except _TimedOut as exc:  # told 1159 or 4031; MySQL logs these at its info level
            self._log.debug("sql_client_timed_out", client=_peer(writer), waited=str(exc))
        except _DISCONNECTS as exc:
            self._log.debug("sql_client_disconnected", client=_peer(writer), error=_text(exc))
        except Exception as exc:  # noqa: BLE001  (a client's garbage: this connection only)
            self._warn(type(exc).__name__, client=_peer(writer), error=_text(exc))
        finally:
            self.tasks.discard(task)
            if stream is not None:
                stream.close()
            writer.close()
            if connection_id is not None:
                await self.control.remove(connection_id)

    def _renew_tls(self) -> None:
        if self._watch is not None and self._tls is not None and self._watch.changed():
            with contextlib.suppress(OSError, ssl.SSLError):  # half-written: next time
                self.ssl = _server_context(self._tls)

    async def aclose(self) -> None:
        self.close()
        tasks = list(self.tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.wait_closed()


def _server_context(tls: TlsConfig) -> ssl.SSLContext:
    """A server-side TLS context with the agent's certificate and key."""
    assert tls.cert_file is not None
    assert tls.key_file is not None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.options |= ssl.OP_NO_RENEGOTIATION  # not supported by tls_stream (OpenSSL 3's default)
    context.load_cert_chain(tls.cert_file, tls.key_file)
    return context


def _client_host(connection: Connection) -> str:
    return _host_of(connection.stream.writer)


def _host_of(writer: asyncio.StreamWriter) -> str:
    peer = writer.get_extra_info("peername")
    return str(peer[0]) if isinstance(peer, tuple) and peer else str(peer)


def _peer(writer: asyncio.StreamWriter) -> str:
    peer = writer.get_extra_info("peername")
    if isinstance(peer, tuple) and len(peer) >= 2:
        return join_address(str(peer[0]), int(peer[1]))
    return str(peer)


def _text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:MAX_ERROR_CHARS]


class _MimicRecords(logging.Filter):
    """Keeps mysql-mimic's statement errors and tracebacks out of the agent's log.

    mysql-mimic logs at ``error`` each error it answers a statement with (the client was told)
    and each unexpected failure of a statement with its traceback (a client's malformed
    command can cause one): the first are dropped, the second logged as one warning line at
    most once per 10 s per kind, unless the agent logs at debug.
    """

    def __init__(self) -> None:
        super().__init__()
        self._warn = ThrottledWarning(structlog.get_logger(), "sql_statement_failed", LOG_EVERY_S)

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, MysqlError):
            return logging.getLogger().isEnabledFor(logging.DEBUG)
        if record.exc_info and record.exc_info[1] is not None:
            if logging.getLogger().isEnabledFor(logging.DEBUG):
                return True
            self._warn(type(record.exc_info[1]).__name__, error=_text(record.exc_info[1]))
            return False
        return True


def quiet_mimic_logging() -> None:
    """Quieten mysql-mimic's and sqlglot's loggers (see :class:`_MimicRecords`); idempotent."""
    debug = logging.getLogger().isEnabledFor(logging.DEBUG)
    logging.getLogger("mysql_mimic").setLevel(logging.DEBUG if debug else logging.WARNING)
    logging.getLogger("sqlglot").setLevel(logging.DEBUG if debug else logging.ERROR)
    connection = logging.getLogger("mysql_mimic.connection")
    if not any(isinstance(f, _MimicRecords) for f in connection.filters):
        connection.addFilter(_MimicRecords())
