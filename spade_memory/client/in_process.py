"""A transport to memory services of this process: the same calls, with no XMPP.

For tests, notebooks and single-process programs that hold the services themselves
(``BaseMemoryService``, ``InteractionMemoryService``, ...; anything with the
``AppliesOps`` methods). Nothing authenticates a sender here, so the owner is the
identity the transport is built with; over XMPP it is the sender's bare JID.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TypeVar

from spade_memory.protocol.errors import ItemNotFound, MemoryServiceError
from spade_memory.protocol.ops import Op, Outcome, Record, Request

R = TypeVar("R", bound=Record)


class LocalService(Protocol):
    """What the transport needs of a service: ``AppliesOps.batch``."""

    async def batch(self, owner: str, requests: Sequence[Request]) -> list[Outcome]: ...


class InProcessTransport:
    """Hands each op to the service named, as ``owner`` (a bare JID)."""

    def __init__(self, services: Mapping[str, LocalService], owner: str) -> None:
        self.services = dict(services)
        self.owner = owner
        self.jids = {name: name for name in self.services}
        self.degraded = False

    def _service(self, to: str) -> LocalService:
        service = self.services.get(to)
        if service is None:
            raise ItemNotFound(f"no memory service {to!r} in this process")
        return service

    async def request(self, to: str, op: Op[R]) -> R:
        """Apply ``op`` at ``to``.

        Returns its result; raises its typed error, or ``ItemNotFound`` for an unknown
        service.
        """
        (outcome,) = await self.batch(to, [op])
        if isinstance(outcome, MemoryServiceError):
            raise outcome
        return outcome  # type: ignore[return-value]

    async def batch(self, to: str, ops: Sequence[Op[Any]]) -> list[Record | MemoryServiceError]:
        """Apply ``ops`` at ``to`` together.

        Returns one outcome per op, its result or its typed error; raises
        ``ItemNotFound`` for an unknown service.
        """
        requests = [Request(op, uuid.uuid4().hex) for op in ops]
        return await self._service(to).batch(self.owner, requests)
