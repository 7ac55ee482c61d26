"""A raw XMPP client for the boundary tests: bytes on a socket, no preparation of names.

slixmpp (and so SPADE) normalises every JID it is given, so it cannot register
``Alice`` or ``alice@localhost/x``, nor log in as them: an attacker's own client
can. This one opens the stream, does STARTTLS, registers (XEP-0077) and logs in
(SASL PLAIN) with exactly the bytes it is given, binds a resource and sends
stanzas as written. Blocking sockets, for tests that run the service in
another process.
"""

from __future__ import annotations

import base64
import contextlib
import re
import socket
import ssl
import time
from xml.sax.saxutils import escape, quoteattr

DECLARATION = "<?xml version='1.0'?>"
"""What many clients (xmpp.js, go-sendxmpp) write before every stream header."""
STREAM_OPEN = (
    "<stream:stream to={domain} xmlns='jabber:client'"
    " xmlns:stream='http://etherx.jabber.org/streams' version='1.0'>"
)


FEATURES_END = r"</(?:\w+:)?features>"
IQ = r"<(?:\w+:)?iq\b[^>]*?(/>|>.*?</(?:\w+:)?iq>)"
"""An ``<iq>`` as servers write it (pyjabber names its namespaces ``ns0:``)."""


class RawXMPP:
    """One client connection, read with ``until`` (text up to a pattern)."""

    def __init__(
        self, port: int, domain: str = "localhost", timeout: float = 60.0, declared: bool = False
    ) -> None:
        """``declared``: begin every stream with an XML declaration."""
        self.domain = domain
        self.timeout = timeout
        self.declared = declared
        self.sock: socket.socket | ssl.SSLSocket = socket.create_connection(
            ("127.0.0.1", port), timeout=timeout
        )
        self.buffer = ""
        self.jid: str | None = None
        self._open()
        self.header = self.until(r"<stream:stream\b[^>]*>")
        self.until(FEATURES_END)
        self.send("<starttls xmlns='urn:ietf:params:xml:ns:xmpp-tls'/>")
        self.until(r"<(?:\w+:)?proceed\b[^>]*>")
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        self.sock = context.wrap_socket(self.sock, server_hostname=domain)
        self.buffer = ""
        self._open()
        self.features = self.until(FEATURES_END)

    def _open(self) -> None:
        opening = STREAM_OPEN.format(domain=quoteattr(self.domain))
        self.send(DECLARATION + opening if self.declared else opening)

    def send(self, text: str) -> None:
        """Write ``text`` as UTF-8, as it is."""
        self.sock.sendall(text.encode("utf-8"))

    def until(self, pattern: str, timeout: float | None = None) -> str:
        """The text read up to the end of the first match of ``pattern`` (consumed).

        Raises ``TimeoutError`` when it does not come in time, ``ConnectionError`` when
        the server closes the stream first."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while (match := re.search(pattern, self.buffer, re.S)) is None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no {pattern!r} in {self.buffer[-500:]!r}")
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                continue
            if not data:
                raise ConnectionError(f"closed before {pattern!r}: {self.buffer[-500:]!r}")
            self.buffer += data.decode("utf-8", "replace")
        read, self.buffer = self.buffer[: match.end()], self.buffer[match.end() :]
        return read

    def register(self, username: str, password: str) -> str:
        """Send an in-band registration; the server's answer (an ``<iq>``)."""
        self.send(
            "<iq type='set' id='reg'><query xmlns='jabber:iq:register'>"
            f"<username>{escape(username)}</username><password>{escape(password)}</password>"
            "</query></iq>"
        )
        return self.until(IQ)

    def authenticate(self, username: str, password: str, authzid: str = "") -> bool:
        """SASL PLAIN with exactly these strings; True on ``<success>``."""
        return "success" in self.login_answer(username, password, authzid).split(">")[0]

    def login_answer(self, username: str, password: str, authzid: str = "") -> str:
        """SASL PLAIN with exactly these strings; the server's ``<success>`` or
        ``<failure>``, as it wrote it."""
        token = base64.b64encode(f"{authzid}\0{username}\0{password}".encode()).decode()
        self.send(
            f"<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='PLAIN'>{token}</auth>"
        )
        return self.until(r"<(?:\w+:)?(success|failure)\b[^>]*?(/>|>.*?</(?:\w+:)?\1>)")

    def bind(self, presence: str = "<presence/>") -> str:
        """Open the authenticated stream, bind a resource, send ``presence`` (available);
        the full JID."""
        self.buffer = ""
        self._open()
        self.until(FEATURES_END)
        self.send("<iq type='set' id='bind'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/></iq>")
        answer = self.until(IQ)
        found = re.search(r"<(?:\w+:)?jid>(.*?)</(?:\w+:)?jid>", answer)
        assert found is not None, answer
        self.jid = found.group(1)
        self.send(presence)
        return self.jid

    def sync(self) -> None:
        """Ping the server and wait for its answer: what was sent before is handled."""
        self.send("<iq type='get' id='sync' to='localhost'><ping xmlns='urn:xmpp:ping'/></iq>")
        self.until(r"<(?:\w+:)?iq\b[^>]*id=.sync.[^>]*(/>|>.*?</(?:\w+:)?iq>)")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.send("</stream:stream>")
        self.sock.close()


def login(
    port: int, username: str, password: str, presence: str = "<presence/>", declared: bool = False
) -> RawXMPP:
    """A bound session of ``username``, registered first (an existing account is fine),
    that sent ``presence``; ``declared`` as ``RawXMPP`` takes it."""
    client = RawXMPP(port, declared=declared)
    client.register(username, password)
    if not client.authenticate(username, password):
        client.close()
        raise PermissionError(f"{username!r} could not log in")
    client.bind(presence)
    return client
