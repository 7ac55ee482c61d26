"""SPADE's embedded XMPP server (pyjabber), run inside our event loop.

Differences from ``spade run``, each for a reason (see ``docs/operations/identity.md``):
the domain is ``localhost`` (``0.0.0.0`` would become the XMPP domain and
lose every message to ``@localhost``); accounts live in a file database in
the data directory (the in-memory one can lose its tables); certificates go
to the data directory, not into site-packages; no admin web page on the
fixed port 9090 (its HTTP task is simply not started); it listens on the
loopback address only (pyjabber also binds the machine's LAN address); it
does not install signal handlers, so Ctrl-C stops us cleanly; it hashes
passwords in threads, not in forked processes; and it takes server-to-server
connections only when given an ``s2s_port`` (a server on the loopback address
rarely federates, and a second service on one machine would otherwise need a
second free port it never uses; ``ports``). Its client connections
(``streams``) take canonical account names only (``accounts``, ``names``),
stamp ``from``, route what pyjabber could not without dying, keep offline
messages within bounds (``stanzas``, ``offline``), and find a bare JID's
sessions exactly (``connections``); streams may restart with an XML declaration
(``streams``), and subscription requests kept for offline accounts survive a restart
(``presence``). pyjabber's modules are left as they are.

pyjabber keeps global state: one embedded server per process.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import attrs
import pyjabber
from loguru import logger as pyjabber_logger
from pyjabber import AppConfig
from pyjabber.queues.QueueManager import QueueName, get_queue
from pyjabber.queues.workers.MessageQueueWorker import queue_worker
from pyjabber.queues.workers.ServerConnectionWorker import server_connection_worker
from pyjabber.server import Server
from pyjabber.server_parameters import Parameters

from spade_memory.server import account_database
from spade_memory.server.embedded import accounts
from spade_memory.server.embedded.connections import compare_exactly
from spade_memory.server.embedded.offline import OfflineLimits, OfflineMessages
from spade_memory.server.embedded.ports import check_ports
from spade_memory.server.embedded.presence import keep_pending_subscriptions
from spade_memory.server.embedded.stanzas import StampingStanzaHandler
from spade_memory.server.embedded.streams import ClientConnection


class EmbeddedXMPPServer:
    """A pyjabber server for development: loopback only, file database."""

    def __init__(
        self,
        data_dir: Path,
        host: str = "localhost",
        port: int = 5222,
        s2s_port: int | None = None,
        offline: OfflineLimits | None = None,
        registrations_per_minute: int = 60,
    ) -> None:
        """``s2s_port``: where other servers connect (None: no server-to-server
        connections, and messages to other domains are answered with an error);
        ``offline``: what is kept for accounts with no available session;
        ``registrations_per_minute``: new accounts per source address (0: no limit)."""
        self.host, self.port = host, port
        self.offline = OfflineMessages(offline)
        self.registrations_per_minute = registrations_per_minute
        self.database = account_database.guarded(data_dir)  # raises if it was lost
        pyjabber_logger.remove()  # pyjabber logs every stanza at DEBUG otherwise
        pyjabber_logger.add(sys.stderr, level="WARNING")
        cert_dir = _cert_dir_with_ca(data_dir / "xmpp-certs")
        self._server = Server(
            Parameters(
                host=host,
                client_port=port,
                server_port=s2s_port or 0,  # 0: any free port, closed once started
                database_path=str(self.database),
                cert_path=str(cert_dir),
            )
        )
        self._server._public_ip = None  # bind the host's address only, not the LAN's
        _hash_passwords_in_threads()
        self._s2s_port = s2s_port
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self, timeout: float = 15.0) -> None:
        """Start listening; raise if the port cannot be bound."""
        check_ports(self.host, self.port, self._s2s_port)
        accounts.report_names(self.database)
        accounts.LIMIT.per_minute = self.registrations_per_minute
        StampingStanzaHandler.offline = self.offline
        StampingStanzaHandler.federates = self._s2s_port is not None
        compare_exactly()
        for name in (QueueName.CONNECTIONS, QueueName.MESSAGES, QueueName.SERVERS):
            get_queue(name)
        keep_pending_subscriptions()
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
        if self._s2s_port is None:
            await _close(self._server._server_listener)
        await self._listen_for_clients()

    async def _listen_for_clients(self) -> None:
        """Take over pyjabber's client listener with one of ``ClientConnection``s (done
        before anyone is told the server is up)."""
        server = self._server
        await _close(server._client_listener)
        server._client_listener = await asyncio.get_running_loop().create_server(
            lambda: ClientConnection(
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


async def _close(listener: asyncio.Server | None) -> None:
    """Stop one of pyjabber's listeners (replaced by ours, or not wanted)."""
    if listener is not None:
        listener.close()
        await listener.wait_closed()
