"""SPADE's embedded XMPP server (pyjabber), run inside our event loop.

Differences from ``spade run``, each for a measured reason (see the README):
the domain is ``localhost`` (``0.0.0.0`` would become the XMPP domain and
lose every message to ``@localhost``); accounts live in a file database in
the data directory (the in-memory one can lose its tables); certificates go
to the data directory, not into site-packages; no admin web page on the
fixed port 9090 (its HTTP task is simply not started); it listens on the
loopback address only (pyjabber also binds the machine's LAN address, and
this server does not authenticate senders); and
it does not install signal handlers, so Ctrl-C stops us cleanly; it
hashes passwords in threads, not in forked processes; and it **stamps every
client stanza's ``from`` with the stream's authenticated JID**, as RFC 6120
§8.1.2.1 requires (pyjabber only fills in a missing ``from``, so any client
could send as anyone). It also **delivers an iq addressed to a connected
client's full JID to that client** (pyjabber answers every iq itself, so a
peer's disco#info or version query never reached the agent it named). And it
**joins each text once** where pyjabber copied it at every entity, so a body costs
it in proportion to its length, not to its square. All three live in this
server's own client listener, parser and stanza handler; pyjabber's modules are
left as they are for any other user of the process.

pyjabber keeps global state: one embedded server per process.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
import sys
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import attrs
import pyjabber
from loguru import logger as pyjabber_logger
from pyjabber import AppConfig
from pyjabber.network.parsers.XMLParser import XMLParser
from pyjabber.network.protocols.XMLProtocol import XMLProtocol
from pyjabber.queues.QueueManager import QueueName, get_queue
from pyjabber.queues.workers.MessageQueueWorker import queue_worker
from pyjabber.queues.workers.ServerConnectionWorker import server_connection_worker
from pyjabber.server import Server
from pyjabber.server_parameters import Parameters
from pyjabber.stream.handlers.StanzaHandler import StanzaHandler
from pyjabber.stream.JID import JID

from . import accounts

_CLIENT_STANZAS = frozenset("{jabber:client}" + kind for kind in ("message", "presence", "iq"))


class _StampingStanzaHandler(StanzaHandler):  # type: ignore[misc]
    """pyjabber's handler of a client stream, with ``from`` set to who is speaking, and
    iq stanzas to a connected client's full JID delivered to it."""

    async def feed(self, element: Any) -> None:
        speaker = self._jid or self._connections.get_jid(self._peername)
        if speaker is not None and element.tag in _CLIENT_STANZAS:
            element.attrib["from"] = str(speaker)  # a forged from is replaced, not trusted
        await super().feed(element)

    async def handle_iq(self, element: Any) -> None:
        """An iq to a local client's full JID goes to that client (RFC 6120 §10.5.4):
        pyjabber answers every iq itself, so a peer's disco#info or version query never
        reached the agent it named. Any other iq is pyjabber's, as before."""
        address = element.attrib.get("to")
        to = JID(address) if address and "/" in address else None
        if to is not None and to.domain == AppConfig.app_config.host:
            connected = self._connections.get_transport(to)  # bound, available or not
            if connected:
                for client in connected:
                    client[1].write(ET.tostring(element))
                return
        await super().handle_iq(element)


