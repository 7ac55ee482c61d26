"""A memory service as a plugin, in the manner of slixmpp's: what the registry lists.

A ``ServicePlugin`` names its service (``name``, the JID ``node``), lists its
ops, carries its ``default_config``, its command-line flags and its
environment variables, and opens the ``MemoryService`` its agent serves (the
ops it parses, ``batch`` to apply them, and any extra behaviours) in a
``ServiceContext``. ``spade_memory.server.registry`` lists the plugins; nothing else
names a service.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from pydantic import TypeAdapter
from spade.agent import Agent
from spade.behaviour import CyclicBehaviour
from spade.template import Template

from spade_memory.protocol.limits import Limits
from spade_memory.protocol.ops import Outcome, Request
from spade_memory.storage.connection import Synchronous
from spade_memory.storage.manifest import Manifest

if TYPE_CHECKING:
    from spade_memory.spaces.directory import SpaceDirectory

Behaviours = Sequence[tuple[CyclicBehaviour, Template | None]]
"""Behaviours a service's agent runs beside serving, each with its template."""


class MemoryService(Protocol):
    """A memory service: the ops it parses, how it applies them, its extra behaviours."""

    name: str
    ops: TypeAdapter[Any]
    limits: Limits

    async def batch(self, owner: str, requests: Sequence[Request]) -> list[Outcome]:
        """Apply ``requests`` for ``owner``; one outcome (result or typed error) each."""
        ...

    async def apply(self, owner: str, op: Any, request_id: str | None = None) -> Any:
        """One op: its result, or its typed error raised."""
        ...

    def behaviours(self, agent: Agent) -> Behaviours:
        """Behaviours the agent runs beside serving (with their templates)."""
        ...


@dataclass(frozen=True)
class ServiceConfig:
    """Settings of one service in a run; each service subclasses it with its own."""

    jid: str | None = None
    """The agent's JID (default: ``node@domain``)."""


@dataclass
class ServiceContext:
    """Where a service opens: the run's data directory, limits and the other agents."""

    data_dir: Path
    limits: Limits
    synchronous: Synchronous
    jids: Mapping[str, str]
    """Every registered service's JID in this deployment, by service name."""
    followers: tuple[str, ...]
    """JIDs of the running services that follow this one (its mirrors)."""
    closing: AsyncExitStack
    """Where the service registers what must be closed when the run stops."""
    manifest: Manifest | None = None
    """What the data directory's stores held, checked when they open."""
    spaces: SpaceDirectory | None = None
    """The directory of spaces every service of the deployment reads (None: no spaces)."""
    work_item_patterns: tuple[str, ...] = ()
    """Patterns of work-item ids the deployment's services know of (a beads prefix)."""
    database: str | None = None
    """The PostgreSQL database (URL) that stores able to use it open instead of their
    SQLite file (None: SQLite)."""


class ServicePlugin:
    """A registered memory service: its names, ops, configuration and how it opens."""

    name: ClassVar[str]
    """The service's name (``--services``, the schema); also its default JID node."""
    title: ClassVar[str]
    """What a person calls its agent ("base memory agent")."""
    union: ClassVar[Any]
    """The discriminated union of the service's ops (its classes name their replies)."""
    ops: ClassVar[TypeAdapter[Any]]
    """The parser of that union."""
    default_config: ClassVar[ServiceConfig] = ServiceConfig()
    follows: ClassVar[str | None] = None
    """The service whose change notices this one follows, if any."""

    @property
    def node(self) -> str:
        """The local part of the agent's default JID."""
        return self.name

    async def open(self, config: Any, context: ServiceContext) -> MemoryService:
        """Open the service's stores (closed through ``context.closing``).

        Returns the service to serve; raises ``RuntimeError`` with one sentence
        when it cannot start.
        """
        raise NotImplementedError

    def add_arguments(self, parser: argparse._ActionsContainer) -> None:
        """Add the service's own flags to ``spade-memory run``."""

    def configure(self, args: argparse.Namespace) -> ServiceConfig:
        """The service's config from the parsed flags of ``spade-memory run``."""
        return self.default_config

    def from_environment(self, environ: Mapping[str, str]) -> ServiceConfig:
        """The service's config from a deployment's environment variables."""
        return self.default_config

    def places(
        self, config: Any, data_dir: Path, database: str | None = None
    ) -> list[tuple[str, str]]:
        """Where the service keeps its data, for the start-up banner (``database``: the
        run's PostgreSQL URL, password hidden, if it has one)."""
        return []

    def work_item_patterns(self, config: Any, data_dir: Path) -> list[str]:
        """Patterns of the ids of the work items this service knows of (memories whose
        source names one are linked to it)."""
        return []
