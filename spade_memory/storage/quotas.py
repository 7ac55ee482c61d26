"""The byte budget every memory service keeps for each owner and each shared space.

Each service is an agent with its own store, so each counts what an owner holds in
it — long-term memories with their versions, notes, working memory and context
files, beads memories — against the same ``Limits.max_bytes_per_owner`` (a shared
space's against its own quota or ``max_bytes_per_space``), and refuses a write that
would cross it the same way, with the figures.
"""

from __future__ import annotations

from spade_memory.protocol.errors import ResourceConstraint
from spade_memory.protocol.limits import Limits
from spade_memory.protocol.ops import Place


def byte_budget(place: Place, limits: Limits) -> tuple[str, int]:
    """Who ``place``'s bytes count against, as a refusal names it, and how many it may
    hold: its owner's budget for a personal space, the space's own otherwise."""
    if place.personal:
        return place.key, limits.max_bytes_per_owner
    return f"space {place.name!r}", place.max_bytes or limits.max_bytes_per_space


def check_bytes(who: str, held: int, most: int, needed: int) -> None:
    """Raise ``ResourceConstraint`` with the figures when ``needed`` more bytes would take
    ``who``, holding ``held`` of ``most``, over its quota (a write that takes bytes away,
    ``needed`` <= 0, always passes)."""
    if needed > 0 and held + needed > most:
        raise ResourceConstraint(
            f"quota: {who} holds {held:,} of {most:,} bytes; this needs {needed:,} more"
        )
