"""The base memory agent: long-term memories (fact, pattern, preference, capability)."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import TypeAdapter
from spade.behaviour import CyclicBehaviour

from .. import protocol
from ..errors import NotAuthorized
from ..limits import Limits
from ..ops import WRITE_OPS, BaseMemoryOp, ChangesSince, base_memory_ops
from ..records import Record
from ..stores.longterm import LongTermStore
from .serving import MemoryAgent


class BaseMemoryService:
    """Serves the base memory ops from an injected long-term store.

    ``mirror`` (the beads sync agent's JID) is the one sender allowed to read
    the change feed; it is told after every committed write.
    """

    name = "base-memory"

    def __init__(
        self, store: LongTermStore, limits: Limits | None = None, mirror: str | None = None
    ) -> None:
        self.store = store
        self.limits = limits or Limits()
        self.ops: TypeAdapter[BaseMemoryOp] = base_memory_ops
        self.mirror = None if mirror is None else protocol.bare(mirror)
        self.changed = asyncio.Event()

    async def handle(self, owner: str, op: BaseMemoryOp, request_id: str | None) -> Record:
        if isinstance(op, ChangesSince) and owner != self.mirror:
            raise NotAuthorized("only the configured mirror may read the change feed")
        result = await self.store.apply(owner, op, request_id)
        if isinstance(op, WRITE_OPS) and self.mirror is not None:
            self.changed.set()
        return result


class NotifyMirror(CyclicBehaviour):  # type: ignore[misc]
    """Tells the mirror when writes were committed (many writes, one notice)."""

    def __init__(self, service: BaseMemoryService) -> None:
        super().__init__()
        self.service = service

    async def run(self) -> None:
        try:
            await asyncio.wait_for(self.service.changed.wait(), timeout=1.0)
        except asyncio.TimeoutError:
            return
        self.service.changed.clear()
        assert self.service.mirror is not None
        await self.send(protocol.change_notice(self.service.mirror))


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
        self.base_service = BaseMemoryService(store, limits, mirror)
        super().__init__(jid, password, self.base_service, **agent_options)

    async def setup(self) -> None:
        await super().setup()
        if self.base_service.mirror is not None:
            self.add_behaviour(NotifyMirror(self.base_service))
