"""Start and stop the memory agents of the registry (and, by default, the embedded XMPP
server).

Start and stop never hang: each step of the stop is bounded in time and runs
even if an earlier one failed, a failure while starting stops what had
started, and a second SIGINT or SIGTERM ends the process at once.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import signal
import sys
import tempfile
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from spade.agent import Agent

from spade_memory.http.address import HttpAddress
from spade_memory.protocol.limits import Limits
from spade_memory.server import account_database, collector, loop_errors
from spade_memory.server.embedded import EmbeddedXMPPServer, OfflineLimits
from spade_memory.server.embedded.ports import check_ports
from spade_memory.server.lock import lock
from spade_memory.server.registry import NAMES, SERVICES, service
from spade_memory.serving.agent import MemoryAgent, OutOfService
from spade_memory.serving.plugin import MemoryService, ServiceConfig, ServiceContext
from spade_memory.spaces.declared import apply_spaces, read_spaces_file
from spade_memory.spaces.directory import FILE as SPACES_FILE
from spade_memory.spaces.directory import SpaceDirectory
from spade_memory.storage.connection import Synchronous
from spade_memory.storage.faults import LOW_DISK_BYTES, DamagedStore, free_bytes
from spade_memory.storage.manifest import Manifest
from spade_memory.storage.postgres import is_url
from spade_memory.storage.private import tighten_and_say
from spade_memory.xmpp.connect_errors import ConnectionRefused, WrongPassword
from spade_memory.xmpp.lifecycle import start_agent, stop_agent

logger = logging.getLogger("spade_memory.runtime")
PASSWORD_ENV = "SPADE_MEMORY_PASSWORD"
STEP_SECONDS = 15.0
"""The longest one step of a stop (an agent, a store, the server) may take."""
EXIT_AT_ONCE = 130
"""The status after a second signal (what a shell reports for Ctrl-C)."""


@dataclass
class RunConfig:
    """Where data lives, how the memory agents reach their XMPP server, which run."""

    data_dir: Path
    domain: str = "localhost"
    port: int = 5222
    s2s_port: int | None = None
    """The embedded server's server-to-server port (None: it takes no such connections)."""
    embedded_server: bool = True
    registrations_per_minute: int = 60
    """New accounts one source address may make on the embedded server in a minute."""
    offline: OfflineLimits = field(default_factory=OfflineLimits)
    """What the embedded server keeps for accounts with no available session."""
    password: str | None = None
    connect_timeout: float = 15.0
    services: tuple[str, ...] = NAMES
    """Which memory agents to run (all by default)."""
    limits: Limits = field(default_factory=Limits)
    synchronous: Synchronous = "NORMAL"
    settings: dict[str, ServiceConfig] = field(default_factory=dict)
    """Each service's own settings, by service name (its ``default_config`` if absent)."""
    allow_damaged: bool = False
    """Start the other services when a store is damaged; its agent answers service-unavailable."""
    spaces_db: Path | None = None
    """The directory of spaces (default: the PostgreSQL ``database`` if given, else
    DATA_DIR/spaces.db); agents of one deployment that run apart share it."""
    spaces_file: Path | None = None
    """Spaces, members and quotas to create at start (``--spaces FILE``)."""
    debug: bool = False
    """Let the event loop print the traceback of an error no task awaits (else one line)."""
    database: str | None = None
    """A PostgreSQL URL for the long-term memories, the notes and working memories, and
    (unless ``spaces_db``) the spaces (``--database``; None: SQLite files)."""
    web: HttpAddress | None = None
    """Where to serve the web view too (``--web``; None: nowhere)."""
    web_hosts: tuple[str, ...] = ()
    """The names the web view is reached by besides its address (``--web-allowed-host``)."""
    metrics_token: str | None = None
    """The bearer token of the web view's ``/metrics`` (None: no ``/metrics``)."""

    def config_of(self, name: str) -> ServiceConfig:
        """The settings of the service called ``name``."""
        return self.settings.get(name) or service(name).default_config

    def jid_of(self, name: str) -> str:
        """The JID of the service called ``name``'s agent."""
        return self.config_of(name).jid or f"{service(name).node}@{self.domain}"


