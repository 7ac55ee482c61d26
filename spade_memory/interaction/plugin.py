"""The interaction memory service's registry entry: its configuration, command-line
flags and environment, how ``spade-memory run`` opens it, and the sweep of deleted
spaces it starts."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from spade_memory.interaction import NAME
from spade_memory.interaction.context_dir import ContextDirectory
from spade_memory.interaction.service import (
    DATABASE,
    InteractionMemoryService,
)
from spade_memory.interaction.store import InteractionStore
from spade_memory.protocol.expiry import PURGE_EVERY_SECONDS
from spade_memory.protocol.interaction import InteractionOp, interaction_ops
from spade_memory.serving.plugin import (
    MemoryService,
    ServiceConfig,
    ServiceContext,
    ServicePlugin,
)
from spade_memory.storage.purging import purge_now_and_then


@dataclass(frozen=True)
class InteractionConfig(ServiceConfig):
    context_directory: Path | None = None
    """Where the human-readable context lives (default: DATA_DIR/context)."""

    def context_dir(self, data_dir: Path) -> Path:
        return self.context_directory or data_dir / "context"


class InteractionMemoryPlugin(ServicePlugin):
    """Registry entry of the interaction memory service."""

    name = NAME
    title = "interaction memory agent"
    union = InteractionOp
    ops = interaction_ops
    default_config = InteractionConfig()

    async def open(self, config: InteractionConfig, context: ServiceContext) -> MemoryService:
        path = context.database or context.data_dir / DATABASE  # notes beside the others
        store = await InteractionStore.open(
            path, context.synchronous, context.manifest, limits=context.limits
        )
        context.closing.push_async_callback(store.close)
        files = ContextDirectory(config.context_dir(context.data_dir))
        service = InteractionMemoryService(store, files, context.limits, directory=context.spaces)
        if context.spaces is not None:
            sweeping = asyncio.create_task(
                purge_now_and_then(service.sweep_deleted_spaces, _every_sweep, "deleted spaces"),
                name="spade-memory-sweep-spaces",
            )
            context.closing.push_async_callback(_cancelled, sweeping)
        return service

    def add_arguments(self, parser: argparse._ActionsContainer) -> None:
        parser.add_argument(
            "--interaction-jid", default=None,
            help="JID of the interaction memory agent (default: interaction-memory@DOMAIN)",
        )  # fmt: skip
        parser.add_argument(
            "--context-dir", type=Path, default=None,
            help="human-readable context directory, e.g. inside your git repository"
            " (default: DATA_DIR/context)",
        )  # fmt: skip

    def configure(self, args: argparse.Namespace) -> InteractionConfig:
        return InteractionConfig(jid=args.interaction_jid, context_directory=args.context_dir)

    def from_environment(self, environ: Mapping[str, str]) -> InteractionConfig:
        return InteractionConfig(jid=environ.get("SPADE_MEMORY_INTERACTION_JID"))

    def places(
        self, config: InteractionConfig, data_dir: Path, database: str | None = None
    ) -> list[tuple[str, str]]:
        return [
            ("conversation notes", database or str(data_dir / DATABASE)),
            ("context directory", str(config.context_dir(data_dir))),
        ]


def _every_sweep() -> float:
    return PURGE_EVERY_SECONDS


async def _cancelled(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


PLUGIN = InteractionMemoryPlugin()
