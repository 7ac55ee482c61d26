"""The base memory agent: what it serves, how it tells its mirror, and its registry entry."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter
from spade.agent import Agent
from spade.behaviour import CyclicBehaviour

from .. import wire
from ..errors import MemoryServiceError, NotAuthorized
from ..limits import Limits
from ..ops import AppliesOps, Outcome, Request, in_place
from ..plugin import Behaviours, MemoryService, ServiceConfig, ServiceContext, ServicePlugin
from ..serving import MemoryAgent
from . import NAME
from .embeddings import load_embedder
from .notices import change_notice
from .ops import WRITE_OPS, BaseMemoryOp, ChangesSince, base_memory_ops
from .store import LongTermStore

DATABASE = "base-memory.db"
"""The store's file in the data directory."""


class BaseMemoryService(AppliesOps):
    """Serves the base memory ops from an injected long-term store.

    ``mirror`` (the beads sync agent's JID) is the one sender allowed to read
    the change feed; it is told after every committed write.
    """

    name = NAME

    def __init__(
        self, store: LongTermStore, limits: Limits | None = None, mirror: str | None = None
    ) -> None:
        self.store = store
        self.limits = limits or Limits()
        self.ops: TypeAdapter[BaseMemoryOp] = base_memory_ops
        self.mirror = None if mirror is None else wire.bare(mirror)
        self.changed = asyncio.Event()

    async def batch(self, owner: str, requests: Sequence[Request]) -> list[Outcome]:
        """The ops applied in one store transaction; the change feed is the mirror's only."""
        refused: dict[int, MemoryServiceError] = {
            index: NotAuthorized("only the configured mirror may read the change feed")
            for index, request in enumerate(requests)
            if isinstance(request.op, ChangesSince) and owner != self.mirror
        }
        allowed = [request for index, request in enumerate(requests) if index not in refused]
        applied = await self.store.batch(owner, allowed) if allowed else []
        if self.mirror is not None and any(
            isinstance(request.op, WRITE_OPS) and not isinstance(outcome, MemoryServiceError)
            for request, outcome in zip(allowed, applied, strict=True)
        ):
            self.changed.set()
        return in_place(len(requests), refused, applied)

    def behaviours(self, agent: Agent) -> Behaviours:
        """With a mirror: the behaviour that tells it about committed writes."""
        return [] if self.mirror is None else [(NotifyMirror(self), None)]


class NotifyMirror(CyclicBehaviour):  # type: ignore[misc]
    """Tells the mirror when writes were committed (many writes, one notice)."""

    def __init__(self, service: BaseMemoryService) -> None:
        super().__init__()
        self.service = service

    def kill(self, exit_code: object | None = None) -> None:
        """Kill it, and wake its wait for writes (so it ends at once, telling no one)."""
        super().kill(exit_code)
        self.service.changed.set()

    async def run(self) -> None:
        try:
            await asyncio.wait_for(self.service.changed.wait(), timeout=1.0)
        except asyncio.TimeoutError:
            return
        if self.is_killed():
            return
        self.service.changed.clear()
        assert self.service.mirror is not None
        await self.send(change_notice(self.service.mirror))


class BaseMemoryAgent(MemoryAgent):
    """A memory agent serving long-term memories from ``store``."""

    def __init__(
        self,
        jid: str,
        password: str,
        store: LongTermStore,
        limits: Limits | None = None,
        *,
        mirror: str | None = None,
        **agent_options: Any,
    ) -> None:
        super().__init__(jid, password, BaseMemoryService(store, limits, mirror), **agent_options)


@dataclass(frozen=True)
class BaseMemoryConfig(ServiceConfig):
    dense_search: bool = True
    """Fuse BM25 with MiniLM similarity when the ``embeddings`` extra is installed."""
    mirror: str | None = None
    """The beads sync agent to report to when it runs elsewhere (default: the one in this run)."""


class BaseMemoryPlugin(ServicePlugin):
    """Registry entry of the base memory service."""

    name = NAME
    title = "base memory agent"
    union = BaseMemoryOp
    ops = base_memory_ops
    default_config = BaseMemoryConfig()

    async def open(self, config: BaseMemoryConfig, context: ServiceContext) -> MemoryService:
        embedder = await asyncio.to_thread(load_embedder) if config.dense_search else None
        path = context.data_dir / DATABASE
        store = await LongTermStore.open(path, context.synchronous, embedder, context.manifest)
        context.closing.push_async_callback(store.close)
        mirror = config.mirror or next(iter(context.followers), None)
        return BaseMemoryService(store, context.limits, mirror)

    def add_arguments(self, parser: argparse._ActionsContainer) -> None:
        parser.add_argument(
            "--base-jid", default=None,
            help="JID of the base memory agent (default: base-memory@DOMAIN)",
        )  # fmt: skip
        parser.add_argument(
            "--no-dense-search", action="store_true",
            help="search with BM25 alone even when the embeddings extra is installed",
        )  # fmt: skip
        parser.add_argument(
            "--mirror-jid", default=None,
            help="beads sync agent the base memory agent reports to, when it runs elsewhere",
        )  # fmt: skip

    def configure(self, args: argparse.Namespace) -> BaseMemoryConfig:
        return BaseMemoryConfig(
            jid=args.base_jid, dense_search=not args.no_dense_search, mirror=args.mirror_jid
        )

    def from_environment(self, environ: Mapping[str, str]) -> BaseMemoryConfig:
        return BaseMemoryConfig(
            jid=environ.get("SPADE_MEMORY_BASE_JID"), mirror=environ.get("SPADE_MEMORY_MIRROR_JID")
        )

    def places(self, config: BaseMemoryConfig, data_dir: Path) -> list[tuple[str, str]]:
        return [("long-term memories", str(data_dir / DATABASE))]


PLUGIN = BaseMemoryPlugin()
