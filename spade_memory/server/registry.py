"""The memory services, by name: the one list that ``spade-memory run``, the deployment
files, the schema command and the client read. A new service is one folder plus one
line here."""

from __future__ import annotations

from spade_memory.base_memory.plugin import PLUGIN as BASE_MEMORY
from spade_memory.beads_sync.plugin import PLUGIN as BEADS_SYNC
from spade_memory.interaction.plugin import PLUGIN as INTERACTION_MEMORY
from spade_memory.serving.plugin import ServicePlugin

SERVICES: tuple[ServicePlugin, ...] = (BASE_MEMORY, INTERACTION_MEMORY, BEADS_SYNC)
"""Every memory service, in start order."""

NAMES: tuple[str, ...] = tuple(service.name for service in SERVICES)


def service(name: str) -> ServicePlugin:
    """The registered service called ``name``.

    Raises ``KeyError`` with the known names when there is none.
    """
    for registered in SERVICES:
        if registered.name == name:
            return registered
    raise KeyError(f"unknown memory service {name!r}; known: {', '.join(NAMES)}")
