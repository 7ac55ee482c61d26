"""SPADE's embedded XMPP server (pyjabber), made fit to carry memory: see ``server``."""

from spade_memory.server.embedded.offline import OfflineLimits
from spade_memory.server.embedded.server import EmbeddedXMPPServer

__all__ = ["EmbeddedXMPPServer", "OfflineLimits"]
