"""A login that cannot succeed is told at once and named: nothing listens on the port,
the host has no address, the server does not serve the JID's domain, what answers does
not speak XMPP with TLS. Against real sockets and real XMPP servers; the deadlines are
generous (each failure is told within milliseconds; SPADE alone retried for 15 s).

And the service's console says in one line, not a traceback, when a client sends the
embedded server a stream it does not expect.
"""

from __future__ import annotations

import asyncio
import os
import ssl
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from spade_memory import (
    AgentStartError,
    ConnectionRefused,
    TlsFailure,
    UnknownHost,
    WrongDomain,
)
from spade_memory.client.login import log_in
from spade_memory.server.runtime import PASSWORD_ENV
from spade_memory.testing import MemoryServiceProcess, free_port
from tests.support.prosody import ProsodyProcess

TOLD_WITHIN = 5.0
"""Seconds a named failure may take to be raised (it takes milliseconds)."""


async def _login_fails(jid: str, port: int) -> AgentStartError:
    with pytest.raises(AgentStartError) as failure:
        await asyncio.wait_for(log_in(jid, "any-password", port=port), TOLD_WITHIN)
    return failure.value


async def test_a_closed_port_is_a_refused_connection_with_the_next_step() -> None:
    port = free_port()
    error = await _login_fails("you@localhost", port)
    assert isinstance(error, ConnectionRefused)
    assert f"nothing listens on localhost:{port}" in str(error)
    assert "spade-memory run" in str(error)


async def test_a_host_with_no_address_is_named() -> None:
    error = await _login_fails("you@no-such-host.invalid", free_port())
    assert isinstance(error, UnknownHost)
    assert "no-such-host.invalid" in str(error)


@pytest.fixture
async def not_xmpp() -> AsyncIterator[int]:
    """A port that answers at once, but as a web server does."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    async with server:
        yield server.sockets[0].getsockname()[1]


async def test_a_port_that_speaks_no_xmpp_is_a_tls_failure(not_xmpp: int) -> None:
    error = await _login_fails("you@localhost", not_xmpp)
    assert isinstance(error, TlsFailure)
    assert f"localhost:{not_xmpp} does not speak XMPP" in str(error)


@pytest.fixture
async def tls_breaks() -> AsyncIterator[int]:
    """A port that answers as an XMPP server offering STARTTLS, says proceed, and then
    speaks no TLS."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"version='1.0'>")
        writer.write(
            b"<stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'"
            b" id='1' version='1.0'><stream:features><starttls"
            b" xmlns='urn:ietf:params:xml:ns:xmpp-tls'/></stream:features>"
        )
        await reader.readuntil(b"/>")
        writer.write(b"<proceed xmlns='urn:ietf:params:xml:ns:xmpp-tls'/>")
        await reader.read(1)  # the client's hello
        writer.write(b"this is no TLS record\r\n" * 8)
        await writer.drain()
        await reader.read()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    async with server:
        yield server.sockets[0].getsockname()[1]


async def test_a_tls_handshake_that_fails_is_a_tls_failure(tls_breaks: int) -> None:
    error = await _login_fails("you@localhost", tls_breaks)
    assert isinstance(error, TlsFailure)
    assert f"the TLS handshake with the XMPP server on localhost:{tls_breaks} failed" in str(error)


async def test_a_domain_the_server_does_not_serve_is_named(
    prosody_server: ProsodyProcess,
) -> None:
    # Prosody serves "localhost"; 127.0.0.1 reaches it, as a domain it is unknown there
    error = await _login_fails("you@127.0.0.1", prosody_server.port)
    assert isinstance(error, WrongDomain)
    assert "does not serve the domain 127.0.0.1" in str(error)


def test_run_on_an_external_server_that_is_not_there_says_so_in_one_line(
    tmp_path: Path,
) -> None:
    port = free_port()
    command = [
        sys.executable, "-m", "spade_memory", "run", "--external-server",
        "--data-dir", str(tmp_path / "data"), "--port", str(port),
    ]  # fmt: skip
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=120,
        env={**os.environ, PASSWORD_ENV: "secret"},
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"spade-memory: nothing listens on localhost:{port}: start the XMPP server there,"
        " give --domain and --port where it listens, or drop --external-server to run the"
        " embedded one"
    ]


def test_the_shell_on_a_closed_port_says_so_in_one_line() -> None:
    port = free_port()
    done = subprocess.run(
        [sys.executable, "-m", "spade_memory", "memories", "stats", "--jid", "you@localhost",
         "--port", str(port)],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "SPADE_MEMORY_AGENT_PASSWORD": "secret"},
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"spade-memory: nothing listens on localhost:{port}: start the service with"
        " `spade-memory run` (or give the port it listens on)"
    ]


async def _a_stanza_before_the_stream(port: int) -> None:
    """STARTTLS, then a stanza where the restarted stream's header belongs: the embedded
    server's parser raises a bare Exception inside the TLS protocol."""
    reader, writer = await asyncio.open_connection("localhost", port)
    writer.write(
        b"<?xml version='1.0'?><stream:stream xmlns='jabber:client'"
        b" xmlns:stream='http://etherx.jabber.org/streams' to='localhost' version='1.0'>"
    )
    await reader.readuntil(b"</stream:features>")
    writer.write(b"<starttls xmlns='urn:ietf:params:xml:ns:xmpp-tls'/>")
    await reader.readuntil(b"/>")  # <proceed/>
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    await writer.start_tls(context, server_hostname="localhost")
    writer.write(b"<message/>")
    await writer.drain()
    await reader.read()  # the server closes the connection
    writer.close()


@pytest.mark.skipif(sys.version_info < (3, 11), reason="StreamWriter.start_tls: Python 3.11")
async def test_a_client_the_embedded_server_cannot_parse_is_one_line_in_the_console(
    memory_service: MemoryServiceProcess,
) -> None:
    before = len(memory_service.output)
    await asyncio.wait_for(_a_stanza_before_the_stream(memory_service.port), 30)
    deadline = time.monotonic() + 30
    while not any("Fatal error" in line for line in memory_service.output[before:]):
        assert time.monotonic() < deadline, memory_service.output[before:]
        await asyncio.sleep(0.05)
    said = [line for line in memory_service.output[before:] if "Fatal error" in line]
    assert len(said) == 1
    assert "--debug shows the traceback" in said[0]
    assert not any("Traceback" in line for line in memory_service.output[before:])