class _TextJoiningParser(XMLParser):  # type: ignore[misc]
    """pyjabber's stream parser, with each run of text joined once.

    expat hands a text over in pieces, one more at every entity (a JSON body's
    ``&quot;``: thousands in a batch of a hundred ops), and pyjabber added each
    piece to the text so far, copying it: a body cost the server the square of its
    length. The pieces are kept here and given to pyjabber as one, before the next
    tag, so its elements are the same.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pieces: list[str] = []

    def characters(self, content: str) -> None:
        self._pieces.append(content)

    def startElementNS(self, name: Any, qname: Any, attrs: Any) -> None:
        self._join()
        super().startElementNS(name, qname, attrs)

    def endElementNS(self, name: Any, qname: Any) -> None:
        self._join()
        super().endElementNS(name, qname)

    def _join(self) -> None:
        if self._pieces:
            text = "".join(self._pieces)
            self._pieces.clear()
            super().characters(text)


class _StampingXMLProtocol(XMLProtocol):  # type: ignore[misc]
    """A client connection whose stanzas go through ``_StampingStanzaHandler``, parsed
    by ``_TextJoiningParser``."""

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._xml_parser.getContentHandler().cancel_queue_bridge()  # not started yet
        parser = _TextJoiningParser(self._transport, self)
        parser._stream_negotiator._stanza_handler_class = _StampingStanzaHandler
        self._xml_parser.setContentHandler(parser)


class EmbeddedXMPPServer:
    """A pyjabber server for development: loopback only, file database."""

    def __init__(
        self, data_dir: Path, host: str = "localhost", port: int = 5222, s2s_port: int = 5269
    ) -> None:
        self.host, self.port = host, port
        pyjabber_logger.remove()  # pyjabber logs every stanza at DEBUG otherwise
        pyjabber_logger.add(sys.stderr, level="WARNING")
        cert_dir = _cert_dir_with_ca(data_dir / "xmpp-certs")
        self._server = Server(
            Parameters(
                host=host,
                client_port=port,
                server_port=s2s_port,
                database_path=str(accounts.guarded(data_dir)),  # raises if it was lost
                cert_path=str(cert_dir),
            )
        )
        self._server._public_ip = None  # bind the host's address only, not the LAN's
        _hash_passwords_in_threads()
        self._s2s_port = s2s_port
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self, timeout: float = 15.0) -> None:
        """Start listening; raise if the port cannot be bound."""
        for port in (self.port, self._s2s_port):
            _ensure_free(self.host, port)
        for name in (QueueName.CONNECTIONS, QueueName.MESSAGES, QueueName.SERVERS):
            get_queue(name)
        self._tasks = [
            asyncio.create_task(queue_worker()),
            asyncio.create_task(server_connection_worker()),
            asyncio.create_task(self._server.run_server()),
        ]
        ready = asyncio.create_task(self._server.ready.wait())
        done, _ = await asyncio.wait(
            [ready, self._tasks[2]], timeout=timeout, return_when=asyncio.FIRST_COMPLETED
        )
        if ready not in done:
            ready.cancel()
            await self.stop()
            raise RuntimeError(f"the embedded XMPP server could not listen on port {self.port}")
        await self._listen_for_clients()

    async def _listen_for_clients(self) -> None:
        """Take over pyjabber's client listener with one whose connections stamp ``from``
        (done before anyone is told the server is up)."""
        server = self._server
        listener = server._client_listener
        listener.close()
        await listener.wait_closed()
        server._client_listener = await asyncio.get_running_loop().create_server(
            lambda: _StampingXMLProtocol(
                namespace="jabber:client", connection_timeout=server._connection_timeout
            ),
            host=[self.host],
            port=self.port,
            family=server._family,
        )

    async def stop(self) -> None:
        """Stop listening and end the server's tasks and its password-hashing threads."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, SystemExit):
                await task
        self._tasks = []
        AppConfig.app_config.process_pool_exe.shutdown(wait=False, cancel_futures=True)


def _hash_passwords_in_threads() -> None:
    """Replace pyjabber's process pool for SCRAM hashing with threads.

    Forked pool workers inherit the listening socket and outlive a killed
    server, keeping its port busy; pbkdf2_hmac releases the GIL, so threads
    hash just as fast.
    """
    config = AppConfig.app_config
    config.process_pool_exe.shutdown(wait=False)
    AppConfig.app_config = attrs.evolve(
        config, process_pool_exe=ThreadPoolExecutor(thread_name_prefix="xmpp-scram")
    )


def _cert_dir_with_ca(cert_dir: Path) -> Path:
    """pyjabber signs the host's certificate with the CA it ships; give it a copy."""
    cert_dir.mkdir(parents=True, exist_ok=True)
    shipped = Path(pyjabber.__file__).parent / "network" / "certs"
    for name in ("ca_cert.pem", "ca_key.pem"):
        if not (cert_dir / name).exists():
            shutil.copyfile(shipped / name, cert_dir / name)
    return cert_dir


def _ensure_free(host: str, port: int) -> None:
    """pyjabber exits the process when it cannot bind; fail with a clear error instead."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            raise RuntimeError(f"port {port} on {host} is not free: {error.strerror}") from None
