"""The client: what an agent that only *uses* memory imports.

``MemoryClient`` (``memory_client``) composes typed calls (``memories``,
``conversations`` with ``session``, ``spaces`` with ``changes``, ``beads``; their base
in ``calls``) around one transport (``transport``, the seam): ``XmppTransport``
(``xmpp_transport``: through a SPADE agent; ``failover`` spreads requests over a pool
of agents), ``StanzaTransport`` (``stanza_transport``: through a bare slixmpp login,
``stanza_login``, for a command that leaves after a request or two) or
``InProcessTransport`` (``in_process``: services of this process); what the two XMPP
ones share is ``request_policy``. ``MemoryMixin`` (``mixin``) gives a SPADE agent
``self.memory``; ``login`` connects a second resource. It imports ``protocol`` and
``xmpp`` only: no store, database driver, model or service; and each name is imported
on first use, so what needs no SPADE loads none.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spade_memory.client.in_process import InProcessTransport
    from spade_memory.client.memory_client import MemoryClient, SpaceMemory
    from spade_memory.client.mixin import MemoryMixin
    from spade_memory.client.stanza_transport import StanzaTransport
    from spade_memory.client.transport import Transport
    from spade_memory.client.xmpp_transport import XmppTransport

_MODULE_OF = {
    "InProcessTransport": "in_process",
    "MemoryClient": "memory_client",
    "SpaceMemory": "memory_client",
    "MemoryMixin": "mixin",
    "StanzaTransport": "stanza_transport",
    "Transport": "transport",
    "XmppTransport": "xmpp_transport",
}

__all__ = [
    "InProcessTransport",
    "MemoryClient",
    "MemoryMixin",
    "SpaceMemory",
    "StanzaTransport",
    "Transport",
    "XmppTransport",
]


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