def agent_password(config: RunConfig) -> str:
    """The agents' password: given, from the environment, or (embedded only) kept on disk."""
    password = config.password or os.environ.get(PASSWORD_ENV)
    if password:
        return password
    if not config.embedded_server:
        raise RuntimeError(f"set {PASSWORD_ENV} to the memory agents' XMPP password")
    path = config.data_dir / "agent-password"
    if not path.exists():
        # created readable by its owner only, from the first byte on
        with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as file:
            file.write(secrets.token_urlsafe(24))
    return path.read_text().strip()


def _password_hint(config: RunConfig) -> str:
    """What to do when the server refuses the agents' password."""
    if os.environ.get(PASSWORD_ENV) or config.password:
        return f"set {PASSWORD_ENV} to the password of the memory agents' accounts"
    return (
        f"the password kept in {config.data_dir / 'agent-password'} is not the one the"
        f" server has for them; set {PASSWORD_ENV} to that one"
    )


class UnusableDataDirectory(RuntimeError):
    """The data directory cannot be made or written."""


def _writable(data_dir: Path) -> None:
    """The data directory exists and takes files; raises ``UnusableDataDirectory`` with
    one sentence saying why not. Little free space there is logged as a warning."""
    _make_directory(data_dir)
    try:
        with tempfile.TemporaryFile(dir=data_dir):
            pass
    except OSError as error:
        raise UnusableDataDirectory(
            f"cannot write in the data directory {data_dir} ({error.strerror or error});"
            " give --data-dir a writable directory"
        ) from None
    free = free_bytes(data_dir)
    if free is not None and free < LOW_DISK_BYTES:
        logger.warning(
            "%s: only %d MiB free; writes fail when the disk is full", data_dir, free >> 20
        )


def _make_directory(data_dir: Path) -> None:
    if data_dir.exists() and not data_dir.is_dir():
        raise UnusableDataDirectory(
            f"the data directory {data_dir} is a file; give --data-dir a directory"
            " (it is made if missing)"
        )
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        blocking = next((p for p in data_dir.parents if p.exists() and not p.is_dir()), None)
        why = f"{blocking} is a file" if blocking else (error.strerror or str(error))
        raise UnusableDataDirectory(
            f"cannot make the data directory {data_dir}: {why}; give --data-dir a directory"
            " you can write to"
        ) from None


def point_at_spade_llm_files(data_dir: Path) -> None:
    """Warn of spade_llm's files in the data directory: the service reads its own files,
    not theirs, until they are imported (once)."""
    for pattern, command in (("*_base_memory.db", "import-base-memory"),
                             ("*_interactions.json", "import-interactions")):  # fmt: skip
        found = sorted(path.name for path in data_dir.glob(pattern))
        if found:
            logger.warning(
                "%s holds spade_llm files (%s), which the service does not read;"
                " `spade-memory %s FILE…` imports them",
                data_dir, ", ".join(found), command,
            )  # fmt: skip


async def warn_of_domain_grants(directory: SpaceDirectory) -> None:
    """Warn of every ``*@domain`` grant: on a server where anyone can create an account
    (the embedded one), it is a grant to anyone."""
    for space, member in await directory.domain_grants():
        logger.warning(
            "space %s grants %s: the embedded XMPP server lets anyone register an account"
            " there, so this is a grant to anyone who can reach the port",
            space, member,
        )  # fmt: skip


