"""MemoryClient: typed async calls to the memory services.

Each service's calls are composed around one transport (``transport.Transport``): the
base memory agent's and the interaction memory agent's as methods (they mirror
spade_llm's memory classes), the spaces' (``spaces``), the beads sync agent's as
``client.beads``. Over XMPP (``XmppTransport``, the default), which agent serves a
service is ``<service name>@<the agent's domain>`` unless a JID is given; a service
served by several agents on one shared store is given as a list of their JIDs, or by
the deployment in ``SPADE_MEMORY_BASE_POOL`` and ``SPADE_MEMORY_INTERACTION_POOL``
(see ``failover``). ``MemoryClient(transport=InProcessTransport(...))`` calls services
of this process instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from spade_memory.client.conversations import InteractionCalls
from spade_memory.client.failover import BASE_POOL_ENV, INTERACTION_POOL_ENV, pool_from_environment
from spade_memory.client.memories import BaseMemoryCalls
from spade_memory.client.spaces import SpaceCalls
from spade_memory.client.transport import Transport
from spade_memory.protocol.limits import Limits
from spade_memory.protocol.memories import Category, Memory, MemoryStats
from spade_memory.protocol.services import BASE_MEMORY, BEADS_SYNC, INTERACTION_MEMORY, default_jids

if TYPE_CHECKING:
    from spade.agent import Agent

    from spade_memory.client.beads import BeadsClient
    from spade_memory.client.changes import SpaceChanges
    from spade_memory.client.memories import FetchedMemories
    from spade_memory.client.session import SessionMemory
    from spade_memory.protocol.context import ContextEntry
    from spade_memory.protocol.space_names import Role
    from spade_memory.protocol.spaces import SpaceDetails
    from spade_memory.protocol.working import WorkingSessions


class MemoryClient(BaseMemoryCalls, InteractionCalls, SpaceCalls):
    """Talks to the memory agents on behalf of ``agent``: the base memory agent's calls,
    the interaction memory agent's, the spaces' (``client.space(name)`` acts in one),
    and the beads sync agent's as ``client.beads``.

    ``base_memory_jid`` (and ``interaction_memory_jid``): the agent's JID, or the JIDs
    of several agents serving one shared store, which share the requests and stand in
    for one another (default: the JIDs in ``SPADE_MEMORY_BASE_POOL``, and
    ``SPADE_MEMORY_INTERACTION_POOL``, else the registry's); ``timeout``: seconds to
    wait for each reply; ``attempts``: sends of one request (same request id) before
    ``MemoryTimeout``; ``degraded``: return empty answers
    instead of raising ``MemoryTimeout``; ``max_in_flight``: calls sent at once
    (more wait here instead of being refused by the memory agent). Those are the XMPP
    transport's; ``transport`` replaces it (``InProcessTransport``: services of this
    process), and ``agent`` is then not needed.
    """

    def __init__(
        self,
        agent: Agent | None = None,
        base_memory_jid: str | Sequence[str] | None = None,
        *,
        interaction_memory_jid: str | Sequence[str] | None = None,
        beads_sync_jid: str | None = None,
        timeout: float = 5.0,
        attempts: int = 2,
        max_in_flight: int = Limits.max_in_flight,
        degraded: bool = False,
        transport: Transport | None = None,
    ) -> None:
        if transport is None:
            if agent is None:
                raise TypeError("MemoryClient needs an agent (to speak XMPP) or a transport")
            from spade_memory.client.xmpp_transport import XmppTransport  # imports SPADE

            transport = XmppTransport(
                agent,
                service_jids(
                    str(agent.jid.domain), base_memory_jid, interaction_memory_jid, beads_sync_jid
                ),
                timeout=timeout,
                attempts=attempts,
                max_in_flight=max_in_flight,
                degraded=degraded,
            )
        super().__init__(transport)
        self._beads: BeadsClient | None = None

    @property
    def beads(self) -> BeadsClient:
        """The beads sync agent's calls (memories kept as beads issues; their models are
        built at the first use)."""
        if self._beads is None:
            from spade_memory.client.beads import BeadsClient

            self._beads = BeadsClient(
                self.transport, self.transport.jids.get(BEADS_SYNC, BEADS_SYNC)
            )
        return self._beads

    def space(self, name: str) -> SpaceMemory:
        """A handle that acts in the space ``name``."""
        return SpaceMemory(self, name)


def service_jids(
    domain: str,
    base_memory_jid: str | Sequence[str] | None = None,
    interaction_memory_jid: str | Sequence[str] | None = None,
    beads_sync_jid: str | None = None,
) -> dict[str, str | Sequence[str]]:
    """Each service's JID (or pool) for an agent of ``domain``: the one given, the
    deployment's (``SPADE_MEMORY_BASE_POOL``, ``..._INTERACTION_POOL``), or the default."""
    if base_memory_jid is None:
        base_memory_jid = pool_from_environment(BASE_POOL_ENV)
    if interaction_memory_jid is None:
        interaction_memory_jid = pool_from_environment(INTERACTION_POOL_ENV)
    given: dict[str, str | Sequence[str] | None] = {
        BASE_MEMORY: base_memory_jid,
        INTERACTION_MEMORY: interaction_memory_jid,
        BEADS_SYNC: beads_sync_jid,
    }
    jids: dict[str, str | Sequence[str]] = dict(default_jids(domain))
    jids.update({name: jid for name, jid in given.items() if jid is not None})
    return jids


