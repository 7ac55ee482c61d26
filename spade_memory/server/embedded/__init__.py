"""SPADE's embedded XMPP server (pyjabber), made fit to carry memory: see ``server``."""

from .offline import OfflineLimits
from .server import EmbeddedXMPPServer

__all__ = ["EmbeddedXMPPServer", "OfflineLimits"]