class MemoryRuntime:
    """Everything `spade-memory run` starts, in start order, stopped in reverse."""

    def __init__(self, config: RunConfig) -> None:
        self.config = config
        self.agents: list[Agent] = []
        self.spaces: SpaceDirectory | None = None
        """The directory of spaces, shared by every service of the run."""
        self._running = AsyncExitStack()

    async def start(self) -> None:
        """Start the embedded server (unless external) and every configured service's agent.

        Raises ``RuntimeError`` with one sentence when something cannot start (an
        unknown service, a busy port, no XMPP server, a refused password, a beads
        engine, an unusable or busy data directory), ``StoreFault`` naming a store's
        file or the embedded server's lost account database, or ``OSError`` for another
        failure of the data directory.
        """
        config = self.config
        if config.database is not None and not is_url(config.database):
            raise RuntimeError(f"the database must be a postgresql:// URL, not {config.database!r}")
        try:
            if config.embedded_server:  # before anything is written: a busy port leaves no trace
                check_ports(config.domain, config.port, config.s2s_port)
            _writable(config.data_dir)
            self._running.callback(lock(config.data_dir).close)  # one service per directory
            tighten_and_say(config.data_dir)  # what an earlier run or another tool left open
            point_at_spade_llm_files(config.data_dir)
            password = agent_password(config)
            self.spaces = await SpaceDirectory.open(
                config.spaces_db or config.database or config.data_dir / SPACES_FILE,
                config.synchronous,
                Manifest(config.data_dir),
            )
            self._push(self.spaces.close)
            if config.spaces_file is not None:
                declared = read_spaces_file(config.spaces_file)
                count = await apply_spaces(declared, self.spaces, config.spaces_file)
                logger.info("%s: %d spaces declared", config.spaces_file, count)
            if config.embedded_server:
                await warn_of_domain_grants(self.spaces)
                server = EmbeddedXMPPServer(
                    config.data_dir, config.domain, config.port, config.s2s_port,
                    config.offline, config.registrations_per_minute,
                )  # fmt: skip
                await server.start()
                self._push(
                    asyncio.to_thread, account_database.record, config.data_dir
                )  # after the stop
                self._push(server.stop)
            for name in config.services:
                agent = await self._open(name, password)
                self._push(stop_agent, agent)
                self.agents.append(agent)
                try:
                    await start_agent(agent, attempt_timeout=config.connect_timeout / 3)
                except WrongPassword:  # not a client's clash: the agents' own password
                    raise WrongPassword(
                        f"the XMPP server at {agent.jid.host}:{agent.xmpp_port} refused the"
                        f" password of {agent.jid.bare}; {_password_hint(config)}"
                    ) from None
                except ConnectionRefused:
                    raise ConnectionRefused(
                        f"nothing listens on {config.domain}:{config.port}: start the XMPP"
                        " server there, give --domain and --port where it listens, or drop"
                        " --external-server to run the embedded one"
                    ) from None
            if config.embedded_server:  # the agents' accounts are in it now
                await asyncio.to_thread(account_database.record, config.data_dir)
            if config.web is not None:
                await self._serve_web(config.web)
        except BaseException:
            await self.stop()
            raise

    async def _serve_web(self, address: HttpAddress) -> None:
        """The web view beside the agents (its viewers log in over XMPP like any client)."""
        from spade_memory.server.web_command import view
        from spade_memory.web.viewers import Deployment

        config = self.config
        served = view(
            Deployment(config.domain, config.port), address, False, config.metrics_token,
            config.web_hosts,
        )  # fmt: skip
        try:
            await served.start()
        except OSError as error:
            raise RuntimeError(f"the web view {error}; give --web another port") from None
        self._push(served.stop)

    def _push(self, step: Callable[..., Awaitable[None]], *args: object) -> None:
        """A step of the stop, bounded by ``STEP_SECONDS``."""

        async def bounded() -> None:
            await asyncio.wait_for(step(*args), STEP_SECONDS)

        self._running.push_async_callback(bounded)

    async def _open(self, name: str, password: str) -> Agent:
        """Open the service's stores (closed at stop) and build its agent."""
        config = self.config
        try:
            plugin = service(name)
        except KeyError as unknown:
            raise RuntimeError(unknown.args[0]) from None
        closing = AsyncExitStack()
        self._push(closing.aclose)  # the service's own closers, each run whatever failed
        context = ServiceContext(
            data_dir=config.data_dir,
            limits=config.limits,
            synchronous=config.synchronous,
            jids={registered.name: config.jid_of(registered.name) for registered in SERVICES},
            followers=tuple(
                config.jid_of(other.name)
                for other in SERVICES
                if other.follows == name and other.name in config.services
            ),
            closing=closing,
            manifest=Manifest(config.data_dir),
            spaces=self.spaces,
            database=config.database,
            work_item_patterns=tuple(
                pattern
                for other in config.services
                for pattern in service(other).work_item_patterns(
                    config.config_of(other), config.data_dir
                )
            ),
        )
        opened: MemoryService
        try:
            opened = await plugin.open(config.config_of(name), context)
        except DamagedStore as damaged:
            if not config.allow_damaged:
                raise
            logger.error("%s; its agent answers service-unavailable", damaged)
            opened = OutOfService(name, plugin.ops, config.limits, str(damaged))
        return MemoryAgent(config.jid_of(name), password, opened, port=config.port)

    async def stop(self) -> None:
        """Stop every agent, then the stores and the server, in reverse start order.

        Every step runs, each within ``STEP_SECONDS``; raises the last failure after all.
        """
        try:
            await self._running.aclose()
        finally:
            self.agents.clear()