class SpaceMemory:
    """The calls of ``MemoryClient``, in one space: ``client.space("team").store_memory(...)``.

    Each raises what the client's call raises.
    """

    def __init__(self, client: MemoryClient, name: str) -> None:
        self.client = client
        self.name = name

    async def store_memory(
        self, category: Category | None, content: str, context: str | None = None,
        confidence: float = 1.0, **described: Any,
    ) -> str | None:  # fmt: skip
        """Store a memory in the space (writers and admins); ``described`` as the client's
        ``store_memory`` takes it (``tags``, ``metadata``, ``source``, ``ttl_seconds``, …)."""
        return await self.client.store_memory(
            category, content, context, confidence, space=self.name, **described
        )

    async def search_memories(
        self, query: str, limit: int = 10, category: Category | None = None,
        mode: str = "semantic",
    ) -> FetchedMemories:  # fmt: skip
        """The space's memories ranked by relevance to ``query``."""
        return await self.client.search_memories(query, limit, category, mode, space=self.name)

    async def get_memories_by_category(
        self, category: Category, limit: int = 50
    ) -> FetchedMemories:
        return await self.client.get_memories_by_category(category, limit, space=self.name)

    async def get_recent_memories(self, limit: int = 10) -> FetchedMemories:
        return await self.client.get_recent_memories(limit, space=self.name)

    async def get_memory(self, memory_id: str) -> Memory | None:
        return await self.client.get_memory(memory_id, space=self.name)

    async def update_memory(self, memory_id: str, **changes: Any) -> Memory | None:
        return await self.client.update_memory(memory_id, space=self.name, **changes)

    async def restore_memory(self, memory_id: str) -> Memory | None:
        return await self.client.restore_memory(memory_id, space=self.name)

    async def delete_memory(self, memory_id: str) -> bool:
        return await self.client.delete_memory(memory_id, space=self.name)

    async def get_memory_stats(self) -> MemoryStats | None:
        return await self.client.get_memory_stats(space=self.name)

    async def info(self) -> SpaceDetails | None:
        return await self.client.space_info(self.name)

    async def grant(self, member: str, role: Role) -> SpaceDetails | None:
        return await self.client.grant(self.name, member, role)

    async def revoke(self, member: str) -> SpaceDetails | None:
        return await self.client.revoke(self.name, member)

    def changes(self, after: int | None = None) -> SpaceChanges:
        return self.client.changes(self.name, after)

    def session(self, session_id: str) -> SessionMemory:
        """A working-memory session kept in the space, shared by its members."""
        return self.client.session(session_id, space=self.name)

    async def list_sessions(self, limit: int = 25, offset: int = 0) -> WorkingSessions | None:
        """A page of the working sessions kept in the space, by id."""
        return await self.client.list_sessions(space=self.name, limit=limit, offset=offset)

    async def save_knowledge(
        self, name: str, content: str, tags: Sequence[str] = ()
    ) -> ContextEntry | None:
        """Write (or replace) a knowledge file of the space."""
        return await self.client.save_knowledge(name, content, tags, space=self.name)

    async def search_context(self, query: str, limit: int = 5) -> list[ContextEntry]:
        """The space's best-matching knowledge files."""
        return await self.client.search_context(query, "knowledge", limit, space=self.name)
