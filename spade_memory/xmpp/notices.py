"""The memory agents' notices: their ontologies, and the base memory agent's "memory
changed" notice to its mirror.

That notice carries nothing: it tells the mirror (the beads sync agent) that writes
were committed, and the mirror fetches them with ``changes_since``. A space's
subscribers get each change itself (``EVENTS_ONTOLOGY``), and each change of one of its
working sessions (``SESSION_EVENTS_ONTOLOGY``).
"""

from __future__ import annotations

from spade.message import Message
from spade.template import Template

from spade_memory.xmpp import wire

EVENTS_ONTOLOGY = "spade-memory-events"
"""Ontology of the base memory agent's change notices."""
SESSION_EVENTS_ONTOLOGY = "spade-memory-session-events"
"""Ontology of the interaction memory agent's notices of changed working sessions."""
PROPOSALS_ONTOLOGY = "spade-memory-proposals"
"""Ontology of the base memory agent's chat messages about proposals in governed spaces
(to admins, and to the writer once decided): other clients show a plain chat message."""


def change_notice(to: str) -> Message:
    """Tells the mirror at ``to`` that changes were committed."""
    return wire.notice(to, EVENTS_ONTOLOGY)


def change_notice_template() -> Template:
    """Matches change notices (what the mirror listens for)."""
    return wire.notice_template(EVENTS_ONTOLOGY)
