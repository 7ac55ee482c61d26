"""MemoryClient: typed async calls to the memory agents, over XMPP.

It is the transport (``transport.Transport``: request ids, retries, degraded
mode, batches) with each service's calls: the base memory agent's and the
interaction memory agent's as methods (they mirror spade_llm's memory
classes), the spaces' (``spaces.calls``), the beads sync agent's as
``client.beads``. Which agent serves a
service comes from the registry: ``node@<the agent's domain>`` unless a JID
is given. A service served by several agents on one shared store is given as a list
of their JIDs, or by the deployment in ``SPADE_MEMORY_BASE_POOL`` and
``SPADE_MEMORY_INTERACTION_POOL`` (see ``failover``).
"""

from __future__ import annotations

from collections.abc import Sequence

from spade.agent import Agent

from . import base_memory, beads_sync, interaction
from .base_memory.calls import BaseMemoryCalls
from .beads_sync.calls import BeadsClient
from .failover import BASE_POOL_ENV, INTERACTION_POOL_ENV, pool_from_environment
from .interaction.calls import InteractionCalls
from .limits import Limits
from .registry import default_jids
from .spaces.calls import SpaceCalls


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
    (more wait here instead of being refused by the memory agent).
    """

    def __init__(
        self,
        agent: Agent,
        base_memory_jid: str | Sequence[str] | None = None,
        *,
        interaction_memory_jid: str | Sequence[str] | None = None,
        beads_sync_jid: str | None = None,
        timeout: float = 5.0,
        attempts: int = 2,
        max_in_flight: int = Limits.max_in_flight,
        degraded: bool = False,
    ) -> None:
        if base_memory_jid is None:
            base_memory_jid = pool_from_environment(BASE_POOL_ENV)
        if interaction_memory_jid is None:
            interaction_memory_jid = pool_from_environment(INTERACTION_POOL_ENV)
        given: dict[str, str | Sequence[str] | None] = {
            base_memory.NAME: base_memory_jid,
            interaction.NAME: interaction_memory_jid,
            beads_sync.NAME: beads_sync_jid,
        }
        jids: dict[str, str | Sequence[str]] = dict(default_jids(agent.jid.domain))
        jids.update({name: jid for name, jid in given.items() if jid is not None})
        super().__init__(
            agent,
            jids,
            timeout=timeout,
            attempts=attempts,
            max_in_flight=max_in_flight,
            degraded=degraded,
        )
        self.beads = BeadsClient(self, self.jids[beads_sync.NAME])
        """The beads sync agent's calls (memories kept as beads issues)."""
