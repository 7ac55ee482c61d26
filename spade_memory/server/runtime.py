"""Start and stop the memory agents of the registry (and, by default, the embedded XMPP
server)."""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path

from spade.agent import Agent

from ..lifecycle import start_agent, stop_agent
from ..limits import Limits
from ..plugin import ServiceConfig, ServiceContext
from ..registry import NAMES, SERVICES, service
from ..serving import MemoryAgent
from ..storage.connection import Synchronous
from .xmpp_server import EmbeddedXMPPServer

PASSWORD_ENV = "SPADE_MEMORY_PASSWORD"


@dataclass
class RunConfig:
    """Where data lives, how the memory agents reach their XMPP server, which run."""

    data_dir: Path
    domain: str = "localhost"
    port: int = 5222
    s2s_port: int = 5269
    embedded_server: bool = True
    password: str | None = None
    connect_timeout: float = 15.0
    services: tuple[str, ...] = NAMES
    """Which memory agents to run (all by default)."""
    limits: Limits = field(default_factory=Limits)
    synchronous: Synchronous = "NORMAL"
    settings: dict[str, ServiceConfig] = field(default_factory=dict)
    """Each service's own settings, by service name (its ``default_config`` if absent)."""

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


class MemoryRuntime:
    """Everything `spade-memory run` starts, in start order, stopped in reverse."""

    def __init__(self, config: RunConfig) -> None:
        self.config = config
        self.agents: list[Agent] = []
        self._running = AsyncExitStack()

    async def start(self) -> None:
        """Start the embedded server (unless external) and every configured service's agent.

        Raises ``RuntimeError`` with one sentence when something cannot start
        (an unknown service, a busy port, no XMPP server, a beads engine).
        """
        config = self.config
        config.data_dir.mkdir(parents=True, exist_ok=True)
        password = agent_password(config)
        try:
            if config.embedded_server:
                server = EmbeddedXMPPServer(
                    config.data_dir, config.domain, config.port, config.s2s_port
                )
                await server.start()
                self._running.push_async_callback(server.stop)
            for name in config.services:
                agent = await self._open(name, password)
                self._running.push_async_callback(stop_agent, agent)
                self.agents.append(agent)
                await start_agent(agent, attempt_timeout=config.connect_timeout / 3)
        except BaseException:
            await self.stop()
            raise

    async def _open(self, name: str, password: str) -> Agent:
        """Open the service's stores (closed at stop) and build its agent."""
        config = self.config
        try:
            plugin = service(name)
        except KeyError as unknown:
            raise RuntimeError(unknown.args[0]) from None
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
            closing=self._running,
        )
        opened = await plugin.open(config.config_of(name), context)
        return MemoryAgent(config.jid_of(name), password, opened, port=config.port)

    async def stop(self) -> None:
        """Stop every agent, then the stores and the server, in reverse start order."""
        await self._running.aclose()
        self.agents.clear()


async def serve(config: RunConfig, on_ready: Callable[[RunConfig], None] | None = None) -> None:
    """Run the memory agents until SIGINT or SIGTERM, then stop them cleanly."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    runtime = MemoryRuntime(config)
    await runtime.start()
    try:
        if on_ready is not None:
            on_ready(config)
        await stop.wait()
    finally:
        await runtime.stop()


def use_uvloop() -> None:
    """Run the next event loops on uvloop (a SPADE dependency on Linux/macOS) if present."""
    try:
        import uvloop
    except ImportError:
        return
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
