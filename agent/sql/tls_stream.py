"""TLS, server side, over an asyncio stream that is already open: the STARTTLS of MySQL's protocol.

A MySQL client asks for TLS with an SSLRequest packet and sends its TLS ClientHello right
behind it, without waiting for an answer, so the ClientHello is often in the stream reader's
buffer when the server reads the SSLRequest. mysql-mimic 3.0.5 (the newest release)
``MysqlStream.start_tls`` switches with ``loop.start_tls`` on the socket's transport: the bytes
already buffered never reach the TLS protocol, the handshake waits for a ClientHello that was
sent already and hangs; it then writes asyncio's private ``_transport`` of the reader and the
writer. Python 3.11's ``StreamWriter.start_tls`` loses the buffered bytes the same way.

:func:`start_tls` is carried as a patch until a mysql-mimic release fixes that (the report to
file upstream is ``docs/upstream/mysql-mimic-starttls.md``). It uses public APIs only:
``loop.start_tls`` has no public way to be given bytes read already, so TLS runs here in an
``ssl.SSLObject`` over two ``ssl.MemoryBIO``, and the ciphertext is read with the plain
reader's ``read()``, which returns the bytes it holds already first: nothing is lost. It
returns a new, real ``asyncio.StreamReader`` and ``StreamWriter`` (what mysql-mimic's compiled
``MysqlStream`` takes), over :class:`_TlsTransport`:

- a pump task reads the plain reader, decrypts, gives the plaintext to the new reader
  (``feed_data``) and sends what TLS has to say (handshake records, alerts, key updates); the
  new reader pauses it through ``StreamReader.set_transport`` (``pause_reading`` and
  ``resume_reading``) when it holds twice its limit, so a client that floods is held back by
  TCP, not by memory;
- ``write()`` encrypts and writes the ciphertext to the plain writer; the new writer's protocol
  is the plain connection's, so ``drain()`` waits while the socket's transport is paused and
  ``wait_closed()`` waits for the socket;
- the client's EOF or close_notify is the new reader's EOF, a broken record its exception;
  ``close()`` sends close_notify, closes the socket and cancels the pump, which never raises.

Client-initiated renegotiation (TLS 1.2) is not supported: OpenSSL 3 servers refuse it, and
the endpoint's context sets ``OP_NO_RENEGOTIATION``. Only TLS's own errors are handled here:
the caller closes the connection on an exception.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from typing import Any

#: Ciphertext read from the plain stream at a time, all decrypted before the next read.
CHUNK = 64 * 1024
#: As ``loop.start_tls``'s default: a client that stalls its handshake is dropped after this.
HANDSHAKE_TIMEOUT_S = 60.0
#: asyncio's default reader limit (the plain reader's): the TLS reader holds up to twice this.
READER_LIMIT = 2**16


async def start_tls(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    context: ssl.SSLContext,
    *,
    handshake_timeout: float = HANDSHAKE_TIMEOUT_S,
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Run the server side of a TLS handshake on ``reader``/``writer``; the TLS reader and writer.

    The plain pair must not be used afterwards, except to close the connection. Raises
    ``ssl.SSLError`` when the handshake fails (the alert is sent), ``ConnectionResetError``
    when the client disconnects during it and ``ConnectionAbortedError`` after
    ``handshake_timeout`` seconds.
    """
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_side=True)
    try:
        async with asyncio.timeout(handshake_timeout):
            await _handshake(tls, incoming, outgoing, reader, writer)
    except TimeoutError as exc:
        msg = f"TLS handshake took longer than {handshake_timeout} s"
        raise ConnectionAbortedError(msg) from exc
    tls_reader = asyncio.StreamReader(limit=READER_LIMIT)
    transport = _TlsTransport(
        tls, incoming, outgoing, reader=reader, writer=writer, tls_reader=tls_reader
    )
    tls_reader.set_transport(transport)
    tls_writer = asyncio.StreamWriter(
        transport, writer.transport.get_protocol(), tls_reader, asyncio.get_running_loop()
    )
    return tls_reader, tls_writer


async def _handshake(
    tls: ssl.SSLObject,
    incoming: ssl.MemoryBIO,
    outgoing: ssl.MemoryBIO,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
) -> None:
    """Drive ``tls``'s handshake with the bytes of ``reader``, those it holds already first."""
    while True:
        try:
            tls.do_handshake()
        except ssl.SSLWantReadError:
            pass
        except ssl.SSLError:
            _send(outgoing, writer)  # the alert
            raise
        else:
            _send(outgoing, writer)
            await writer.drain()
            return
        _send(outgoing, writer)
        await writer.drain()
        data = await reader.read(CHUNK)
        if not data:
            msg = "connection closed during the TLS handshake"
            raise ConnectionResetError(msg)
        incoming.write(data)


