"""A quick look at the XMPP server before a login, so that a failure is named at once.

SPADE (slixmpp) retries a refused or failing connection in a loop until the caller's
timeout runs out, and then all it can say is that it timed out. One TCP connection and
an XMPP stream header tell within milliseconds which cause of ``connect_errors`` it is:
nothing listens there, the host has no address or no route, the server does not serve
the JID's domain, or what answers does not speak XMPP with TLS. A probe that gets no
answer in time decides nothing: the login then runs (and is timed) as before, since a
slow server is not a missing one.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
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
STARTTLS = "{urn:ietf:params:xml:ns:xmpp-tls}starttls"


async def probe(host: str, port: int, domain: str, timeout: float = PROBE_SECONDS) -> None:
    """Check that an XMPP server at ``host``:``port`` serves ``domain`` and offers TLS.

    Returns when it does, or when nothing answers within ``timeout`` seconds. Raises
    ``ConnectionRefused``, ``UnknownHost``, ``HostUnreachable``, ``WrongDomain``,
    ``TlsFailure`` or (another stream error) ``AgentStartError``, each one sentence.
    """
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(_probe(host, port, domain), timeout)


async def _probe(host: str, port: int, domain: str) -> None:
    where = f"{host}:{port}"
    try:
        reader, writer = await asyncio.open_connection(host, port)
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
    try:
        writer.write(
            "<?xml version='1.0'?><stream:stream xmlns='jabber:client'"
            f" xmlns:stream='http://etherx.jabber.org/streams' to={quoteattr(domain)}"
            " version='1.0'>".encode()
        )
        answer = await _first_answer(reader, where)
        writer.write(b"</stream:stream>")
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    _judge(answer, where, domain)


async def _first_answer(reader: asyncio.StreamReader, where: str) -> Element | None:
    """The stream's first child (its features or an error), or None if the server closed
    the connection before saying anything (left to the login, which retries)."""
    parser: XMLPullParser[Element] = XMLPullParser(events=("start", "end"))
    depth = 0
    while chunk := await reader.read(4096):
        try:
            parser.feed(chunk)
            for event, element in parser.read_events():  # type: ignore[misc]
                assert isinstance(element, Element)
                if depth == 0 and element.tag != f"{STREAMS}stream":
                    raise ParseError(element.tag)
                depth += 1 if event == "start" else -1
                if event == "end" and depth == 1:
                    return element
        except ParseError:
            raise TlsFailure(
                f"what answers on {where} does not speak XMPP; check the host and port"
            ) from None
    return None


def _judge(answer: Element | None, where: str, domain: str) -> None:
    if answer is None:
        return
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
    if answer.tag == f"{STREAMS}features" and answer.find(STARTTLS) is None:
        raise TlsFailure(
            f"the XMPP server on {where} offers no TLS, and SPADE logs in only over TLS;"
            " enable TLS on that server"
        )
