"""The base memory agent: long-term memories (fact, pattern, preference, capability)."""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from ..limits import Limits
from ..ops import BaseMemoryOp, base_memory_ops
from ..records import Record
from ..stores.longterm import LongTermStore
from .serving import MemoryAgent


class BaseMemoryService:
    """Serves the base memory ops from an injected long-term store."""

    name = "base-memory"

    def __init__(self, store: LongTermStore, limits: Limits | None = None) -> None:
        self.store = store
        self.limits = limits or Limits()
        self.ops: TypeAdapter[BaseMemoryOp] = base_memory_ops

    async def handle(self, owner: str, op: BaseMemoryOp, request_id: str | None) -> Record:
        return await self.store.apply(owner, op, request_id)


class BaseMemoryAgent(MemoryAgent):
    """A memory agent serving long-term memories from ``store``."""

    def __init__(
        self,
        jid: str,
        password: str,
        store: LongTermStore,
        limits: Limits | None = None,
        **agent_options: Any,
    ) -> None:
        super().__init__(jid, password, BaseMemoryService(store, limits), **agent_options)
