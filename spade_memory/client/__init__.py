"""The client: what an agent that only *uses* memory imports.

``MemoryClient`` (``memory_client``) composes typed calls (``memories``,
``conversations`` with ``session``, ``spaces`` with ``changes``, ``beads``) around
one transport (``transport``: XMPP requests with retries and ids; ``failover``
spreads them over a pool of agents); ``MemoryMixin`` (``mixin``) gives a SPADE agent
``self.memory``; ``login`` connects a second resource. It imports ``protocol`` and
``xmpp`` only: no store, database driver, model or service.
"""

from spade_memory.client.memory_client import MemoryClient
from spade_memory.client.mixin import MemoryMixin

__all__ = ["MemoryClient", "MemoryMixin"]
