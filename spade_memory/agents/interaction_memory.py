"""The interaction memory agent: notes per conversation (working memory comes next)."""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from ..interaction_ops import InteractionOp, interaction_ops
from ..limits import Limits
from ..records import Record
from ..stores.interaction import InteractionStore
from .serving import MemoryAgent


class InteractionMemoryService:
    """Serves the interaction memory ops from an injected store."""

    name = "interaction-memory"

    def __init__(self, store: InteractionStore, limits: Limits | None = None) -> None:
        self.store = store
        self.limits = limits or Limits()
        self.ops: TypeAdapter[InteractionOp] = interaction_ops

    async def handle(self, owner: str, op: InteractionOp, request_id: str | None) -> Record:
        return await self.store.apply(owner, op, request_id)


class InteractionMemoryAgent(MemoryAgent):
    """A memory agent serving conversation notes from ``store``."""

    def __init__(
        self,
        jid: str,
        password: str,
        store: InteractionStore,
        limits: Limits | None = None,
        **agent_options: Any,
    ) -> None:
        super().__init__(jid, password, InteractionMemoryService(store, limits), **agent_options)
