"""A login without SPADE, for a command that sends a request or two and leaves.

SPADE's import alone takes about a second (it brings pyjabber's server, aiohttp and
SQLAlchemy); the shell's verbs need a connection and nothing else. This is that
connection: a slixmpp client that logs in as SPADE's agents do (STARTTLS without
checking the certificate unless asked, in-band registration when allowed), failures
named as ``lifecycle.start_agent`` names them. No roster or keepalive pings: requests
are answered to this connection's full JID.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl

from slixmpp import JID, ClientXMPP
from slixmpp.exceptions import IqError, IqTimeout
from slixmpp.stanza import Iq

from spade_memory.xmpp.connect_errors import not_connected, refused_password
from spade_memory.xmpp.output_task import end_output_task
from spade_memory.xmpp.reachability import PROBE_SECONDS, probe

CLOSE_SECONDS = 2.0
"""The longest a logout waits for the server to close the stream."""


class StanzaClient(ClientXMPP):  # type: ignore[misc]
    """A bare slixmpp client: TLS as SPADE's agents have it, registration if asked."""

    def __init__(
        self, jid: str, password: str, *, verify: bool = False, register: bool = True
    ) -> None:
        super().__init__(jid, password, ssl_context=None if verify else _unverified())
        self.enable_direct_tls = False  # STARTTLS on the client port, as SPADE connects
        self.use_aiodns = False  # the system's resolver: /etc/hosts, no DNS query for localhost
        if register:
            self.register_plugin("xep_0077")
            self.add_event_handler("register", self._register)

    async def _register(self, _event: object) -> None:
        """Make the account if the server lets clients (taken: it exists, log in)."""
        form: Iq = self.Iq()
        form["type"] = "set"
        form["register"]["username"] = self.boundjid.user
        form["register"]["password"] = self.password
        with contextlib.suppress(IqError, IqTimeout):
            await form.send()


def _unverified() -> ssl.SSLContext:
    """A TLS context that checks no certificate, as SPADE's agents connect by default
    (slixmpp's own loads the system's certificates first: a twentieth of a second)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


async def connect(
    jid: str,
    password: str,
    *,
    port: int = 5222,
    timeout: float = 10.0,
    register: bool = True,
    verify: bool = False,
) -> StanzaClient:
    """Log in as ``jid`` at its domain's ``port``; with ``register``, an account the
    server does not know is made first, where the server lets clients make one (the
    login is tried first: an account that exists costs no registration).

    Returns the connected client (close it with ``disconnect``); raises a named
    ``AgentStartError`` at once when a quick probe finds the server missing or unfit,
    ``WrongPassword`` when the server refuses the password, ``AgentStartError`` when no
    session is made within ``timeout`` seconds.
    """
    host = str(JID(jid).domain)
    await probe(host, port, host, min(timeout, PROBE_SECONDS), verify=verify)
    client, what = await _attempt(jid, password, host, port, timeout, False, verify)
    if what == "refused" and register:
        client, what = await _attempt(jid, password, host, port, timeout, True, verify)
    if what == "session":
        client.send_presence()  # SPADE's embedded server routes to announced sessions only
        return client
    if what == "refused":
        raise refused_password(str(JID(jid).bare), host, port, register)
    raise not_connected(jid, host, port, 1, timeout)


async def _attempt(
    jid: str, password: str, host: str, port: int, timeout: float, register: bool,
    verify: bool,
) -> tuple[StanzaClient, str]:  # fmt: skip
    """One login: the client, and ``session`` (it is connected), ``refused``,
    ``disconnected`` or ``timeout`` (it was closed)."""
    client = StanzaClient(jid, password, verify=verify, register=register)
    outcome: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    def settle(what: str) -> None:
        if not outcome.done():
            outcome.set_result(what)

    client.add_event_handler("session_start", lambda _: settle("session"))
    client.add_event_handler("failed_all_auth", lambda _: settle("refused"))
    client.add_event_handler("disconnected", lambda _: settle("disconnected"))
    client.connect(host=host, port=port)
    try:
        what = await asyncio.wait_for(outcome, timeout)
    except asyncio.TimeoutError:
        what = "timeout"
    if what != "session":
        await disconnect(client)
    return client, what


async def disconnect(client: ClientXMPP) -> None:
    """Close the stream and wait (``CLOSE_SECONDS`` at most) until it is closed."""
    closed = client.disconnected
    client.disconnect()
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(asyncio.shield(closed), CLOSE_SECONDS)
    await end_output_task(client)
