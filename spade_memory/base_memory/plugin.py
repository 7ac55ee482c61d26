"""The base memory service's registry entry: its configuration, command-line flags and
environment, and how ``spade-memory run`` opens it."""

from __future__ import annotations

import argparse
import asyncio
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from spade_memory.base_memory import NAME
from spade_memory.base_memory.governance import PROPOSAL_HOURS
from spade_memory.base_memory.notifiers import Committed
from spade_memory.base_memory.retrieval.embeddings import load_embedder
from spade_memory.base_memory.service import DATABASE, BaseMemoryService
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.base_memory.work_items import DEFAULT_PATTERNS, WorkItems
from spade_memory.metrics.figures import QUOTA_USE, refresh_before_scrape
from spade_memory.protocol.expiry import PURGE_EVERY_SECONDS
from spade_memory.protocol.memories import (
    BaseMemoryOp,
    base_memory_ops,
)
from spade_memory.serving.plugin import (
    MemoryService,
    ServiceConfig,
    ServiceContext,
    ServicePlugin,
)

logger = logging.getLogger("spade_memory.base_memory")


@dataclass(frozen=True)
class BaseMemoryConfig(ServiceConfig):
    dense_search: bool = True
    """Fuse BM25 with MiniLM similarity when the ``embeddings`` extra is installed."""
    mirror: str | None = None
    """The beads sync agent to report to when it runs elsewhere (default: the one in this run)."""
    work_item_patterns: tuple[str, ...] = ()
    """Patterns of work-item ids to find in a memory's ``source``, besides the defaults
    (``ABC-123``, ``bd-…``, and the local beads database's prefix)."""
    work_engine: str | None = None
    """A JID told of each memory linked to a work item."""
    purge_every: float = PURGE_EVERY_SECONDS
    """Seconds between two purges of expired memories (reads hide them meanwhile)."""
    entity_graph: bool = True
    """Keep the entity graph: its links at each store, its reads, search's second round."""
    proposal_hours: float = PROPOSAL_HOURS
    """How long a writer's proposal in a governed space waits for an admin."""


class BaseMemoryPlugin(ServicePlugin):
    """Registry entry of the base memory service."""

    name = NAME
    title = "base memory agent"
    union = BaseMemoryOp
    ops = base_memory_ops
    default_config = BaseMemoryConfig()

    async def open(self, config: BaseMemoryConfig, context: ServiceContext) -> MemoryService:
        embedder = await asyncio.to_thread(load_embedder) if config.dense_search else None
        path = context.database or context.data_dir / DATABASE
        patterns = [*DEFAULT_PATTERNS, *context.work_item_patterns, *config.work_item_patterns]
        work_items = WorkItems(tuple(dict.fromkeys(patterns)), notify_jid=config.work_engine)
        committed = Committed(work_items)
        store = await LongTermStore.open(
            path, context.synchronous, embedder, context.manifest, context.limits, work_items,
            listeners=committed.listeners(), purge_every=config.purge_every,
            entity_graph=config.entity_graph,
        )  # fmt: skip
        context.closing.push_async_callback(store.close)
        limits = context.limits

        async def quota_use() -> None:
            memories, size = await store.fullest("owner:")
            QUOTA_USE.labels("memories").set(memories / max(1, limits.max_memories_per_owner))
            QUOTA_USE.labels("bytes").set(size / max(1, limits.max_bytes_per_owner))

        context.closing.callback(refresh_before_scrape(quota_use))
        mirror = config.mirror or next(iter(context.followers), None)
        return BaseMemoryService(
            store, context.limits, mirror, context.spaces, committed, config.proposal_hours
        )

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
            "--no-entity-graph", action="store_true",
            help="keep no entity graph: cheaper stores; no second round of search, and the"
            " graph's reads answer feature-not-implemented",
        )  # fmt: skip
        parser.add_argument(
            "--mirror-jid", default=None,
            help="beads sync agent the base memory agent reports to, when it runs elsewhere",
        )  # fmt: skip
        parser.add_argument(
            "--work-item-pattern", action="append", default=[], metavar="REGEX",
            dest="work_item_patterns",
            help="a pattern of work-item ids to link memories to, found in their source"
            " (repeatable; ABC-123 and the beads ids are always on)",
        )  # fmt: skip
        parser.add_argument(
            "--work-engine-jid", default=None,
            help="a JID told of each memory linked to a work item",
        )  # fmt: skip
        parser.add_argument(
            "--proposal-hours", type=float, default=PROPOSAL_HOURS, metavar="HOURS",
            help="how long a writer's proposal in a governed space waits for an admin before"
            " it expires (default: %(default)s)",
        )  # fmt: skip
        parser.add_argument(
            "--purge-every", type=float, default=PURGE_EVERY_SECONDS, metavar="SECONDS",
            help="seconds between two purges of expired memories (default: %(default)s)",
        )  # fmt: skip

    def configure(self, args: argparse.Namespace) -> BaseMemoryConfig:
        for pattern in args.work_item_patterns:
            try:
                re.compile(pattern)
            except re.error as error:
                raise SystemExit(f"--work-item-pattern {pattern!r}: {error}") from None
        return BaseMemoryConfig(
            jid=args.base_jid, dense_search=not args.no_dense_search, mirror=args.mirror_jid,
            work_item_patterns=tuple(args.work_item_patterns), work_engine=args.work_engine_jid,
            purge_every=max(0.1, args.purge_every), entity_graph=not args.no_entity_graph,
            proposal_hours=max(0.001, args.proposal_hours),
        )  # fmt: skip

    def from_environment(self, environ: Mapping[str, str]) -> BaseMemoryConfig:
        return BaseMemoryConfig(
            jid=environ.get("SPADE_MEMORY_BASE_JID"),
            mirror=environ.get("SPADE_MEMORY_MIRROR_JID"),
            work_engine=environ.get("SPADE_MEMORY_WORK_ENGINE_JID"),
        )

    def places(
        self, config: BaseMemoryConfig, data_dir: Path, database: str | None = None
    ) -> list[tuple[str, str]]:
        return [("long-term memories", database or str(data_dir / DATABASE))]


PLUGIN = BaseMemoryPlugin()