class StartInterrupted(Exception):
    """SIGINT or SIGTERM came before the service was ready; what had started is stopped."""


INTERRUPTED_START = "interrupted while starting; nothing was served"
QUIT_SECONDS = 0.5
"""How long the stop of a start interrupted by a signal may take before the process
ends anyway: a user who pressed Ctrl-C waits for nothing (the model's preparation runs
on in a thread otherwise; a store that is opening is safe to leave, as after a crash)."""


async def serve(config: RunConfig, on_ready: Callable[[RunConfig], None] | None = None) -> None:
    """Run the memory agents until SIGINT or SIGTERM, then stop them cleanly.

    A signal while starting cancels the start (what had started is stopped, within
    ``QUIT_SECONDS``, else the process ends with one line) and raises
    ``StartInterrupted``; a second signal ends the process at once.
    """
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    if not config.debug:
        loop.set_exception_handler(loop_errors.one_line)
    runtime = MemoryRuntime(config)
    starting = asyncio.ensure_future(runtime.start())

    def on_signal() -> None:
        if stop.is_set():
            quit_now("stopped at once (a second signal)")
        stop.set()
        if not starting.done():
            starting.cancel()  # its failure path stops what had started
            loop.call_later(QUIT_SECONDS, quit_now, INTERRUPTED_START)

    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, on_signal)
    try:
        await starting
    except asyncio.CancelledError:
        if stop.is_set():
            raise StartInterrupted(INTERRUPTED_START) from None
        raise
    collector.settle()  # what start-up made lives as long as the process
    try:
        if on_ready is not None:
            on_ready(config)
        await stop.wait()
    finally:
        await runtime.stop()


def quit_now(line: str) -> NoReturn:
    """End the process with ``line`` on stderr and status ``EXIT_AT_ONCE``, without
    waiting for threads; the logs are flushed (and a progress display closed) first."""
    logging.shutdown()
    print(f"spade-memory: {line}", file=sys.stderr, flush=True)
    sys.stdout.flush()
    os._exit(EXIT_AT_ONCE)


LEFTOVER_SECONDS = 5.0
"""How long tasks still running after the stop get to end once cancelled."""


def run_service(config: RunConfig, on_ready: Callable[[RunConfig], None] | None = None) -> None:
    """``serve`` on a new event loop, like ``asyncio.run`` except that tasks left behind
    (a library's) get ``LEFTOVER_SECONDS`` to end once cancelled and are then given up
    (and named in the log): ``asyncio.run`` would wait for them forever.

    Raises what ``serve`` raised.
    """
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(serve(config, on_ready))
    finally:
        try:
            _cancel_leftovers(loop)
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            loop.close()


def _cancel_leftovers(loop: asyncio.AbstractEventLoop) -> None:
    tasks = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in tasks:
        task.cancel()
    if not tasks:
        return
    _, pending = loop.run_until_complete(asyncio.wait(tasks, timeout=LEFTOVER_SECONDS))
    if pending:
        names = ", ".join(sorted(str(task.get_coro()) for task in pending))
        logger.warning("given up after the stop, still running: %s", names)


def use_uvloop() -> None:
    """Run the next event loops on uvloop (a SPADE dependency on Linux/macOS) if present."""
    try:
        import uvloop
    except ImportError:
        return
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
