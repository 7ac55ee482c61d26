"""The memory services by name: what a client addresses, and the local part of each
service agent's default JID (``base-memory@example.org``)."""

from __future__ import annotations

BASE_MEMORY = "base-memory"
"""Long-term memories: facts, patterns, preferences, capabilities."""
INTERACTION_MEMORY = "interaction-memory"
"""Conversation notes, working memory and the context directory."""
BEADS_SYNC = "beads-sync"
"""Memories kept as issues of a beads tracker."""

SERVICE_NAMES: tuple[str, ...] = (BASE_MEMORY, INTERACTION_MEMORY, BEADS_SYNC)
"""Every memory service, in start order."""


def default_jids(domain: str) -> dict[str, str]:
    """Every service's default JID on ``domain``, by service name."""
    return {name: f"{name}@{domain}" for name in SERVICE_NAMES}
