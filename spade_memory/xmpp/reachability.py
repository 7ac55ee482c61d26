"""A quick look at the XMPP server before a login, so that a failure is named at once.

SPADE (slixmpp) retries a refused or failing connection in a loop until the caller's
timeout runs out, and then all it can say is that it timed out. One TCP connection and
an XMPP stream header (and STARTTLS's handshake) tell within milliseconds which cause of
``connect_errors`` it is: nothing listens there, the host has no address or no route,
the server does not serve the JID's domain, or what answers does not speak XMPP with
TLS. A probe that gets no
answer in time decides nothing: the login then runs (and is timed) as before, since a
slow server is not a missing one.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from xml.etree.ElementTree import Element, ParseError, XMLPullParser
from xml.sax.saxutils import quoteattr

from spade_memory.xmpp.connect_errors import (
    AgentStartError,
    ConnectionRefused,
    HostUnreachable,
    TlsFailure,
    UnknownHost,
    WrongDomain,
)

PROBE_SECONDS = 3.0
"""The longest a probe waits for the server's answer before leaving it to the login."""
STREAMS = "{http://etherx.jabber.org/streams}"
STREAM_ERRORS = "{urn:ietf:params:xml:ns:xmpp-streams}"
TLS = "{urn:ietf:params:xml:ns:xmpp-tls}"


async def probe(
    host: str, port: int, domain: str, timeout: float = PROBE_SECONDS, *, verify: bool = False
) -> None:
    """Check that an XMPP server at ``host``:``port`` serves ``domain`` over TLS (its
    certificate checked when ``verify``, as SPADE's ``verify_security`` does).

    Returns when it does, or when nothing answers within ``timeout`` seconds. Raises
    ``ConnectionRefused``, ``UnknownHost``, ``HostUnreachable``, ``WrongDomain``,
    ``TlsFailure`` or (another stream error) ``AgentStartError``, each one sentence.
    """
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(_probe(host, port, domain, verify), timeout)


async def _probe(host: str, port: int, domain: str, verify: bool) -> None:
    where = f"{host}:{port}"
    reader, writer = await _connect(host, port)
    try:
        writer.write(
            "<?xml version='1.0'?><stream:stream xmlns='jabber:client'"
            f" xmlns:stream='http://etherx.jabber.org/streams' to={quoteattr(domain)}"
            " version='1.0'>".encode()
        )
        stream = _Stream(reader, where)
        if not _judge(await stream.next_child(), where, domain):
            return  # closed before answering: left to the login, which retries
        writer.write(b"<starttls xmlns='urn:ietf:params:xml:ns:xmpp-tls'/>")
        answer = await stream.next_child()
        if answer is not None and answer.tag == f"{TLS}failure":
            raise TlsFailure(f"the XMPP server on {where} refused to start TLS")
        if answer is not None and answer.tag == f"{TLS}proceed":
            await _handshake(writer, host, where, verify)
    finally:
        writer.close()
        with contextlib.suppress(OSError, ssl.SSLError):
            await writer.wait_closed()


async def _connect(host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    where = f"{host}:{port}"
    try:
        return await asyncio.open_connection(host, port)
    except socket.gaierror:
        raise UnknownHost(
            f"no host is named {host} (the domain of the JID); check the JID's domain"
        ) from None
    except ConnectionRefusedError:
        raise ConnectionRefused(
            f"nothing listens on {where}: start the service with `spade-memory run`"
            " (or give the port it listens on)"
        ) from None
    except OSError as error:  # no route to the host, network down
        raise HostUnreachable(f"cannot reach {where}: {error.strerror or error}") from None


class _Stream:
    """The server's side of the stream, read one top-level child at a time."""

    def __init__(self, reader: asyncio.StreamReader, where: str) -> None:
        self.reader = reader
        self.where = where
        self.parser: XMLPullParser[Element] = XMLPullParser(events=("start", "end"))
        self.depth = 0

    async def next_child(self) -> Element | None:
        """The stream's next child (features, an error, proceed), or None if the server
        closed the connection first; raises ``TlsFailure`` if what comes is not XMPP."""
        while chunk := await self.reader.read(4096):
            try:
                self.parser.feed(chunk)
                for event, element in self.parser.read_events():  # type: ignore[misc]
                    assert isinstance(element, Element)
                    if self.depth == 0 and element.tag != f"{STREAMS}stream":
                        raise ParseError(element.tag)
                    self.depth += 1 if event == "start" else -1
                    if event == "end" and self.depth == 1:
                        return element
            except ParseError:
                raise TlsFailure(
                    f"what answers on {self.where} does not speak XMPP; check the host and port"
                ) from None
        return None


def _judge(answer: Element | None, where: str, domain: str) -> bool:
    """Whether to go on to STARTTLS: the stream's features offer it. Raises what the
    answer shows wrong."""
    if answer is None:
        return False
    if answer.tag == f"{STREAMS}error":
        conditions = [child.tag.removeprefix(STREAM_ERRORS) for child in answer]
        if "host-unknown" in conditions:
            raise WrongDomain(
                f"the XMPP server on {where} does not serve the domain {domain};"
                " use a JID of a domain it serves"
            )
        raise AgentStartError(
            f"the XMPP server on {where} refused the stream: {', '.join(conditions)}"
        )
    if answer.tag == f"{STREAMS}features" and answer.find(f"{TLS}starttls") is None:
        raise TlsFailure(
            f"the XMPP server on {where} offers no TLS, and SPADE logs in only over TLS;"
            " enable TLS on that server"
        )
    return answer.tag == f"{STREAMS}features"


async def _handshake(writer: asyncio.StreamWriter, host: str, where: str, verify: bool) -> None:
    """The TLS handshake, as SPADE's client makes it; a connection dropped midway is left
    to the login (SPADE's embedded server drops some first logins there)."""
    context = ssl.create_default_context() if verify else _unverified()
    loop = asyncio.get_running_loop()
    protocol = writer.transport.get_protocol()
    try:
        secured = await loop.start_tls(writer.transport, protocol, context, server_hostname=host)
    except (ssl.SSLEOFError, ConnectionError):
        return
    except ssl.SSLError as error:
        raise TlsFailure(
            f"the TLS handshake with the XMPP server on {where} failed:"
            f" {error.reason or error.strerror or error}"
        ) from None
    if secured is not None:
        secured.close()


def _unverified() -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context
