"""Who a long-term store tells of what it committed, given when it is opened.

Each listener is called on the event loop right after the commit (or the purge) it
reports, so it must be short: the service's put its news on queues that its agent's
behaviours drain.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from spade_memory.base_memory.store.journal import SpaceEvent
from spade_memory.base_memory.work_items import WorkLink


@dataclass(frozen=True)
class Listeners:
    """The store's listeners; each may be None (nobody is told)."""

    events: Callable[[list[SpaceEvent]], None] | None = None
    """Told of every committed write in a shared space (its subscribers' notices)."""
    links: Callable[[list[WorkLink]], None] | None = None
    """Told of the work-item links of every committed write (None: the store's
    ``WorkItems.notify``)."""
    purged: Callable[[], None] | None = None
    """Told when expired memories were purged (their deletions are in the feed)."""
