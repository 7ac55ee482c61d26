"""The client: what an agent that only *uses* memory imports.

``MemoryClient`` (``memory_client``) composes typed calls (``memories``,
``conversations`` with ``session``, ``spaces`` with ``changes``, ``beads``; their base
in ``calls``) around one transport (``transport``, the seam): ``XmppTransport``
(``xmpp_transport``: requests with ids and retries; ``failover`` spreads them over a
pool of agents) or ``InProcessTransport`` (``in_process``: services of this process).
``MemoryMixin`` (``mixin``) gives a SPADE agent ``self.memory``; ``login`` connects a
second resource. It imports ``protocol`` and ``xmpp`` only: no store, database driver,
model or service.
"""

from spade_memory.client.in_process import InProcessTransport
from spade_memory.client.memory_client import MemoryClient, SpaceMemory
from spade_memory.client.mixin import MemoryMixin
from spade_memory.client.transport import Transport
from spade_memory.client.xmpp_transport import XmppTransport

__all__ = [
    "InProcessTransport",
    "MemoryClient",
    "MemoryMixin",
    "SpaceMemory",
    "Transport",
    "XmppTransport",
]
