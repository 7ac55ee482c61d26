"""Start and stop the memory agents (and, by default, the embedded XMPP server)."""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path

from spade.agent import Agent

from . import protocol
from .agents.base_memory import BaseMemoryAgent
from .agents.beads_sync import BeadsSyncAgent
from .agents.interaction_memory import InteractionMemoryAgent
from .beads.engine import BeadsError, EngineName, open_engine
from .beads.git import GitCommitter
from .context_dir import ContextDirectory
from .embeddings import load_embedder
from .lifecycle import start_agent, stop_agent
from .limits import Limits
from .stores.beads_memories import BeadsMemoryStore
from .stores.connection import Synchronous
from .stores.interaction import InteractionStore
from .stores.longterm import LongTermStore
from .xmpp_server import EmbeddedXMPPServer

PASSWORD_ENV = "SPADE_MEMORY_PASSWORD"
SERVICES = (protocol.BASE_MEMORY_NODE, protocol.INTERACTION_MEMORY_NODE, protocol.BEADS_SYNC_NODE)


@dataclass
class RunConfig:
    """Where data lives and how the memory agents reach their XMPP server."""

    data_dir: Path
    domain: str = "localhost"
    port: int = 5222
    s2s_port: int = 5269
    embedded_server: bool = True
    base_jid: str | None = None
    interaction_jid: str | None = None
    context_directory: Path | None = None
    """Where the human-readable context lives (default: DATA_DIR/context)."""
    password: str | None = None
    connect_timeout: float = 15.0
    services: tuple[str, ...] = SERVICES
    """Which memory agents to run (all by default)."""
    limits: Limits = field(default_factory=Limits)
    synchronous: Synchronous = "NORMAL"
    beads_jid: str | None = None
    beads_project: Path | None = None
    """The project whose ``.beads/issues.jsonl`` holds the memories (default: DATA_DIR/beads)."""
    beads_engine: EngineName = "auto"
    beads_prefix: str = "mem"
    beads_debounce: float = 5.0
    beads_poll: float = 30.0
    beads_git_commit: bool = False
    session: str | None = None
    """The beads sync agent's current session (default: one new id per run)."""
    dense_search: bool = True
    """Fuse BM25 with MiniLM similarity when the ``embeddings`` extra is installed."""
    mirror: str | None = None
    """The beads sync agent the base memory agent reports to when it runs elsewhere."""

    @property
    def base_memory_jid(self) -> str:
        return self.base_jid or f"{protocol.BASE_MEMORY_NODE}@{self.domain}"

    @property
    def interaction_memory_jid(self) -> str:
        return self.interaction_jid or f"{protocol.INTERACTION_MEMORY_NODE}@{self.domain}"

    @property
    def beads_sync_jid(self) -> str:
        return self.beads_jid or f"{protocol.BEADS_SYNC_NODE}@{self.domain}"

    @property
    def beads_dir(self) -> Path:
        return self.beads_project or self.data_dir / "beads"

    @property
    def mirror_jid(self) -> str | None:
        """The beads sync agent's JID when it runs (it mirrors the base memory agent)."""
        if self.mirror is not None:
            return self.mirror
        return self.beads_sync_jid if protocol.BEADS_SYNC_NODE in self.services else None

    @property
    def base_memory_db(self) -> Path:
        return self.data_dir / "base-memory.db"

    @property
    def interaction_memory_db(self) -> Path:
        return self.data_dir / "interaction-memory.db"

    @property
    def context_dir(self) -> Path:
        return self.context_directory or self.data_dir / "context"


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
            for service in config.services:
                agent = await self._open(service, password)
                self._running.push_async_callback(stop_agent, agent)
                self.agents.append(agent)
                await start_agent(agent, attempt_timeout=config.connect_timeout / 3)
        except BaseException:
            await self.stop()
            raise

    async def _open(self, service: str, password: str) -> Agent:
        """Open the service's store (closed at stop) and build its agent."""
        config = self.config
        limits, port = config.limits, config.port
        if service == protocol.BASE_MEMORY_NODE:
            embedder = await asyncio.to_thread(load_embedder) if config.dense_search else None
            long_term = await LongTermStore.open(
                config.base_memory_db, config.synchronous, embedder
            )
            self._running.push_async_callback(long_term.close)
            jid, mirror = config.base_memory_jid, config.mirror_jid
            return BaseMemoryAgent(jid, password, long_term, limits, mirror=mirror, port=port)
        if service == protocol.INTERACTION_MEMORY_NODE:
            notes = await InteractionStore.open(config.interaction_memory_db, config.synchronous)
            self._running.push_async_callback(notes.close)
            jid, context = config.interaction_memory_jid, ContextDirectory(config.context_dir)
            return InteractionMemoryAgent(jid, password, notes, context, limits, port=port)
        if service == protocol.BEADS_SYNC_NODE:
            return self._beads_sync_agent(password)
        raise RuntimeError(f"unknown memory service {service!r}; known: {', '.join(SERVICES)}")

    def _beads_sync_agent(self, password: str) -> Agent:
        config = self.config
        try:
            engine = open_engine(config.beads_dir, config.beads_engine, config.beads_prefix)
        except BeadsError as error:
            raise RuntimeError(f"cannot start the beads sync agent: {error}") from None
        session = config.session or new_session_id()
        issues = config.beads_dir / ".beads" / "issues.jsonl"
        git = GitCommitter(config.beads_dir, [issues]) if config.beads_git_commit else None
        return BeadsSyncAgent(
            config.beads_sync_jid,
            password,
            BeadsMemoryStore(engine, session),
            cursor_path=config.data_dir / "beads-sync-cursor.json",
            base_memory_jid=config.base_memory_jid,
            debounce=config.beads_debounce,
            poll=config.beads_poll,
            git=git,
            limits=config.limits,
            port=config.port,
        )

    async def stop(self) -> None:
        await self._running.aclose()
        self.agents.clear()


def new_session_id() -> str:
    """A session id that sorts by start time: ``20261122-083000-1a2b``."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


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
