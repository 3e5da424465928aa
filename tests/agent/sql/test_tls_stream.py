"""STARTTLS on an open stream (agent/sql/tls_stream.py), alone and in the SQL endpoint."""

from __future__ import annotations

import asyncio
import gc
import hashlib
import socket
import ssl
import struct
import threading
import uuid
from typing import TYPE_CHECKING

import pytest

from grstats.agent.sql import tls_stream
from grstats.core.tls import TlsConfig
from tests.agent.sql.test_endpoint import packet, read_packet, serve
from tests.certs import make_certs

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable
    from pathlib import Path

    from tests.agent.test_runtime import Group

#: CLIENT_PROTOCOL_41, CLIENT_SSL, CLIENT_SECURE_CONNECTION, CLIENT_PLUGIN_AUTH
CAPABILITIES = 0x200 | 0x800 | 0x8000 | 0x80000
#: The 32 bytes of a HandshakeResponse41 that an SSLRequest is (utf8mb4, max packet 16 MiB).
SSL_REQUEST = struct.pack("<IIB", CAPABILITIES, 2**24, 45) + bytes(23)
PUMP = "tls_stream.pump"


@pytest.fixture(name="certs", scope="module")
def _certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CA and a certificate for 127.0.0.1 and localhost."""
    return make_certs(tmp_path_factory.mktemp("tls"), f"db1={uuid.uuid4()}@127.0.0.1,localhost")


def server_context(certs: Path) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certs / "db1.pem", certs / "db1.key")
    return context


def client_context(certs: Path) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(certs / "ca.pem"))


def pumps() -> list[asyncio.Task[object]]:
    """The TLS pump tasks still running."""
    return [task for task in asyncio.all_tasks() if task.get_name().startswith(PUMP)]


async def settled(condition: Callable[[], bool], seconds: float = 1.0) -> bool:
    """Whether ``condition`` holds within ``seconds``."""
    for _ in range(int(seconds / 0.01)):
        if condition():
            return True
        await asyncio.sleep(0.01)
    return condition()


class BioClient:
    """A TLS client over a blocking socket through memory buffers: each TCP write is chosen."""

    def __init__(self, sock: socket.socket, context: ssl.SSLContext) -> None:
        self.sock = sock
        self.incoming, self.outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = context.wrap_bio(self.incoming, self.outgoing, server_hostname="localhost")

    def client_hello(self) -> bytes:
        """The first handshake flight, not sent."""
        with pytest.raises(ssl.SSLWantReadError):
            self.tls.do_handshake()
        return self.outgoing.read()

    def handshake(self) -> None:
        """Finish the handshake the ClientHello began."""
        while True:
            try:
                self.tls.do_handshake()
            except ssl.SSLWantReadError:
                self.flush()
                self.receive()
            else:
                self.flush()
                return

    def receive(self) -> None:
        data = self.sock.recv(65536)
        assert data, "the server closed the connection"
        self.incoming.write(data)

    def flush(self) -> None:
        data = self.outgoing.read()
        if data:
            self.sock.sendall(data)

    def send_packet(self, sequence: int, payload: bytes) -> None:
        self.tls.write(packet(sequence, payload))
        self.flush()

    def read_exactly(self, size: int) -> bytes:
        data = bytearray()
        while len(data) < size:
            try:
                data += self.tls.read(size - len(data))
            except ssl.SSLWantReadError:
                self.receive()
        return bytes(data)

    def read_packet(self) -> bytes:
        header = self.read_exactly(4)
        return self.read_exactly(int.from_bytes(header[:3], "little"))


def select_1_with_hello_in_one_write(address: str, certs: Path) -> list[bytes]:
    """SSLRequest and ClientHello in one TCP write, then log in and SELECT 1: the answer's packets."""
    host, _, port = address.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=1.5) as sock:
        greeting = read_packet(sock)
        assert greeting[:1] == b"\x0a"
        client = BioClient(sock, client_context(certs))
        sock.sendall(packet(1, SSL_REQUEST) + client.client_hello())
        client.handshake()
        client.send_packet(2, SSL_REQUEST + b"grstats\x00\x00caching_sha2_password\x00")
        while (answer := client.read_packet())[:1] == b"\x01":  # AuthMoreData, then OK
            pass
        assert answer[:1] == b"\x00", answer
        client.send_packet(0, b"\x03SELECT 1")
        result = [client.read_packet() for _ in range(5)]  # count, column, EOF, row, EOF
        client.send_packet(0, b"\x01")  # COM_QUIT
        return result