def _send(outgoing: ssl.MemoryBIO, writer: asyncio.StreamWriter) -> None:
    """Write what TLS has to send (``outgoing``) to the plain ``writer``."""
    data = outgoing.read()
    if data:
        writer.write(data)


class _TlsTransport(asyncio.Transport):
    """The transport of the TLS reader and writer: encrypts writes, pumps and decrypts reads."""

    def __init__(  # noqa: PLR0913  (the TLS object, its two buffers, and the three streams)
        self,
        tls: ssl.SSLObject,
        incoming: ssl.MemoryBIO,
        outgoing: ssl.MemoryBIO,
        *,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        tls_reader: asyncio.StreamReader,
    ) -> None:
        super().__init__()
        self._tls = tls
        self._incoming = incoming
        self._outgoing = outgoing
        self._plain_reader = reader
        self._plain_writer = writer
        self._tls_reader = tls_reader
        self._ssl_extra: dict[str, Any] = {
            "ssl_object": tls,
            "sslcontext": tls.context,
            "cipher": tls.cipher(),
            "peercert": tls.getpeercert(),
            "compression": tls.compression(),
        }
        self._may_read = asyncio.Event()
        self._may_read.set()
        self._closing = False
        peer = writer.get_extra_info("peername")
        self._pump = asyncio.get_running_loop().create_task(
            self._run(), name=f"tls_stream.pump {peer}"
        )

    # -- reading: the pump --------------------------------------------------------------------

    async def _run(self) -> None:
        """Decrypt what the client sends into the TLS reader, until its EOF or an error."""
        try:
            while self._decrypt():
                await self._may_read.wait()
                data = await self._plain_reader.read(CHUNK)
                if not data:
                    break
                self._incoming.write(data)
        except Exception as exc:  # noqa: BLE001  (the reader's to raise: never the task's)
            with contextlib.suppress(Exception):
                _send(self._outgoing, self._plain_writer)  # an alert
            self._tls_reader.set_exception(exc)
        self._tls_reader.feed_eof()

    def _decrypt(self) -> bool:
        """Feed the TLS reader all it can from the bytes received; False at the TLS EOF."""
        while True:
            try:
                data = self._tls.read(CHUNK)
            except ssl.SSLWantReadError:
                _send(self._outgoing, self._plain_writer)  # key updates, tickets
                return True
            except ssl.SSLZeroReturnError:
                return False
            if not data:  # close_notify
                return False
            self._tls_reader.feed_data(data)

    def pause_reading(self) -> None:
        """The TLS reader holds enough: the pump reads no more (the socket's buffer fills)."""
        self._may_read.clear()

    def resume_reading(self) -> None:
        """The TLS reader was read: the pump goes on."""
        self._may_read.set()

    def is_reading(self) -> bool:
        """Whether the pump reads (not paused, not closed)."""
        return self._may_read.is_set() and not self.is_closing()

    # -- writing ------------------------------------------------------------------------------

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Encrypt ``data`` and write it to the socket's transport (nothing once closing)."""
        if self._closing:
            return
        view = memoryview(data)
        while view:
            view = view[self._tls.write(view) :]
        _send(self._outgoing, self._plain_writer)

    def can_write_eof(self) -> bool:
        """TLS has no half-close."""
        return False

    def write_eof(self) -> None:
        """Not for TLS, as asyncio's TLS transport."""
        msg = "TLS does not support half-closes"
        raise NotImplementedError(msg)

    def get_write_buffer_size(self) -> int:
        """The socket transport's: the ciphertext not sent yet."""
        return self._plain_writer.transport.get_write_buffer_size()

    def get_write_buffer_limits(self) -> tuple[int, int]:
        """The socket transport's."""
        return self._plain_writer.transport.get_write_buffer_limits()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        """Set the socket transport's."""
        self._plain_writer.transport.set_write_buffer_limits(high, low)

    # -- the rest -----------------------------------------------------------------------------

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        """TLS's as asyncio's TLS transport names them, else the socket's (``peername`` ...)."""
        if name in self._ssl_extra:
            return self._ssl_extra[name]
        return self._plain_writer.get_extra_info(name, default)

    def is_closing(self) -> bool:
        """Whether closed, or the socket's transport is closing."""
        return self._closing or self._plain_writer.is_closing()

    def close(self) -> None:
        """Send close_notify, close the socket, stop the pump; the TLS reader is at EOF."""
        if self._closing:
            return
        self._closing = True
        if not self._plain_writer.is_closing():
            with contextlib.suppress(ssl.SSLError):  # WantRead: the client's is not awaited
                self._tls.unwrap()
            _send(self._outgoing, self._plain_writer)
        self._plain_writer.close()
        self._stop()

    def abort(self) -> None:
        """Close the socket at once, without close_notify; stop the pump."""
        self._closing = True
        self._plain_writer.transport.abort()
        self._stop()

    def _stop(self) -> None:
        self._pump.cancel()
        self._tls_reader.feed_eof()