async def test_sslrequest_and_client_hello_in_one_write(group: Group, certs: Path) -> None:
    """A ClientHello read with the SSLRequest is not lost: the handshake completes and a query answers."""
    tls = TlsConfig(
        cert_file=certs / "db1.pem", key_file=certs / "db1.key", ca_file=certs / "ca.pem"
    )
    served = await serve(group.agents[0], tls=tls)
    try:
        result = await asyncio.to_thread(select_1_with_hello_in_one_write, served.address, certs)
        assert result[0] == b"\x01"
        assert result[3] == b"\x011"
        assert await settled(lambda: served.endpoint.connections == 0 and not pumps())
    finally:
        await served.endpoint.aclose()


def leave_mid_handshake(address: str, certs: Path) -> None:
    """Ask for TLS, send a ClientHello, read the server's answer and disconnect."""
    host, _, port = address.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=1.5) as sock:
        read_packet(sock)
        client = BioClient(sock, client_context(certs))
        sock.sendall(packet(1, SSL_REQUEST) + client.client_hello())
        client.receive()


async def test_a_client_gone_mid_handshake_leaves_no_task(
    group: Group, certs: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A client that disconnects during the TLS handshake ends its connection and leaves no task."""
    tls = TlsConfig(
        cert_file=certs / "db1.pem", key_file=certs / "db1.key", ca_file=certs / "ca.pem"
    )
    served = await serve(group.agents[0], tls=tls)
    before = asyncio.all_tasks()
    try:
        await asyncio.to_thread(leave_mid_handshake, served.address, certs)
        assert await settled(
            lambda: served.endpoint.connections == 0 and asyncio.all_tasks() <= before
        )
        gc.collect()
        assert "never retrieved" not in caplog.text
    finally:
        await served.endpoint.aclose()


# -- the module alone ---------------------------------------------------------------------------

Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]
#: The test server's port, and what returns its next connection's TLS reader and writer.
Server = tuple[int, "Callable[[], Awaitable[Streams]]"]


@pytest.fixture(name="tls_server")
async def _tls_server(certs: Path) -> AsyncIterator[Server]:
    """A server on 127.0.0.1 port 0 that switches each connection to TLS at once."""
    context = server_context(certs)
    accepted: asyncio.Queue[Streams] = asyncio.Queue()
    writers: list[asyncio.StreamWriter] = []

    async def switch(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)
        streams = await tls_stream.start_tls(reader, writer, context)
        writers.append(streams[1])  # closed first
        await accepted.put(streams)

    server = await asyncio.start_server(switch, "127.0.0.1", 0)

    async def next_connection() -> Streams:
        return await asyncio.wait_for(accepted.get(), 2)

    yield server.sockets[0].getsockname()[1], next_connection
    for writer in reversed(writers):
        writer.close()
    server.close()
    await server.wait_closed()


def tls_client(port: int, certs: Path) -> ssl.SSLSocket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=2)
    return client_context(certs).wrap_socket(sock, server_hostname="localhost")


async def test_a_flooding_client_is_held_back_and_nothing_is_lost(
    tls_server: Server, certs: Path
) -> None:
    """A reader not read pauses the pump, so a client's flood stops at TCP; reading resumes it."""
    port, next_connection = tls_server
    client = await asyncio.to_thread(tls_client, port, certs)
    flood = bytes(range(256)) * (32 * 4096)  # 32 MiB: more than the kernel's socket buffers
    sender = threading.Thread(target=client.sendall, args=(flood,), daemon=True)
    try:
        reader, writer = await next_connection()
        client.settimeout(10)
        sender.start()
        await asyncio.sleep(0.3)
        assert isinstance(writer.transport, asyncio.Transport)
        assert not writer.transport.is_reading()
        assert sender.is_alive()  # held back: the server holds a few chunks, not the flood
        received = await asyncio.wait_for(reader.readexactly(len(flood)), 5)
        assert hashlib.sha256(received).digest() == hashlib.sha256(flood).digest()
        await asyncio.to_thread(sender.join, 2)
        assert not sender.is_alive()
    finally:
        client.close()


def read_all(client: ssl.SSLSocket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = client.recv(size - len(data))
        assert chunk
        data += chunk
    return bytes(data)


async def test_drain_waits_for_a_client_that_does_not_read(tls_server: Server, certs: Path) -> None:
    """The TLS writer's drain() waits while the socket's transport is paused, as a plain one's."""
    port, next_connection = tls_server
    client = await asyncio.to_thread(tls_client, port, certs)
    big = bytes(range(256)) * (32 * 4096)  # 32 MiB: more than the kernel's socket buffers
    try:
        _, writer = await next_connection()
        writer.write(big)
        drained = asyncio.ensure_future(writer.drain())
        await asyncio.sleep(0.3)
        assert not drained.done()
        assert writer.transport.get_write_buffer_size() > 0
        received = await asyncio.to_thread(read_all, client, len(big))
        await asyncio.wait_for(drained, 2)
        assert hashlib.sha256(received).digest() == hashlib.sha256(big).digest()
    finally:
        client.close()


async def test_the_tls_writer_answers_the_transports_questions(
    tls_server: Server, certs: Path
) -> None:
    """get_extra_info answers TLS's questions as asyncio's TLS transport, and the socket's."""
    port, next_connection = tls_server
    client = await asyncio.to_thread(tls_client, port, certs)
    try:
        _, writer = await next_connection()
        assert writer.get_extra_info("peername") == client.getsockname()
        assert writer.get_extra_info("sockname") == client.getpeername()
        assert isinstance(writer.get_extra_info("ssl_object"), ssl.SSLObject)
        assert isinstance(writer.get_extra_info("sslcontext"), ssl.SSLContext)
        assert writer.get_extra_info("cipher") == client.cipher()
        assert writer.get_extra_info("peercert") is None  # no client certificate asked
        assert writer.get_extra_info("nothing", "default") == "default"
    finally:
        client.close()


async def test_either_side_closing_ends_the_pump(tls_server: Server, certs: Path) -> None:
    """The client's close_notify is the reader's EOF; the server's close sends one; no pump stays."""
    port, next_connection = tls_server
    client = await asyncio.to_thread(tls_client, port, certs)
    reader, writer = await next_connection()
    writer.write(b"hello")
    await writer.drain()
    assert await asyncio.to_thread(client.recv, 5) == b"hello"
    unwrap = asyncio.ensure_future(asyncio.to_thread(client.unwrap))  # sends close_notify
    assert await asyncio.wait_for(reader.read(), 2) == b""
    assert await settled(lambda: not pumps())
    writer.close()  # answers it
    await asyncio.wait_for(unwrap, 2)
    client.close()

    client = await asyncio.to_thread(tls_client, port, certs)
    try:
        reader, writer = await next_connection()
        writer.close()
        assert await asyncio.to_thread(client.recv, 5) == b""  # close_notify, not a reset
        assert await asyncio.wait_for(reader.read(), 2) == b""
        await writer.wait_closed()
        assert await settled(lambda: not pumps())
    finally:
        client.close()
